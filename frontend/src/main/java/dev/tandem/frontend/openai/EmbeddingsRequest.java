package dev.tandem.frontend.openai;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.http.ApiException;
import java.util.List;

/**
 * Reads an embeddings request ({@code POST /v1/embeddings}) into an {@link EmbeddingSpec}, with
 * {@link RequestParser}'s checks of the model and of each field, its tokenizing of completions'
 * prompt shapes and its rendering of a chat. Stateless.
 */
final class EmbeddingsRequest {
  /** The feature of a bidirectional encoder's engine: it draws no token after an input. */
  static final String ENCODER = "encoder";

  /**
   * Most tokens an input may have: the context window less the token a decoder's worker draws
   * after it (and never returns); all of it for an encoder, which draws none.
   */
  static int limit(ServedModel model) {
    return model.maxContextLength() - (model.supports(ENCODER) ? 0 : 1);
  }

  /** OpenAI's most inputs an embeddings request may carry. */
  static final int MAX_INPUTS = 2048;

  /** vLLM's {@code field}, refused unless it is one of {@code honoured} (what Tandem writes: float32, little-endian). */
  private static void notHonouredUnless(ObjectNode body, String field, List<String> honoured) {
    JsonNode v = body.get(field);
    if (v != null && !v.isNull() && !(v.isTextual() && honoured.contains(v.asText()))) {
      throw RequestParser.unsupported(field, "other than " + String.join(" or ", honoured) + " is not supported by Tandem yet");
    }
  }

  /** Chat-embedding parameters passed on to the chat template's rendering, as a chat request reads them. */
  private static final List<String> CHAT_FIELDS = List.of("model", "messages", "chat_template_kwargs",
      "continue_final_message", "add_special_tokens", "documents", RequestParser.TRUNCATE_PROMPT_TOKENS);

  private EmbeddingsRequest() {}

  /**
   * An embeddings request ({@code POST /v1/embeddings}): OpenAI's {@code input} (a string, an array
   * of strings, an array of token ids, or an array of those) or vLLM's chat {@code messages} (one
   * input, {@link #chatInput}), {@code model}, {@code encoding_format},
   * {@code dimensions} and {@code user}; vLLM's {@code truncate_prompt_tokens}, {@code
   * add_special_tokens} (default true), {@code normalize}, {@code priority} and {@code request_id};
   * Tandem's {@code tandem.worker_id}.
   *
   * @throws ApiException naming the field, for a model that serves no embeddings too
   */
  static EmbeddingSpec parse(RequestParser parser, ServedModel model, ObjectNode body) {
    parser.checkModel(body);
    if (model.supports(ScoreRequest.CROSS_ENCODER)) {
      throw new ApiException(400, "This model is served as a cross-encoder (a reranker: --hf-overrides' classifier_from_token, or a "
          + "sequence classifier's checkpoint): it scores pairs of texts through /score and /rerank and serves no embeddings.",
          "invalid_request_error", "input", "unsupported_model");
    }
    if (model.supports(CLASSIFY)) {
      throw new ApiException(400, "This model is a sequence classifier (its checkpoint's score.weight): it serves /classify, not "
          + "embeddings.", "invalid_request_error", "input", "unsupported_model");
    }
    if (!model.supports("embeddings")) {
      throw new ApiException(400, "Embeddings are not served by this deployment's engine (" + model.engine() + "): the built-in "
          + "engine computes them, for models that pool the last token.", "invalid_request_error", "input",
          "unsupported_model");
    }
    return inputs(parser, model, body);
  }

  /** The feature of a sequence classifier's checkpoint (vLLM's {@code /classify}). */
  static final String CLASSIFY = "classify";

  /** Embeddings' parameters, which a classification request has no use for. */
  private static final List<String> EMBEDDING_ONLY = List.of("encoding_format", "dimensions", "normalize", "embed_dtype", "endianness");

  /**
   * vLLM's classification request ({@code POST /classify}): the inputs an embeddings request takes
   * ({@code input} or chat {@code messages}, {@code truncate_prompt_tokens}, {@code
   * add_special_tokens}, {@code priority}, {@code request_id}), each run for its label logits, and
   * {@code use_activation} (default true: the logits' softmax, a sigmoid for one label).
   *
   * @throws ApiException naming the field, for a model that is not a sequence classifier too
   */
  static ClassifySpec parseClassify(RequestParser parser, ServedModel model, ObjectNode body) {
    parser.checkModel(body);
    if (!model.supports(CLASSIFY)) {
      throw new ApiException(400, "/classify needs a sequence classifier (a *ForSequenceClassification checkpoint with its "
          + "score.weight); this model is not one.", "invalid_request_error", "model", "unsupported_model");
    }
    for (String field : EMBEDDING_ONLY) {
      if (NotHonoured.isSet(body.get(field))) {
        throw RequestParser.unsupported(field, "is an embeddings parameter; /classify answers class probabilities");
      }
    }
    return new ClassifySpec(inputs(parser, model, body.deepCopy().put("normalize", false)), ScoreRequest.activation(body));
  }

