package dev.tandem.common;

/**
 * What a frontend needs to serve a worker's model without its files: the tokenizer and its config
 * (chat template), the context window and end-of-sequence tokens.
 */
public record ModelCard(
    String modelName, byte[] tokenizerJson, byte[] tokenizerConfigJson, int maxContextLength, int[] eosTokenIds) {}
