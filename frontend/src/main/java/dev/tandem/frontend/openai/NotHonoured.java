package dev.tandem.frontend.openai;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.frontend.http.ApiException;
import java.util.List;
import java.util.Map;

/**
 * Request parameters (vLLM's and OpenAI's) that would change what comes back and that Tandem does
 * not honour: a chat or completion request that sets one is a 400 naming it, never silently
 * ignored. Stateless.
 */
final class NotHonoured {
  private NotHonoured() {}

  /**
   * Not honoured yet, each with its default, which a request may send. In this order, so that the
   * error names the same field every time.
   */
  private static final List<Map.Entry<String, Object>> UNLESS_DEFAULT = List.of(
      Map.entry("spaces_between_special_tokens", true));

  private static final String LEAVE_IT_OUT = "is not supported by Tandem; leave it out";

  /**
   * What Tandem has no counterpart for, each with what the error says: vLLM's (a request's own
   * chat template, Python logits processors and their extra arguments, vLLM's KV connector's
   * parameters, multimodal processing, a prompt given as embeddings) and OpenAI's (its deprecated
   * function calling, predicted outputs, audio, web search, GPT-5's verbosity), refused when set
   * (null, an empty list or object is not set). vLLM ignores the OpenAI ones.
   */
  private static final List<Map.Entry<String, String>> WHEN_SET = List.of(
      Map.entry("chat_template", "in a request is not accepted: serve the model with --chat-template FILE instead"),
      Map.entry("logits_processors", LEAVE_IT_OUT),
      Map.entry("vllm_xargs", LEAVE_IT_OUT),
      Map.entry("kv_transfer_params", LEAVE_IT_OUT),
      Map.entry("mm_processor_kwargs", LEAVE_IT_OUT),
      Map.entry("prompt_embeds", LEAVE_IT_OUT),
      Map.entry("functions", "is OpenAI's deprecated function calling: send 'tools' (and 'tool_choice') instead"),
      Map.entry("function_call", "is OpenAI's deprecated function calling: send 'tools' and 'tool_choice' instead"),
      Map.entry("prediction", "(predicted outputs) " + LEAVE_IT_OUT),
      Map.entry("audio", "(audio output) " + LEAVE_IT_OUT),
      Map.entry("web_search_options", LEAVE_IT_OUT),
      Map.entry("verbosity", LEAVE_IT_OUT));

  /** @throws ApiException (400, {@code unsupported_parameter}) naming the first such parameter {@code body} sets */
  static void refuse(ObjectNode body) {
    for (Map.Entry<String, Object> p : UNLESS_DEFAULT) {
      JsonNode v = body.get(p.getKey());
      boolean unset = v == null || v.isNull()
          || (p.getValue() instanceof Boolean b && v.isBoolean() && v.booleanValue() == b)
          || (p.getValue() instanceof Double d && v.isNumber() && v.doubleValue() == d);
      if (!unset) {
        throw refused(p.getKey(), "is not supported by Tandem yet; leave it out or at its default (" + p.getValue() + ")");
      }
    }
    for (Map.Entry<String, String> p : WHEN_SET) {
      if (isSet(body.get(p.getKey()))) {
        throw refused(p.getKey(), p.getValue());
      }
    }
    JsonNode modalities = body.get("modalities");
    if (modalities != null && !modalities.isNull() && !(modalities.isArray() && modalities.valueStream()
        .allMatch(m -> m.isTextual() && m.asText().equals("text")))) {
      throw refused("modalities", "other than [\"text\"] is not supported by Tandem: it writes text only");
    }
  }

  /** Whether a request sets {@code v}: present, not null, and not an empty list or object. */
  static boolean isSet(JsonNode v) {
    return v != null && !v.isNull() && !(v.isContainerNode() && v.isEmpty());
  }

  private static ApiException refused(String param, String what) {
    return ApiException.unsupportedParameter(param, "'" + param + "' " + what + ".");
  }
}