  /** The checks and tokenizing an embeddings request and a classification request share, after the model's. */
  private static EmbeddingSpec inputs(RequestParser parser, ServedModel model, ObjectNode body) {
    NotHonoured.refuse(body); // a request's own chat template and the like: never silently ignored
    notHonouredUnless(body, "embed_dtype", List.of("float32"));
    notHonouredUnless(body, "endianness", List.of("native", "little"));
    JsonNode messages = body.get("messages");
    boolean chat = messages != null && !messages.isNull();
    if (chat && body.has("input") && !body.get("input").isNull()) {
      throw ApiException.invalid("messages", "Send either 'input' or 'messages' (vLLM's chat embeddings), not both.");
    }
    for (String field : List.of("user", "encoding_format")) {
      JsonNode v = body.get(field);
      if (v != null && !v.isNull() && !v.isTextual()) {
        throw RequestParser.typeError(field, "a string", v);
      }
    }
    String format = body.path("encoding_format").asText("float");
    if (!format.equals("float") && !format.equals("base64")) {
      throw ApiException.invalid("encoding_format", "Invalid 'encoding_format': '" + format + "'; expected 'float' or 'base64'.",
          "invalid_value");
    }
    int dimensions = 0;
    if (body.has("dimensions") && !body.get("dimensions").isNull()) {
      dimensions = RequestParser.integer(body, "dimensions", 0, 1, Integer.MAX_VALUE);
      if (!model.supports("matryoshka")) {
        throw RequestParser.unsupported("dimensions", "needs a model trained for truncated (Matryoshka) embeddings: its config.json sets "
            + "'is_matryoshka' or 'matryoshka_dimensions'");
      }
    }
    JsonNode input = body.get("input");
    boolean oneOfTokenIds = input != null && input.isArray() && !input.isEmpty() && input.get(0).isIntegralNumber();
    if (input != null && input.isArray() && !oneOfTokenIds && input.size() > MAX_INPUTS) {
      throw ApiException.invalid("input", "At most " + MAX_INPUTS + " inputs may be embedded in one request; this one has "
          + input.size() + ".");
    }
    int limit = limit(model);
    List<int[]> inputs = chat ? List.of(chatInput(parser, model, body, limit)) : parser.prompts(body, "input");
    if (!chat && body.path(RequestParser.TRUNCATE_PROMPT_TOKENS).asInt(0) == -1) { // the window: as much as can be embedded
      inputs.replaceAll(ids -> RequestParser.truncated(ids, limit));
    }
    for (int i = 0; i < inputs.size(); i++) {
      if (inputs.get(i).length > limit) {
        throw ApiException.invalid(inputs.size() == 1 ? "input" : "input[" + i + "]", "This model's maximum context length is "
            + model.maxContextLength() + " tokens, of which " + limit + " can be embedded. However, you requested "
            + inputs.get(i).length + " tokens in the input for embedding generation. Please reduce the length of the input.",
            "context_length_exceeded");
      }
    }
    String requested = body.get("model").asText(); // checked: the served model or one of its LoRA adapters
    return new EmbeddingSpec(requested, requested.equals(model.name()) ? null : requested, inputs, format.equals("base64"),
        dimensions, RequestParser.bool(body, "normalize", true), parser.priority(body), RequestParser.requestId(body),
        RequestParser.pinnedWorker(body));
  }

  /**
   * vLLM's chat embeddings: {@code messages} rendered by the chat template as a chat request's are
   * (its {@code chat_template_kwargs}, {@code continue_final_message}, {@code documents}), but
   * without a generation prompt unless {@code add_generation_prompt} is true (vLLM's default for
   * embeddings), and tokenized without added special tokens unless {@code add_special_tokens}.
   */
  private static int[] chatInput(RequestParser parser, ServedModel model, ObjectNode body, int limit) {
    ObjectNode chat = ResponseJson.JSON.createObjectNode();
    for (String field : CHAT_FIELDS) {
      if (body.has(field)) {
        chat.set(field, body.get(field));
      }
    }
    if (body.path(RequestParser.TRUNCATE_PROMPT_TOKENS).asInt(0) == -1) {
      chat.put(RequestParser.TRUNCATE_PROMPT_TOKENS, limit); // the window less the drawn token
    }
    chat.put("add_generation_prompt", RequestParser.bool(body, "add_generation_prompt", false));
    chat.put("max_tokens", 1);
    try {
      return parser.parseConversation(chat).prompts().getFirst();
    } catch (ApiException e) {
      if ("context_length_exceeded".equals(e.code())) {
        throw ApiException.invalid("messages", "This model's maximum context length is " + model.maxContextLength()
            + " tokens, of which " + limit + " can be embedded; the conversation is longer. Please reduce the length of the messages.",
            "context_length_exceeded");
      }
      throw e;
    }
  }
}
