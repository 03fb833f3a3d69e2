package dev.tandem.engine.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A model served as a cross-encoder: its relevance logit for a prompt (a query and a document), a
 * score being the logit's sigmoid. Two forms, as vLLM serves them:
 *
 * <ul>
 *   <li>a causal language model read through two tokens' logits, as vLLM's {@code --hf-overrides}
 *       turns Qwen3-Reranker (and mxbai-rerank-v2 and the like) into one: {@code {"architectures":
 *       ["Qwen3ForSequenceClassification"], "classifier_from_token": ["no", "yes"],
 *       "is_original_qwen3_reranker": true}} (or {@code "method": "from_2_way_softmax"}): the logit
 *       is the second token's logit less the first's at the prompt's last position — the classifier
 *       vLLM builds from the two LM-head rows ({@link #parse}); only that two-way form is served;
 *   <li>a sequence classifier's checkpoint ({@code *ForSequenceClassification} with its {@code
 *       score.weight}: converted rerankers, reward models, classifiers): its label logits are the
 *       head times the final norm's output at the last token ({@link #ofScoreHead}); one label is a
 *       relevance logit, more are classes for vLLM's {@code /classify}.
 * </ul>
 *
 * @param falseToken the id of the first token ("no"); -1 for a score head
 * @param trueToken the id of the second ("yes"); -1 for a score head
 * @param scoreHead the score head, a row of hidden-size weights per label; null for the two-token form
 */
public record ClassifierConfig(int falseToken, int trueToken, float[][] scoreHead) {
  private static final String FLAG = "--hf-overrides";

  /** The two-token form: the second token's logit less the first's. */
  public static ClassifierConfig ofTokens(int falseToken, int trueToken) {
    return new ClassifierConfig(falseToken, trueToken, null);
  }

  /** A sequence classifier's score head ({@code score.weight}, one row per label). */
  public static ClassifierConfig ofScoreHead(float[][] head) {
    return new ClassifierConfig(-1, -1, head);
  }

  /** Whether {@link #logits} reads the final norm's output (a score head) rather than the logits alone. */
  public boolean readsHiddenState() {
    return scoreHead != null;
  }

  /** How many values {@link #logits} gives: one relevance logit, or a score head's labels. */
  public int labels() {
    return scoreHead == null ? 1 : scoreHead.length;
  }

  /**
   * The prompt's label logits (one: its relevance logit), from its last position's logits {@code
   * logits} and final norm's output {@code hidden}.
   */
  public float[] logits(float[] logits, float[] hidden) {
    if (scoreHead == null) {
      return new float[] {logits[trueToken] - logits[falseToken]};
    }
    float[] out = new float[scoreHead.length];
    for (int label = 0; label < out.length; label++) {
      double dot = 0;
      for (int i = 0; i < hidden.length; i++) {
        dot += (double) scoreHead[label][i] * hidden[i];
      }
      out[label] = (float) dot;
    }
    return out;
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
      throw new IllegalArgumentException(FLAG + ": 'classifier_from_token' is missing: the overrides read a classifier from two tokens' "
          + "logits (a sequence classifier's checkpoint with its own score.weight needs no --hf-overrides)");
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
    return ofTokens(ids.get(0), ids.get(1));
  }

  private static JsonNode tokenizerJson(Path file) {
    JsonNode json = PoolingConfig.json(file);
    if (json == null) {
      throw new ModelFormatException(file + ": file does not exist (" + FLAG + "'s classifier_from_token names tokens in it)");
    }
    return json;
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
