package dev.tandem.frontend.openai;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.frontend.http.ApiException;
import java.util.List;
import java.util.Map;

/**
 * A request to OpenAI's Responses API ({@code POST /v1/responses}) as the chat completion it
 * amounts to, and the fields its response repeats back.
 *
 * <p>{@code input} (a string, or items: messages with text content, {@code function_call} and
 * {@code function_call_output} items passed back from an earlier response, {@code reasoning} items,
 * which are dropped as chat templates drop past reasoning) becomes {@code messages}, after {@code
 * instructions} as a system message; {@code developer} messages become system ones. Function
 * {@code tools} and {@code tool_choice} take chat's nested shape, {@code text.format} becomes
 * {@code response_format}, {@code max_output_tokens} {@code max_completion_tokens}; the sampling
 * extensions chat accepts (vLLM's and Tandem's) pass through unchanged. Nothing is stored: what
 * needs a stored response ({@code previous_response_id}, {@code conversation}, item references,
 * {@code background}) is refused naming the field, as are hosted tools and non-text content.
 */
public record ResponsesRequest(ObjectNode chat, ObjectNode echo) {
  /** Chat parameters a Responses request may carry as they are (sampling extensions, Tandem's own). */
  private static final List<String> PASSED = List.of(
      "model", "stream", "temperature", "top_p", "parallel_tool_calls", "seed", "top_k", "min_p", "repetition_penalty",
      "presence_penalty", "frequency_penalty", "stop", "stop_token_ids", "ignore_eos", "min_tokens", "cache_salt", "allowed_token_ids", "bad_words", "skip_special_tokens", "logit_bias",
      "chat_template_kwargs", "thinking_token_budget", "priority", "tandem");

  /** Chat parameter → the Responses field it came from, for errors the chat parser raises. */
  private static final Map<String, String> RENAMED = Map.of(
      "messages", "input",
      "max_completion_tokens", "max_output_tokens",
      "max_tokens", "max_output_tokens",
      "response_format", "text.format",
      "reasoning_effort", "reasoning.effort");

  /** @throws ApiException naming the Responses field that is malformed or cannot be honoured */
  public static ResponsesRequest parse(ObjectNode body) {
    refuseStored(body);
    ObjectNode chat = ResponseJson.JSON.createObjectNode();
    for (String field : PASSED) {
      if (body.has(field)) {
        chat.set(field, body.get(field));
      }
    }
    chat.set("messages", messages(body));
    JsonNode max = body.get("max_output_tokens");
    if (max != null && !max.isNull()) {
      chat.set("max_completion_tokens", max);
    }
    ArrayNode tools = tools(body.get("tools"));
    if (tools != null) {
      chat.set("tools", tools);
    }
    JsonNode choice = toolChoice(body.get("tool_choice"));
    if (choice != null) {
      chat.set("tool_choice", choice);
    }
    JsonNode format = format(body.get("text"));
    if (format != null) {
      chat.set("response_format", format);
    }
    JsonNode effort = body.path("reasoning").get("effort");
    if (present(effort)) {
      chat.set("reasoning_effort", effort); // the chat template's to read, as on chat
    }
    return new ResponsesRequest(chat, echo(body));
  }

  /** The same error, naming the Responses field where the chat parser named its own parameter. */
  public static ApiException renamed(ApiException e) {
    String param = e.param();
    if (param == null) {
      return e;
    }
    for (Map.Entry<String, String> r : RENAMED.entrySet()) {
      if (param.equals(r.getKey()) || param.startsWith(r.getKey() + ".") || param.startsWith(r.getKey() + "[")) {
        String renamed = r.getValue() + param.substring(r.getKey().length());
        String message = e.getMessage().replace("'" + r.getKey() + "'", "'" + r.getValue() + "'");
        return new ApiException(e.status(), message, e.type(), renamed, e.code());
      }
    }
    return e;
  }

