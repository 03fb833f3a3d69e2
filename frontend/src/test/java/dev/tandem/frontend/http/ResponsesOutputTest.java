package dev.tandem.frontend.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.frontend.openai.GenerationSpec;
import dev.tandem.frontend.openai.ResponseJson;
import dev.tandem.frontend.openai.ResponsesRequest;
import dev.tandem.frontend.parse.OutputParsers;
import dev.tandem.frontend.parse.ToolCall;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The Responses API's output as a model writes it — reasoning, then text, then a function call —
 * streamed as typed events over a real Netty channel, and as one response object: items in the
 * order written, each opened, filled and closed, numbered events, the usage with reasoning tokens.
 * (The parts a model cannot be made to write here, reasoning above all, are fed in directly.)
 */
class ResponsesOutputTest {
  private static final GenerationSpec SPEC = new GenerationSpec(GenerationSpec.Kind.CHAT, "m", List.of(new int[] {1}), 1,
      SamplingParams.greedy(), new StopConditions(16, new int[0], false), List.of(), true, true, false, false, null, null,
      OutputParsers.NONE);
  private static final ObjectNode ECHO = ResponsesRequest.parse(json("{\"input\": \"x\", \"instructions\": \"be brief\"}")).echo();

  private static ObjectNode json(String s) {
    try {
      return (ObjectNode) ResponseJson.JSON.readTree(s);
    } catch (Exception e) {
      throw new IllegalArgumentException(e);
    }
  }

  /** Every event written to the channel: its name line, and its data parsed. */
  private static List<JsonNode> events(EmbeddedChannel channel) throws Exception {
    StringBuilder text = new StringBuilder();
    for (Object o; (o = channel.readOutbound()) != null; ) {
      if (o instanceof HttpContent c) {
        ByteBuf b = c.content();
        text.append(b.toString(StandardCharsets.UTF_8));
        c.release();
      }
    }
    List<JsonNode> out = new ArrayList<>();
    for (String event : text.toString().strip().split("\n\n")) {
      String[] lines = event.split("\n");
      JsonNode data = ResponseJson.JSON.readTree(lines[1].substring("data: ".length()));
      assertEquals("event: " + data.get("type").asText(), lines[0]);
      out.add(data);
    }
    return out;
  }

  @Test
  void reasoningTextAndACallStreamAsThreeItemsInOrder() throws Exception {
    EmbeddedChannel channel = new EmbeddedChannel(new ChannelHandlerAdapter() {});
    SseWriter sse = new SseWriter(channel.pipeline().firstContext(), true, false);
    ResponsesOutput out = new ResponsesOutput(ECHO, SPEC, sse);
    out.begin();
    out.reasoning("Let me ");
    out.reasoning("think.");
    out.content("");
    out.content("It is ");
    out.content("sunny.");
    out.toolCall(new ToolCall("call_abc", "weather", "{\"city\":\"Paris\"}"));
    out.complete("tool_calls", new ResponseJson.Usage(20, 9, 4), 3, null);
    sse.flush();
    List<JsonNode> events = events(channel);

    List<String> types = events.stream().map(e -> e.get("type").asText()).toList();
    assertEquals(List.of(
        "response.created", "response.in_progress",
        "response.output_item.added", "response.reasoning_text.delta", "response.reasoning_text.delta",
        "response.reasoning_text.done", "response.output_item.done",
        "response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed"), types);
    for (int i = 0; i < events.size(); i++) {
      assertEquals(i, events.get(i).get("sequence_number").asInt());
    }
    assertEquals("in_progress", events.get(0).path("response").path("status").asText());
    assertEquals("Let me think.", events.get(5).get("text").asText());
    assertEquals(1, events.get(9).get("output_index").asInt(), "the message is the second item");
    assertEquals(events.get(7).path("item").path("id"), events.get(9).path("item_id"), "deltas name their item");
    assertEquals("It is sunny.", events.get(11).get("text").asText());

    JsonNode response = events.getLast().get("response");
    assertEquals("completed", response.get("status").asText());
    JsonNode output = response.get("output");
    assertEquals(3, output.size());
    assertEquals("Let me think.", output.get(0).path("content").get(0).get("text").asText());
    assertEquals("reasoning", output.get(0).get("type").asText());
    assertEquals("It is sunny.", output.get(1).path("content").get(0).get("text").asText());
    assertEquals("completed", output.get(1).get("status").asText());
    assertEquals("call_abc", output.get(2).get("call_id").asText());
    assertEquals("{\"city\":\"Paris\"}", output.get(2).get("arguments").asText());
    JsonNode usage = response.get("usage");
    assertEquals(20, usage.get("input_tokens").asInt());
    assertEquals(4, usage.path("input_tokens_details").get("cached_tokens").asInt());
    assertEquals(3, usage.path("output_tokens_details").get("reasoning_tokens").asInt());
    assertEquals(29, usage.get("total_tokens").asInt());
    assertEquals("be brief", response.get("instructions").asText());
    assertEquals(0.0, response.get("temperature").asDouble(), "the sampling used (greedy)");
    assertFalse(response.get("store").asBoolean());
  }

  @Test
  void aResponseCutAtItsLimitIsIncompleteAsAWholeAndInItsMessage() throws Exception {
    EmbeddedChannel channel = new EmbeddedChannel(new ChannelHandlerAdapter() {});
    SseWriter sse = new SseWriter(channel.pipeline().firstContext(), true, false);
    ResponsesOutput streamed = new ResponsesOutput(ECHO, SPEC, sse);
    streamed.begin();
    streamed.content("abc");
    streamed.complete("length", new ResponseJson.Usage(5, 16, 0), 0, null);
    sse.flush();
    JsonNode last = events(channel).getLast();
    assertEquals("response.incomplete", last.get("type").asText());
    assertEquals("max_output_tokens", last.path("response").path("incomplete_details").path("reason").asText());
    assertEquals("incomplete", last.path("response").path("output").get(0).path("status").asText());

    ObjectNode body = new ResponsesOutput(ECHO, SPEC, sse).body(
        new ResponseJson.ChoiceResult(0, "abc", "", List.of(), "length", null), new ResponseJson.Usage(5, 16, 0), 0, null);
    assertEquals("incomplete", body.get("status").asText());
    assertEquals(1, body.get("output").size());
    assertTrue(body.get("id").asText().startsWith("resp_"));
    assertEquals("response", body.get("object").asText());
  }
}
