package dev.tandem.common;

/**
 * What a frontend needs to serve a worker's model without its files: the tokenizer and its config
 * (chat template, special tokens), the model directory's chat_template.jinja (empty when it has
 * none), the context window, end-of-sequence tokens, and what the model's generation_config.json
 * sets (sampling defaults for requests that set none).
 */
public record ModelCard(
    String modelName, byte[] tokenizerJson, byte[] tokenizerConfigJson, int maxContextLength, int[] eosTokenIds,
    GenerationConfig generation, String chatTemplateJinja) {}
