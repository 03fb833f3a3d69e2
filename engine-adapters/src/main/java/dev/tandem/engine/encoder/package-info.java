/**
 * Bidirectional encoders (BERT, RoBERTa, XLM-RoBERTa) served for their pooled embeddings: the
 * config, the forward pass and an engine without a KV cache.
 */
package dev.tandem.engine.encoder;
