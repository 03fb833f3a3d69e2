package dev.tandem.engine.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A causal language model served as a cross-encoder, as vLLM's {@code --hf-overrides} turns
 * Qwen3-Reranker (and mxbai-rerank-v2 and the like) into one: {@code {"architectures":
 * ["Qwen3ForSequenceClassification"], "classifier_from_token": ["no", "yes"],
 * "is_original_qwen3_reranker": true}} (or {@code "method": "from_2_way_softmax"}). The pair's
 * relevance logit is the model's logit for the second token less its logit for the first at the
 * prompt's last position — the classifier vLLM builds from the two LM-head rows — and a score is its
 * sigmoid (the two tokens' softmax). Only that two-way form is served.
 *
 * @param falseToken the id of the first token ("no")
 * @param trueToken the id of the second ("yes")
 */
public record ClassifierConfig(int falseToken, int trueToken) {
  private static final String FLAG = "--hf-overrides";

  /** The relevance logit of a prompt whose last position's logits are {@code logits}. */
  public float logit(float[] logits) {
    return logits[trueToken] - logits[falseToken];
  }

  /**
   * The classifier {@code overrides} (vLLM's {@code --hf-overrides} JSON) asks for, its tokens
   * found in {@code modelDir}'s {@code tokenizer.json}; null when {@code overrides} is null or blank.
   *
   * @throws IllegalArgumentException naming the flag and the field that cannot be served
   * @throws ModelFormatException naming tokenizer.json where it cannot be read
   */
  public static ClassifierConfig parse(String overrides, Path modelDir) {
    if (overrides == null || overrides.isBlank()) {
      return null;
    }
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(overrides);
    } catch (IOException e) {
      throw new IllegalArgumentException(FLAG + ": not valid JSON: " + e.getMessage());
    }
    if (root == null || !root.isObject()) {
      throw new IllegalArgumentException(FLAG + ": expected a JSON object, e.g. {\"architectures\": [\"Qwen3ForSequenceClassification\"], "
          + "\"classifier_from_token\": [\"no\", \"yes\"], \"is_original_qwen3_reranker\": true}");
    }
    var names = root.fieldNames();
    while (names.hasNext()) {
      String name = names.next();
      if (!List.of("architectures", "classifier_from_token", "is_original_qwen3_reranker", "method").contains(name)) {
        throw new IllegalArgumentException(FLAG + ": '" + name + "' is not supported by Tandem: it takes only the keys that serve a model "
            + "as a two-way cross-encoder (architectures, classifier_from_token, is_original_qwen3_reranker, method)");
      }
    }
    JsonNode archs = root.get("architectures");
    if (archs != null && !(archs.isArray() && archs.size() == 1 && archs.get(0).asText().endsWith("ForSequenceClassification"))) {
      throw new IllegalArgumentException(FLAG + ": 'architectures' must name one *ForSequenceClassification architecture, was " + archs);
    }
    JsonNode tokens = root.get("classifier_from_token");
    if (tokens == null) {
      throw new IllegalArgumentException(FLAG + ": 'classifier_from_token' is missing: Tandem reads a classifier from two tokens' "
          + "logits only (a checkpoint's own score head, score.weight, is not supported yet)");
    }
    boolean qwen3 = root.path("is_original_qwen3_reranker").asBoolean(false);
    String method = root.path("method").asText(qwen3 ? "from_2_way_softmax" : "");
    if (!method.equals("from_2_way_softmax")) {
      throw new IllegalArgumentException(FLAG + ": only the two-way form is supported (\"is_original_qwen3_reranker\": true or "
          + "\"method\": \"from_2_way_softmax\"); was " + (method.isEmpty() ? "neither" : "'method' " + method));
    }
    if (!tokens.isArray() || tokens.size() != 2 || !tokens.get(0).isTextual() || !tokens.get(1).isTextual()) {
      throw new IllegalArgumentException(FLAG + ": 'classifier_from_token' must be two token strings, the false one first "
          + "(e.g. [\"no\", \"yes\"]); was " + tokens);
    }
    Path file = modelDir.resolve("tokenizer.json");
    JsonNode tokenizer = tokenizerJson(file);
    List<Integer> ids = new ArrayList<>();
    for (JsonNode t : tokens) {
      int id = tokenId(tokenizer, t.asText());
      if (id < 0) {
        throw new IllegalArgumentException(FLAG + ": classifier_from_token '" + t.asText() + "' is not a token of " + file);
      }
      ids.add(id);
    }
    return new ClassifierConfig(ids.get(0), ids.get(1));
  }

  private static JsonNode tokenizerJson(Path file) {
    if (!Files.isRegularFile(file)) {
      throw new ModelFormatException(file + ": file does not exist (" + FLAG + "'s classifier_from_token names tokens in it)");
    }
    try {
      return new ObjectMapper().readTree(file.toFile());
    } catch (IOException e) {
      throw new ModelFormatException(file + ": not valid JSON: " + e.getMessage());
    }
  }

  /** The id of the token spelled {@code token} (as the vocabulary writes it, as Hugging Face's convert_tokens_to_ids reads it), or -1. */
  private static int tokenId(JsonNode tokenizer, String token) {
    for (JsonNode added : tokenizer.path("added_tokens")) {
      if (token.equals(added.path("content").asText(null))) {
        return added.path("id").asInt(-1);
      }
    }
    JsonNode vocab = tokenizer.path("model").path("vocab");
    if (vocab.isObject()) { // BPE and WordPiece: token -> id
      return vocab.path(token).asInt(-1);
    }
    for (int i = 0; i < vocab.size(); i++) { // Unigram: [piece, score] in id order
      if (token.equals(vocab.get(i).path(0).asText(null))) {
        return i;
      }
    }
    return -1;
  }
}
