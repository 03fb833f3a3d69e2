package dev.tandem.frontend.openai;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.frontend.http.ApiException;
import dev.tandem.frontend.parse.ToolCall;
import java.util.List;

/**
 * The JSON shapes of OpenAI's chat and text completion responses, streamed chunks and errors.
 * Stateless.
 */
public final class ResponseJson {
  public static final ObjectMapper JSON = new ObjectMapper();

  private ResponseJson() {}

  /**
   * One finished choice: its content, and for chat the reasoning split from it and the tool calls
   * taken out of it (empty when not parsed).
   */
  public record ChoiceResult(
      int index, String text, String reasoning, List<ToolCall> toolCalls, String finishReason, ObjectNode logprobs) {
    public ChoiceResult(int index, String text, String finishReason, ObjectNode logprobs) {
      this(index, text, "", List.of(), finishReason, logprobs);
    }
  }

  /** Token counts for {@code usage}. */
  public record Usage(long promptTokens, long completionTokens, long cachedTokens) {}

  public static byte[] bytes(ObjectNode node) {
    try {
      return JSON.writeValueAsBytes(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  public static ObjectNode error(ApiException e) {
    ObjectNode root = JSON.createObjectNode();
    ObjectNode err = root.putObject("error");
    err.put("message", e.getMessage());
    err.put("type", e.type());
    err.put("param", e.param());
    err.put("code", e.code());
    return root;
  }

  private static ObjectNode envelope(GenerationSpec.Kind kind, boolean chunk, String id, long created, String model) {
    ObjectNode n = JSON.createObjectNode();
    n.put("id", id);
    n.put(
        "object",
        kind == GenerationSpec.Kind.CHAT ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion");
    n.put("created", created);
    n.put("model", model);
    return n;
  }

  /** A streamed chunk for one choice; null fields are left out of the delta. */
  public static ObjectNode chunk(
      GenerationSpec.Kind kind, String id, long created, String model, int index, String role, String text, String finishReason) {
    ObjectNode n = envelope(kind, true, id, created, model);
    ObjectNode choice = n.putArray("choices").addObject();
    choice.put("index", index);
    if (kind == GenerationSpec.Kind.CHAT) {
      ObjectNode delta = choice.putObject("delta");
      if (role != null) {
        delta.put("role", role);
      }
      if (text != null) {
        delta.put("content", text);
      }
    } else {
      choice.put("text", text == null ? "" : text);
    }
    choice.putNull("logprobs");
    choice.put("finish_reason", finishReason);
    return n;
  }

  /** A streamed chat chunk whose delta carries reasoning ({@code reasoning_content}). */
  public static ObjectNode reasoningChunk(String id, long created, String model, int index, String reasoning) {
    ObjectNode n = chunk(GenerationSpec.Kind.CHAT, id, created, model, index, null, null, null);
    ((ObjectNode) n.get("choices").get(0).get("delta")).put("reasoning_content", reasoning);
    return n;
  }

  /**
   * The streamed chat chunks of one complete tool call, as OpenAI sends them: index, id, type and
   * name first (empty arguments), then the arguments.
   */
  public static List<ObjectNode> toolCallChunks(String id, long created, String model, int index, int callIndex, ToolCall call) {
    ObjectNode head = chunk(GenerationSpec.Kind.CHAT, id, created, model, index, null, null, null);
    ObjectNode first = ((ObjectNode) head.get("choices").get(0).get("delta")).putArray("tool_calls").addObject();
    first.put("index", callIndex);
    first.put("id", call.id());
    first.put("type", "function");
    first.putObject("function").put("name", call.name()).put("arguments", "");
    ObjectNode body = chunk(GenerationSpec.Kind.CHAT, id, created, model, index, null, null, null);
    ObjectNode rest = ((ObjectNode) body.get("choices").get(0).get("delta")).putArray("tool_calls").addObject();
    rest.put("index", callIndex);
    rest.putObject("function").put("arguments", call.arguments());
    return List.of(head, body);
  }

  /** The final streamed chunk with usage and no choices (stream_options.include_usage). */
  public static ObjectNode usageChunk(GenerationSpec.Kind kind, String id, long created, String model, Usage usage) {
    ObjectNode n = envelope(kind, true, id, created, model);
    n.putArray("choices");
    n.set("usage", usage(usage));
    return n;
  }

  public static ObjectNode response(
      GenerationSpec.Kind kind, String id, long created, String model, List<ChoiceResult> choices, Usage usage) {
    ObjectNode n = envelope(kind, false, id, created, model);
    ArrayNode array = n.putArray("choices");
    for (ChoiceResult c : choices) {
      ObjectNode choice = array.addObject();
      choice.put("index", c.index());
      if (kind == GenerationSpec.Kind.CHAT) {
        ObjectNode message = choice.putObject("message");
        message.put("role", "assistant");
        if (c.text().isEmpty() && !c.toolCalls().isEmpty()) {
          message.putNull("content");
        } else {
          message.put("content", c.text());
        }
        if (!c.reasoning().isEmpty()) {
          message.put("reasoning_content", c.reasoning());
        }
        if (!c.toolCalls().isEmpty()) {
          ArrayNode calls = message.putArray("tool_calls");
          for (ToolCall t : c.toolCalls()) {
            ObjectNode call = calls.addObject();
            call.put("id", t.id());
            call.put("type", "function");
            call.putObject("function").put("name", t.name()).put("arguments", t.arguments());
          }
        }
      } else {
        choice.put("text", c.text());
      }
      if (c.logprobs() != null) {
        choice.set("logprobs", c.logprobs());
      } else {
        choice.putNull("logprobs");
      }
      choice.put("finish_reason", c.finishReason());
    }
    n.set("usage", usage(usage));
    return n;
  }

  /**
   * One token's log-probability and its most likely alternatives; both null for the first token
   * of an echoed prompt (nothing comes before it).
   */
  public record LogprobEntry(String token, Float logprob, List<Alternative> top) {}

  public record Alternative(String token, float logprob) {}

  /**
   * OpenAI's logprobs object: for chat {@code {"content": [{token, logprob, bytes, top_logprobs}]}};
   * for completions {@code {tokens, token_logprobs, top_logprobs, text_offset}}, offsets counted
   * from {@code textOffset}.
   */
  public static ObjectNode logprobs(GenerationSpec.Kind kind, List<LogprobEntry> entries, int textOffset) {
    ObjectNode n = JSON.createObjectNode();
    if (kind == GenerationSpec.Kind.CHAT) {
      ArrayNode content = n.putArray("content");
      for (LogprobEntry e : entries) {
        ObjectNode item = tokenNode(e.token(), e.logprob());
        ArrayNode top = item.putArray("top_logprobs");
        for (Alternative a : e.top()) {
          top.add(tokenNode(a.token(), a.logprob()));
        }
        content.add(item);
      }
      n.putNull("refusal");
      return n;
    }
    ArrayNode tokens = n.putArray("tokens");
    ArrayNode lps = n.putArray("token_logprobs");
    ArrayNode tops = n.putArray("top_logprobs");
    ArrayNode offsets = n.putArray("text_offset");
    int offset = textOffset;
    for (LogprobEntry e : entries) {
      tokens.add(e.token());
      if (e.logprob() == null) {
        lps.addNull();
        tops.addNull();
      } else {
        lps.add(e.logprob());
        ObjectNode top = tops.addObject();
        for (Alternative a : e.top()) {
          top.put(a.token(), a.logprob());
        }
      }
      offsets.add(offset);
      offset += e.token().length();
    }
    return n;
  }

  private static ObjectNode tokenNode(String token, float logprob) {
    ObjectNode n = JSON.createObjectNode();
    n.put("token", token);
    n.put("logprob", logprob);
    ArrayNode bytes = n.putArray("bytes");
    for (byte b : token.getBytes(java.nio.charset.StandardCharsets.UTF_8)) {
      bytes.add(b & 0xff);
    }
    return n;
  }

  /**
   * An embeddings response as OpenAI writes it: a list of {@code embedding} objects in input order,
   * each vector as JSON numbers or ({@code base64}) its little-endian float32 bytes in base64, and
   * the prompt tokens read (all of them: embeddings generate none).
   */
  public static ObjectNode embeddings(String id, long created, String model, List<float[]> vectors, boolean base64, long promptTokens) {
    ObjectNode root = list(id, created, model);
    ArrayNode data = root.putArray("data");
    for (int i = 0; i < vectors.size(); i++) {
      ObjectNode e = data.addObject();
      e.put("object", "embedding");
      e.put("index", i);
      float[] v = vectors.get(i);
      if (base64) {
        java.nio.ByteBuffer bytes = java.nio.ByteBuffer.allocate(v.length * Float.BYTES).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        bytes.asFloatBuffer().put(v);
        e.put("embedding", java.util.Base64.getEncoder().encodeToString(bytes.array()));
      } else {
        ArrayNode values = e.putArray("embedding");
        for (float x : v) {
          values.add(x);
        }
      }
    }
    root.putObject("usage").put("prompt_tokens", promptTokens).put("total_tokens", promptTokens);
    return root;
  }

  /**
   * A score or rerank request's answer from its inputs' unit vectors ({@link ScoreSpec#scores}):
   * vLLM's list of scores in input order ({@code "object": "score"} each), or a ranking — highest
   * score first, the best {@code top_n}, each with its document's index and, unless the request
   * said not to, its text.
   */
  public static ObjectNode scores(ScoreSpec spec, String id, long created, String model, List<float[]> unit, long promptTokens) {
    double[] scores = spec.scores(unit);
    if (!spec.rerank()) {
      ObjectNode root = list(id, created, model);
      ArrayNode data = root.putArray("data");
      for (int j = 0; j < scores.length; j++) {
        data.addObject().put("index", j).put("object", "score").put("score", scores[j]);
      }
      return withPoolingUsage(root, promptTokens);
    }
    ObjectNode root = JSON.createObjectNode();
    root.put("id", id);
    root.put("model", model);
    root.putObject("usage").put("prompt_tokens", promptTokens).put("total_tokens", promptTokens);
    Integer[] order = new Integer[scores.length];
    for (int j = 0; j < order.length; j++) {
      order[j] = j;
    }
    java.util.Arrays.sort(order, (a, b) -> Double.compare(scores[b], scores[a])); // stable: ties keep the documents' order
    int n = spec.topN() == 0 ? order.length : Math.min(spec.topN(), order.length);
    ArrayNode results = root.putArray("results");
    for (int r = 0; r < n; r++) {
      ObjectNode result = results.addObject().put("index", order[r]);
      if (spec.returnDocuments()) {
        result.putObject("document").put("text", spec.texts().get(order[r]));
      }
      result.put("relevance_score", scores[order[r]]);
    }
    return root;
  }

  /**
   * A classification request's answer (vLLM's {@code /classify}): per input its probabilities (or
   * logits, {@link ClassifySpec#probabilities}), the number of classes, and the likeliest class's
   * name from {@code labels} ({@code LABEL_i} past their end, as transformers names a class it was
   * given no name for).
   */
  public static ObjectNode classifications(ClassifySpec spec, String id, long created, String model, List<String> labels,
      List<float[]> logits, long promptTokens) {
    ObjectNode root = list(id, created, model);
    ArrayNode data = root.putArray("data");
    for (int i = 0; i < logits.size(); i++) {
      float[] l = logits.get(i);
      int best = 0;
      for (int c = 1; c < l.length; c++) {
        if (l[c] > l[best]) {
          best = c;
        }
      }
      ObjectNode d = data.addObject().put("index", i).put("label", best < labels.size() ? labels.get(best) : "LABEL_" + best);
      ArrayNode probs = d.putArray("probs");
      for (double p : spec.probabilities(l)) {
        probs.add(p);
      }
      d.put("num_classes", l.length);
    }
    return withPoolingUsage(root, promptTokens);
  }

  /** The head of vLLM's and OpenAI's list responses: {@code id}, {@code "object": "list"}, {@code created}, {@code model}. */
  private static ObjectNode list(String id, long created, String model) {
    ObjectNode root = JSON.createObjectNode();
    root.put("id", id);
    root.put("object", "list");
    root.put("created", created);
    root.put("model", model);
    return root;
  }

  /** vLLM's usage of a pooling request: every token a prompt token, none generated. */
  private static ObjectNode withPoolingUsage(ObjectNode root, long promptTokens) {
    root.putObject("usage").put("prompt_tokens", promptTokens).put("total_tokens", promptTokens).put("completion_tokens", 0);
    return root;
  }

  public static ObjectNode usage(Usage u) {
    ObjectNode n = JSON.createObjectNode();
    n.put("prompt_tokens", u.promptTokens());
    n.put("completion_tokens", u.completionTokens());
    n.put("total_tokens", u.promptTokens() + u.completionTokens());
    n.putObject("prompt_tokens_details").put("cached_tokens", u.cachedTokens());
    return n;
  }
}