  private static void refuseStored(ObjectNode body) {
    if (present(body.get("previous_response_id"))) {
      throw ApiException.unsupportedParameter("previous_response_id", "'previous_response_id' is not supported: this server "
          + "stores no responses. Send the earlier turns as 'input' items (an earlier response's output items can be passed back as they are).");
    }
    if (present(body.get("conversation"))) {
      throw ApiException.unsupportedParameter("conversation", "'conversation' is not supported: this server stores no conversations; send the turns as 'input' items.");
    }
    if (body.path("background").asBoolean(false)) {
      throw ApiException.unsupportedParameter("background", "'background' responses are not supported: this server stores no responses to poll.");
    }
    if (present(body.get("prompt"))) {
      throw ApiException.unsupportedParameter("prompt", "Stored prompt templates ('prompt') are not supported; send 'instructions' and 'input'.");
    }
    JsonNode include = body.get("include");
    if (include != null && include.isArray() && !include.isEmpty()) {
      throw ApiException.unsupportedParameter("include", "'include' is not supported (asked for " + include.get(0) + ").");
    }
    if (!body.path("truncation").asText("disabled").equals("disabled")) {
      throw ApiException.unsupportedParameter("truncation",
          "Only 'truncation': 'disabled' is supported: an input past the context window is refused, not cut.");
    }
    JsonNode reasoning = body.get("reasoning");
    if (reasoning != null && reasoning.isObject()) {
      for (String field : List.of("summary", "generate_summary")) {
        if (present(reasoning.get(field))) {
          throw ApiException.unsupportedParameter("reasoning." + field, "'reasoning." + field + "' is not supported: the model's "
              + "reasoning comes back whole in a reasoning item, not summarised.");
        }
      }
    }
    if (body.path("top_logprobs").asInt(0) != 0) {
      throw ApiException.unsupportedParameter("top_logprobs", "'top_logprobs' is not supported on /v1/responses; "
          + "chat completions return log-probabilities ('logprobs', 'top_logprobs').");
    }
    JsonNode verbosity = body.path("text").get("verbosity");
    if (present(verbosity) && !verbosity.asText().equals("medium")) {
      throw ApiException.unsupportedParameter("text.verbosity", "'text.verbosity' other than 'medium' is not supported.");
    }
  }

  private static boolean present(JsonNode v) {
    return v != null && !v.isNull();
  }

  private static ArrayNode messages(ObjectNode body) {
    ArrayNode messages = ResponseJson.JSON.createArrayNode();
    JsonNode instructions = body.get("instructions");
    if (present(instructions)) {
      if (!instructions.isTextual()) {
        throw ApiException.invalid("instructions", "'instructions' must be a string.");
      }
      messages.addObject().put("role", "system").put("content", instructions.asText());
    }
    JsonNode input = body.get("input");
    if (input == null || input.isNull()) {
      throw ApiException.invalid("input", "'input' is required: a string or a list of input items.");
    }
    if (input.isTextual()) {
      messages.addObject().put("role", "user").put("content", input.asText());
      return messages;
    }
    if (!input.isArray()) {
      throw ApiException.invalid("input", "'input' must be a string or a list of input items.");
    }
    for (int i = 0; i < input.size(); i++) {
      item(input.get(i), "input[" + i + "]", messages);
    }
    return messages;
  }

  private static void item(JsonNode item, String at, ArrayNode messages) {
    if (!item.isObject()) {
      throw ApiException.invalid(at, "Each input item must be an object.");
    }
    String type = item.path("type").asText(item.has("role") ? "message" : "");
    switch (type) {
      case "message" -> {
        String role = item.path("role").asText();
        if (!List.of("user", "system", "developer", "assistant").contains(role)) {
          throw ApiException.invalid(at + ".role", "'role' must be user, system, developer or assistant, was '" + role + "'.");
        }
        ObjectNode m = messages.addObject().put("role", role.equals("developer") ? "system" : role);
        m.set("content", content(item.get("content"), at + ".content"));
      }
      case "function_call" -> {
        ObjectNode call = ResponseJson.JSON.createObjectNode();
        call.put("id", text(item, "call_id", at)).put("type", "function");
        call.putObject("function").put("name", text(item, "name", at)).put("arguments", text(item, "arguments", at));
        // Calls made together (parallel) are one assistant turn, as chat has them.
        JsonNode last = messages.isEmpty() ? null : messages.get(messages.size() - 1);
        ObjectNode turn = last != null && last.path("role").asText().equals("assistant") && last.has("tool_calls")
            ? (ObjectNode) last
            : messages.addObject().put("role", "assistant").putNull("content");
        (turn.has("tool_calls") ? (ArrayNode) turn.get("tool_calls") : turn.putArray("tool_calls")).add(call);
      }
      case "function_call_output" -> {
        JsonNode output = item.get("output");
        ObjectNode m = messages.addObject().put("role", "tool").put("tool_call_id", text(item, "call_id", at));
        m.set("content", output != null && output.isTextual() ? output : content(output, at + ".output"));
      }
      case "reasoning" -> {} // chat templates drop the reasoning of earlier turns
      case "item_reference" -> throw ApiException.unsupportedParameter(at + ".type",
          "Input items of type 'item_reference' are not supported: this server stores no items; pass the item itself.");
      default -> throw ApiException.unsupportedParameter(at + ".type", "Input items of type '" + type
          + "' are not supported; only message, function_call, function_call_output and reasoning items are.");
    }
  }

  private static String text(JsonNode item, String field, String at) {
    JsonNode v = item.get(field);
    if (v == null || !v.isTextual()) {
      throw ApiException.invalid(at + "." + field, "'" + field + "' must be a string.");
    }
    return v.asText();
  }

