/**
 * Text in and out of the model: the Hugging Face tokenizer, chat templates rendered with Jinjava,
 * incremental detokenization and stop strings. Plain Java; no Netty types.
 */
package dev.tandem.frontend.text;
