/**
 * The built-in engine: {@link dev.tandem.engine.builtin.BuiltinEngine} runs a Hugging Face decoder
 * transformer ({@link dev.tandem.engine.builtin.Transformer}) on a compute backend, with its KV in
 * a {@link dev.tandem.engine.builtin.PagedKvCache} whose blocks the shared {@link
 * dev.tandem.engine.kv.BlockPool} hands out, the shared scheduler's continuous batching, and
 * {@link dev.tandem.engine.builtin.Sampler} for every sampling parameter the frontend accepts.
 */
package dev.tandem.engine.builtin;