  /** A string, or text parts ({@code input_text}, {@code output_text}) as chat's text parts. */
  private static JsonNode content(JsonNode content, String at) {
    if (content == null || content.isNull()) {
      throw ApiException.invalid(at, "'content' is required.");
    }
    if (content.isTextual()) {
      return content;
    }
    if (!content.isArray()) {
      throw ApiException.invalid(at, "'content' must be a string or a list of content parts.");
    }
    ArrayNode parts = ResponseJson.JSON.createArrayNode();
    for (int p = 0; p < content.size(); p++) {
      JsonNode part = content.get(p);
      String type = part.path("type").asText();
      if (!List.of("input_text", "output_text", "text").contains(type)) {
        throw ApiException.unsupportedParameter(at + "[" + p + "]", "Content parts of type '" + type
            + "' are not supported; only text parts (input_text, output_text) are.");
      }
      parts.addObject().put("type", "text").put("text", text(part, "text", at + "[" + p + "]"));
    }
    return parts;
  }

  /** Function tools in chat's nested shape; null when none. */
  private static ArrayNode tools(JsonNode tools) {
    if (tools == null || tools.isNull()) {
      return null;
    }
    if (!tools.isArray()) {
      throw ApiException.invalid("tools", "'tools' must be a list.");
    }
    ArrayNode out = ResponseJson.JSON.createArrayNode();
    for (int i = 0; i < tools.size(); i++) {
      JsonNode tool = tools.get(i);
      String type = tool.path("type").asText();
      if (!type.equals("function")) {
        throw ApiException.unsupportedParameter("tools[" + i + "].type", "Tools of type '" + type
            + "' are not supported; only function tools are (hosted tools run on OpenAI's servers).");
      }
      ObjectNode function = out.addObject().put("type", "function").putObject("function");
      for (String field : List.of("name", "description", "parameters", "strict")) {
        if (tool.has(field)) {
          function.set(field, tool.get(field));
        }
      }
    }
    return out;
  }

  /** auto, none, required, or one function by name, in chat's shape; null when not given. */
  private static JsonNode toolChoice(JsonNode choice) {
    if (choice == null || choice.isNull() || choice.isTextual()) {
      return choice;
    }
    if (choice.isObject() && choice.path("type").asText().equals("function") && choice.path("name").isTextual()) {
      ObjectNode out = ResponseJson.JSON.createObjectNode().put("type", "function");
      out.putObject("function").put("name", choice.get("name").asText());
      return out;
    }
    throw ApiException.unsupportedParameter("tool_choice",
        "'tool_choice' must be auto, none, required or {\"type\": \"function\", \"name\": ...}; other choices are not supported.");
  }

  /** {@code text.format} as chat's {@code response_format}; null for plain text. */
  private static JsonNode format(JsonNode text) {
    JsonNode format = text == null ? null : text.get("format");
    if (format == null || format.isNull()) {
      return null;
    }
    String type = format.path("type").asText();
    return switch (type) {
      case "text" -> null;
      case "json_object" -> ResponseJson.JSON.createObjectNode().put("type", "json_object");
      case "json_schema" -> {
        ObjectNode out = ResponseJson.JSON.createObjectNode().put("type", "json_schema");
        ObjectNode schema = out.putObject("json_schema");
        for (String field : List.of("name", "description", "schema", "strict")) {
          if (format.has(field)) {
            schema.set(field, format.get(field));
          }
        }
        yield out;
      }
      default -> throw ApiException.invalid("text.format.type", "'text.format.type' must be text, json_object or json_schema, was '" + type + "'.");
    };
  }

  /** The request's settings as a response object repeats them (temperature and top_p: as sampled, added later). */
  private static ObjectNode echo(ObjectNode body) {
    ObjectNode e = ResponseJson.JSON.createObjectNode();
    e.set("instructions", body.path("instructions").isTextual() ? body.get("instructions") : null);
    e.set("max_output_tokens", present(body.get("max_output_tokens")) ? body.get("max_output_tokens") : null);
    e.set("metadata", body.path("metadata").isObject() ? body.get("metadata") : ResponseJson.JSON.createObjectNode());
    e.put("parallel_tool_calls", body.path("parallel_tool_calls").asBoolean(true));
    e.putNull("previous_response_id");
    e.putObject("reasoning").putNull("effort").putNull("summary");
    e.put("store", false); // nothing is stored, whatever was asked
    ObjectNode text = e.putObject("text");
    JsonNode format = body.path("text").get("format");
    if (present(format)) {
      text.set("format", format);
    } else {
      text.putObject("format").put("type", "text");
    }
    e.set("tool_choice", present(body.get("tool_choice")) ? body.get("tool_choice") : ResponseJson.JSON.getNodeFactory().textNode("auto"));
    e.set("tools", body.path("tools").isArray() ? body.get("tools") : ResponseJson.JSON.createArrayNode());
    e.put("truncation", "disabled");
    e.set("user", body.path("user").isTextual() ? body.get("user") : null);
    return e;
  }
}
