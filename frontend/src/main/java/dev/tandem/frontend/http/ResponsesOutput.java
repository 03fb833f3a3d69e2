package dev.tandem.frontend.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.frontend.openai.GenerationSpec;
import dev.tandem.frontend.openai.ResponseJson;
import dev.tandem.frontend.parse.ToolCall;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * One generation written as OpenAI's Responses API has it: a {@code response} object whose output is
 * a list of items — the reasoning, the message, each function call, in the order the model wrote
 * them — whole in one JSON body, or streamed as typed events ({@code response.created}, an item
 * added, its deltas, its text done, the item done, ..., {@code response.completed}, each with a
 * {@code sequence_number}) with no {@code [DONE]} after them.
 *
 * <p>Threading: the channel's event loop only, as {@link GenerationRun}.
 */
final class ResponsesOutput {
  private final String id = "resp_" + UUID.randomUUID().toString().replace("-", "");
  private final long created = System.currentTimeMillis() / 1000;
  private final ObjectNode echo;
  private final GenerationSpec spec;
  private final SseWriter sse;
  private final List<ObjectNode> items = new ArrayList<>();
  private ObjectNode open; // the item text is being added to (reasoning or message), or null
  private final StringBuilder openText = new StringBuilder();
  private int sequence;

  ResponsesOutput(ObjectNode echo, GenerationSpec spec, SseWriter sse) {
    this.echo = echo;
    this.spec = spec;
    this.sse = sse;
  }

  String id() {
    return id;
  }

  /** {@code response.created} and {@code response.in_progress}. */
  void begin() {
    ObjectNode response = response("in_progress", null, 0, null);
    send(event("response.created").set("response", response));
    send(event("response.in_progress").set("response", response));
  }

  void reasoning(String text) {
    append("reasoning", text);
  }

  void content(String text) {
    append("message", text);
  }

  /** A function call: the parsers hand calls over whole, so its arguments come in one delta. */
  void toolCall(ToolCall call) {
    close("completed");
    ObjectNode item = functionCall(call, "in_progress").put("arguments", "");
    String itemId = item.get("id").asText();
    int index = items.size();
    items.add(functionCall(call, "completed"));
    send(event("response.output_item.added").put("output_index", index).set("item", item));
    send(event("response.function_call_arguments.delta").put("item_id", itemId).put("output_index", index).put("delta", call.arguments()));
    send(event("response.function_call_arguments.done").put("item_id", itemId).put("output_index", index)
        .put("name", call.name()).put("arguments", call.arguments()));
    send(event("response.output_item.done").put("output_index", index).set("item", items.get(index)));
  }

  /**
   * The last events: the open item done, then {@code response.completed} — or {@code
   * response.incomplete} when the output ran into {@code max_output_tokens}.
   */
  void complete(String finishReason, ResponseJson.Usage usage, long reasoningTokens, ObjectNode timing) {
    boolean cut = finishReason.equals("length");
    close(cut ? "incomplete" : "completed");
    ObjectNode response = response(cut ? "incomplete" : "completed", usage, reasoningTokens, timing);
    send(event(cut ? "response.incomplete" : "response.completed").set("response", response));
  }

  /** A failed stream's last event. */
  void error(ApiException e) {
    send(event("error").put("code", e.code()).put("message", e.getMessage()).put("param", e.param()));
  }

  /**
   * The whole response as one JSON body: {@code results}' reasoning, text and tool calls (one
   * choice: the Responses API has no {@code n}) as output items.
   */
  ObjectNode body(ResponseJson.ChoiceResult result, ResponseJson.Usage usage, long reasoningTokens, ObjectNode timing) {
    if (!result.reasoning().isEmpty()) {
      items.add(reasoningItem(result.reasoning()));
    }
    boolean cut = result.finishReason().equals("length");
    if (!result.text().isEmpty() || result.toolCalls().isEmpty()) {
      items.add(message(result.text(), cut ? "incomplete" : "completed"));
    }
    for (ToolCall call : result.toolCalls()) {
      items.add(functionCall(call, "completed"));
    }
    return response(cut ? "incomplete" : "completed", usage, reasoningTokens, timing);
  }

