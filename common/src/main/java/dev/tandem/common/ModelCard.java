package dev.tandem.common;

/**
 * What a frontend needs to serve a worker's model without its files: the tokenizer and its config
 * (chat template, special tokens), the model directory's chat_template.jinja (empty when it has
 * none), the context window, end-of-sequence tokens, and what the model's generation_config.json
 * sets (sampling defaults for requests that set none), and a sequence classifier's class names by id
 * ({@code labels}; empty for other models).
 */
public record ModelCard(
    String modelName, byte[] tokenizerJson, byte[] tokenizerConfigJson, int maxContextLength, int[] eosTokenIds,
    GenerationConfig generation, String chatTemplateJinja, java.util.List<String> labels) {
  public ModelCard {
    labels = labels == null ? java.util.List.of() : java.util.List.copyOf(labels);
  }
}
