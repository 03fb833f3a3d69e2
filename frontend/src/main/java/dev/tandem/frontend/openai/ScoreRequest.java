package dev.tandem.frontend.openai;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.http.ApiException;
import dev.tandem.frontend.text.ChatTemplate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Reads vLLM's score request ({@code POST /score}, {@code /v1/score}) and the rerank request vLLM,
 * Jina and Cohere share ({@code POST /rerank}, {@code /v1/rerank}, {@code /v2/rerank}) into a
 * {@link ScoreSpec}. For an embedding model the texts become one embeddings request, checked and
 * tokenized by {@link EmbeddingsRequest} (the model, its {@code embeddings} feature, the window,
 * {@code truncate_prompt_tokens}, {@code priority}, {@code request_id}, {@code tandem.worker_id}),
 * its errors naming this request's fields; for a cross-encoder (the {@code cross_encoder}
 * feature) each query and document are tokenized as a pair ({@link #pairs}). Stateless.
 */
final class ScoreRequest {
  /** What an embeddings request takes from a score or rerank body as it is. */
  private static final List<String> PASSED_ON = List.of("model", RequestParser.TRUNCATE_PROMPT_TOKENS, "priority", "request_id", "tandem");

  /** The feature of a model served as a cross-encoder (vLLM's {@code classifier_from_token}). */
  static final String CROSS_ENCODER = "cross_encoder";

  /** vLLM's switches for a classifier's activation: nothing to switch when scores are cosine similarities. */
  private static final List<String> ACTIVATION = List.of("use_activation", "activation", "softmax");

  private ScoreRequest() {}

  /**
   * vLLM's score request: {@code text_1} and {@code text_2}, each a string or a non-empty array of
   * strings, paired 1:1, 1:N (the one {@code text_1} against every {@code text_2}) or N:N (by index).
   */
  static ScoreSpec parseScore(RequestParser parser, ServedModel model, ObjectNode body) {
    List<String> first = texts(body, "text_1");
    List<String> second = texts(body, "text_2");
    if (first.size() > 1 && first.size() != second.size()) {
      throw ApiException.invalid("text_2", "Input lengths must be either 1:1, 1:N or N:N: 'text_1' has " + first.size()
          + " texts and 'text_2' " + second.size() + ".");
    }
    Names names = new Names(body.get("text_1").isTextual() ? "text_1" : null, "text_1", body.get("text_2").isTextual() ? "text_2" : null,
        "text_2");
    if (model.supports(CROSS_ENCODER)) {
      return new ScoreSpec(pairs(parser, model, body, first, second, names), 0, false, second, 0, false, activation(body));
    }
    refuseCrossEncoderFields(parser, model, body);
    return new ScoreSpec(embeddings(parser, model, body, first, second, names), first.size(), false, second, 0, false, false);
  }

  /**
   * The rerank request: {@code query} (a string), {@code documents} (strings, or objects whose
   * {@code text} is one, as Jina and Cohere take them), {@code top_n} (0 or absent: all) and {@code
   * return_documents} (default true).
   */
  static ScoreSpec parseRerank(RequestParser parser, ServedModel model, ObjectNode body) {
    JsonNode query = body.get("query");
    if (query == null || query.isNull()) {
      throw ApiException.invalid("query", "Missing required parameter: 'query'.", "missing_required_parameter");
    }
    if (!query.isTextual()) {
      throw RequestParser.typeError("query", "a string", query);
    }
    List<String> documents = documents(body);
    int topN = RequestParser.integer(body, "top_n", 0, 0, Integer.MAX_VALUE);
    boolean returnDocuments = RequestParser.bool(body, "return_documents", true);
    Names names = new Names("query", "query", null, "documents");
    if (model.supports(CROSS_ENCODER)) {
      return new ScoreSpec(pairs(parser, model, body, List.of(query.asText()), documents, names), 0, true, documents, topN,
          returnDocuments, activation(body));
    }
    refuseCrossEncoderFields(parser, model, body);
    EmbeddingSpec inputs = embeddings(parser, model, body, List.of(query.asText()), documents, names);
    return new ScoreSpec(inputs, 1, true, documents, topN, returnDocuments, false);
  }

  /** A sequence classifier of several classes (not a cross-encoder): a score needs one relevance label. */
  private static void refuseSeveralClasses(RequestParser parser, ServedModel model, ObjectNode body) {
    if (model.supports(EmbeddingsRequest.CLASSIFY)) {
      parser.checkModel(body); // another model's name is a 404 first
      throw new ApiException(400, "This model is a sequence classifier of several classes: a score needs one relevance label. It "
          + "serves /classify.", "invalid_request_error", "model", "unsupported_model");
    }
  }

  /** vLLM's {@code use_activation} (or its older names {@code activation}, {@code softmax}): the sigmoid of a cross-encoder's logit, by default. */
  static boolean activation(ObjectNode body) {
    for (String field : ACTIVATION) {
      if (NotHonoured.isSet(body.get(field))) {
        return RequestParser.bool(body, field, true);
      }
    }
    return true;
  }

  /**
   * A cross-encoder's inputs: each document with its query (the one, or the one at its index) as
   * one text, as vLLM writes a language model's pair: rendered by the score template where the
   * deployment gave one ({@code --chat-template}: the messages {@code query} and {@code document},
   * the request's {@code chat_template_kwargs} beside them), else the query's text then the
   * document's; tokenized with the tokenizer's special tokens, kept to {@code
   * truncate_prompt_tokens}' last tokens (-1: the window less the drawn token) and refused, naming
   * the document, when longer than that.
   */
  private static EmbeddingSpec pairs(RequestParser parser, ServedModel model, ObjectNode body, List<String> queries,
      List<String> documents, Names names) {
    parser.checkModel(body);
    NotHonoured.refuse(body);
    if (documents.size() > EmbeddingsRequest.MAX_INPUTS) {
      throw ApiException.invalid(names.documents(), "At most " + EmbeddingsRequest.MAX_INPUTS + " pairs may be scored in one request; "
          + "this one has " + documents.size() + ".");
    }
    ChatTemplate template = model.chatTemplate() != null && model.chatTemplate().given() ? model.chatTemplate() : null;
    Map<String, Object> kwargs = RequestParser.templateKwargs(body);
    if (template == null && !kwargs.isEmpty()) {
      throw RequestParser.unsupported("chat_template_kwargs", "needs a score template: serve the model with --chat-template FILE "
          + "(e.g. deploy/score-templates/qwen3-reranker.jinja)");
    }
    int limit = EmbeddingsRequest.limit(model);
    int keep = body.path(RequestParser.TRUNCATE_PROMPT_TOKENS).asInt(0) == -1 ? limit : parser.truncation(body);
    List<int[]> pairs = new ArrayList<>();
    for (int j = 0; j < documents.size(); j++) {
      String query = queries.get(queries.size() == 1 ? 0 : j);
      String text;
      try {
        text = template == null ? query + documents.get(j) : template.render(List.of(Map.of("role", "query", "content", query),
            Map.of("role", "document", "content", documents.get(j))), null, false, kwargs);
      } catch (ChatTemplate.TemplateFailure e) {
        throw ApiException.invalid(names.of(queries.size() + j, queries.size()), "The score template rejected the pair: " + e.getMessage());
      }
      int[] ids = RequestParser.truncated(model.tokenizer().encode(text, true), keep);
      if (ids.length == 0) {
        throw ApiException.invalid(names.of(queries.size() + j, queries.size()), "The pair of texts is empty.");
      }
      if (ids.length > limit) {
        throw ApiException.invalid(names.of(queries.size() + j, queries.size()), "This model's maximum context length is "
            + model.maxContextLength() + " tokens, of which " + limit + " can be scored. However, this pair of texts is " + ids.length
            + " tokens. Please reduce the length of the texts.", "context_length_exceeded");
      }
      pairs.add(ids);
    }
    String requested = body.get("model").asText(); // checked: the served model or one of its LoRA adapters
    return new EmbeddingSpec(requested, requested.equals(model.name()) ? null : requested, pairs, false, 0, false, parser.priority(body),
        RequestParser.requestId(body), RequestParser.pinnedWorker(body));
  }

  /** What only a cross-encoder reads: refused when an embedding model scores (a classifier of several classes scores nothing). */
  private static void refuseCrossEncoderFields(RequestParser parser, ServedModel model, ObjectNode body) {
    refuseSeveralClasses(parser, model, body);
    for (String field : ACTIVATION) {
      if (NotHonoured.isSet(body.get(field))) {
        throw RequestParser.unsupported(field, "applies to a classifier's scores; this deployment scores by the cosine similarity "
            + "of embeddings, which has no activation");
      }
    }
    if (NotHonoured.isSet(body.get("chat_template_kwargs"))) {
      throw RequestParser.unsupported("chat_template_kwargs", "is read by a cross-encoder's score template; this deployment scores by "
          + "the cosine similarity of embeddings");
    }
  }

  /** A field that is a string or a non-empty array of strings. */
  private static List<String> texts(ObjectNode body, String field) {
    JsonNode v = body.get(field);
    if (v == null || v.isNull()) {
      throw ApiException.invalid(field, "Missing required parameter: '" + field + "'.", "missing_required_parameter");
    }
    if (v.isTextual()) {
      return List.of(v.asText());
    }
    if (!v.isArray() || v.isEmpty()) {
      throw RequestParser.typeError(field, "a string or a non-empty array of strings", v);
    }
    List<String> out = new ArrayList<>();
    for (int i = 0; i < v.size(); i++) {
      if (!v.get(i).isTextual()) {
        throw RequestParser.typeError(field + "[" + i + "]", "a string", v.get(i));
      }
      out.add(v.get(i).asText());
    }
    return out;
  }

  /** Rerank's {@code documents}: a non-empty array of strings or of {@code {"text": ...}} objects. */
  private static List<String> documents(ObjectNode body) {
    JsonNode v = body.get("documents");
    if (v == null || v.isNull()) {
      throw ApiException.invalid("documents", "Missing required parameter: 'documents'.", "missing_required_parameter");
    }
    if (!v.isArray() || v.isEmpty()) {
      throw RequestParser.typeError("documents", "a non-empty array of strings", v);
    }
    List<String> out = new ArrayList<>();
    for (int i = 0; i < v.size(); i++) {
      JsonNode d = v.get(i);
      JsonNode text = d.isObject() ? d.get("text") : d;
      if (text == null || !text.isTextual()) {
        throw RequestParser.typeError(d.isObject() ? "documents[" + i + "].text" : "documents[" + i + "]", "a string",
            text == null ? com.fasterxml.jackson.databind.node.NullNode.getInstance() : text);
      }
      out.add(text.asText());
    }
    return out;
  }

  /**
   * What this request calls the embeddings' inputs: the queries' field ({@code queryAlone} when it
   * was a single string, else {@code queries}, indexed) and the documents' likewise.
   */
  private record Names(String queryAlone, String queries, String documentAlone, String documents) {
    String of(int input, int queryCount) {
      if (input < queryCount) {
        return queryAlone != null ? queryAlone : queries + "[" + input + "]";
      }
      return documentAlone != null ? documentAlone : documents + "[" + (input - queryCount) + "]";
    }
  }

  /** The queries, then the documents, as one embeddings request: whole vectors at unit length. */
  private static EmbeddingSpec embeddings(RequestParser parser, ServedModel model, ObjectNode body, List<String> queries,
      List<String> documents, Names names) {
    ObjectNode request = ResponseJson.JSON.createObjectNode();
    for (String field : PASSED_ON) {
      if (body.has(field)) {
        request.set(field, body.get(field));
      }
    }
    ArrayNode input = request.putArray("input");
    queries.forEach(input::add);
    documents.forEach(input::add);
    NotHonoured.refuse(body);
    try {
      return EmbeddingsRequest.parse(parser, model, request);
    } catch (ApiException e) {
      throw renamed(e, names, queries.size());
    }
  }

  /** An error about the embeddings' {@code input[k]} (or all of them), about the field the client sent instead. */
  private static ApiException renamed(ApiException e, Names names, int queryCount) {
    String param = e.param();
    if (param == null || !param.startsWith("input")) {
      return e;
    }
    String renamed = param.equals("input") ? names.documents() : names.of(Integer.parseInt(param.substring(6, param.indexOf(']'))), queryCount);
    return new ApiException(e.status(), e.getMessage().replace("'input'", "'" + renamed + "'"), e.type(), renamed, e.code());
  }
}