  private void append(String kind, String text) {
    if (text.isEmpty()) {
      return;
    }
    if (open == null || !open.get("type").asText().equals(kind)) {
      close("completed");
      open = kind.equals("reasoning") ? reasoningItem("") : message("", "in_progress");
      ObjectNode added = open.deepCopy();
      added.putArray("content"); // the parts come after
      send(event("response.output_item.added").put("output_index", items.size()).set("item", added));
      if (kind.equals("message")) {
        send(event("response.content_part.added").put("item_id", open.get("id").asText()).put("output_index", items.size())
            .put("content_index", 0).set("part", textPart("output_text", "")));
      }
    }
    openText.append(text);
    ObjectNode delta = event(kind.equals("reasoning") ? "response.reasoning_text.delta" : "response.output_text.delta")
        .put("item_id", open.get("id").asText()).put("output_index", items.size()).put("content_index", 0).put("delta", text);
    if (kind.equals("message")) {
      delta.putArray("logprobs");
    }
    send(delta);
  }

  /** Ends the item text was being added to: its text done, its part done, the item done ({@code status}: a message's). */
  private void close(String status) {
    if (open == null) {
      return;
    }
    int index = items.size();
    String itemId = open.get("id").asText();
    String text = openText.toString();
    ObjectNode done;
    if (open.get("type").asText().equals("reasoning")) {
      send(event("response.reasoning_text.done").put("item_id", itemId).put("output_index", index).put("content_index", 0).put("text", text));
      done = reasoningItem(text);
    } else {
      ObjectNode textDone = event("response.output_text.done").put("item_id", itemId).put("output_index", index).put("content_index", 0)
          .put("text", text);
      textDone.putArray("logprobs");
      send(textDone);
      send(event("response.content_part.done").put("item_id", itemId).put("output_index", index).put("content_index", 0)
          .set("part", textPart("output_text", text)));
      done = message(text, status);
    }
    done.put("id", itemId);
    items.add(done);
    send(event("response.output_item.done").put("output_index", index).set("item", done));
    open = null;
    openText.setLength(0);
  }

  /** A new event of {@code type} with the next sequence number, for the caller to fill and {@link #send}. */
  private ObjectNode event(String type) {
    return ResponseJson.JSON.createObjectNode().put("type", type).put("sequence_number", sequence++);
  }

  private void send(ObjectNode event) {
    sse.namedEvent(event.get("type").asText(), event);
  }

  private ObjectNode response(String status, ResponseJson.Usage usage, long reasoningTokens, ObjectNode timing) {
    ObjectNode r = ResponseJson.JSON.createObjectNode();
    r.put("id", id).put("object", "response").put("created_at", created).put("status", status);
    r.putNull("error");
    if (status.equals("incomplete")) {
      r.putObject("incomplete_details").put("reason", "max_output_tokens");
    } else {
      r.putNull("incomplete_details");
    }
    r.put("model", spec.model());
    ArrayNode output = r.putArray("output");
    items.forEach(output::add);
    r.setAll(echo);
    r.put("temperature", spec.sampling().temperature());
    r.put("top_p", spec.sampling().topP());
    if (usage == null) {
      r.putNull("usage");
    } else {
      ObjectNode u = r.putObject("usage");
      u.put("input_tokens", usage.promptTokens());
      u.putObject("input_tokens_details").put("cached_tokens", usage.cachedTokens());
      u.put("output_tokens", usage.completionTokens());
      u.putObject("output_tokens_details").put("reasoning_tokens", reasoningTokens);
      u.put("total_tokens", usage.promptTokens() + usage.completionTokens());
    }
    if (timing != null) {
      r.set("tandem", timing);
    }
    return r;
  }

  private static ObjectNode reasoningItem(String text) {
    ObjectNode item = ResponseJson.JSON.createObjectNode().put("type", "reasoning").put("id", "rs_" + shortId());
    item.putArray("summary");
    item.putArray("content").add(textPart("reasoning_text", text));
    return item;
  }

  private static ObjectNode message(String text, String status) {
    ObjectNode item = ResponseJson.JSON.createObjectNode().put("type", "message").put("id", "msg_" + shortId())
        .put("status", status).put("role", "assistant");
    item.putArray("content").add(textPart("output_text", text));
    return item;
  }

  private static ObjectNode functionCall(ToolCall call, String status) {
    return ResponseJson.JSON.createObjectNode().put("type", "function_call").put("id", "fc_" + call.id().replaceFirst("^call_", ""))
        .put("call_id", call.id()).put("name", call.name()).put("arguments", call.arguments()).put("status", status);
  }

  private static ObjectNode textPart(String type, String text) {
    ObjectNode part = ResponseJson.JSON.createObjectNode().put("type", type).put("text", text);
    if (type.equals("output_text")) {
      part.putArray("annotations");
    }
    return part;
  }

  private static String shortId() {
    return UUID.randomUUID().toString().replace("-", "");
  }
}
