package dev.tandem.frontend.http;

import static dev.tandem.frontend.http.GenerationRunTest.chunk;
import static dev.tandem.frontend.http.GenerationRunTest.drain;
import static dev.tandem.frontend.http.GenerationRunTest.events;
import static dev.tandem.frontend.http.GenerationRunTest.post;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.common.FinishReason;
import dev.tandem.engine.ModelFiles;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.parse.ToolCallFormat;
import dev.tandem.frontend.text.ChatTemplate;
import dev.tandem.frontend.text.TextTokenizer;
import io.netty.channel.embedded.EmbeddedChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Tool calls with Phi-4-mini's conventions through the HTTP handler: its own chat template (tools
 * read from the system message), and calls written between {@code <|tool_call|>} markers that its
 * tokenizer may hold as special tokens — here they are (added to the bundled Qwen3 vocabulary as
 * special tokens), so a reply is only parsed if their text survives special tokens being skipped.
 */
class Phi4MiniToolCallsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int CALL = 151_669;
  private static final int CALL_END = 151_670;
  private static final int EOS = 151_645;
  private static final String TEMPLATE = "{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and"
      + " message['tools'] is not none %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] +"
      + " '<|/tool|>' + '<|end|>' }}{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}"
      + "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}";
  private static final TextTokenizer TOKENIZER = tokenizer();
  private static final ServedModel MODEL = new ServedModel("m", 4096, 151_936, "test", Set.of("structured_outputs"), new int[] {EOS},
      TOKENIZER, ChatTemplate.forModel("{\"eos_token\": \"<|endoftext|>\"}".getBytes(StandardCharsets.UTF_8), null, TEMPLATE, "phi4"));
  private static final String TOOLS = ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
      + "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}]";
  private static final String CHAT = "{\"model\":\"m\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"Weather in Paris?\"}]";

  /** The bundled Qwen3 tokenizer with Phi-4-mini's call markers added as special tokens. */
  private static TextTokenizer tokenizer() {
    try {
      ObjectNode json = (ObjectNode) JSON.readTree(ModelFiles.bundledQwen3().tokenizerJson());
      for (var marker : List.of(new Object[] {CALL, "<|tool_call|>"}, new Object[] {CALL_END, "<|/tool_call|>"})) {
        json.withArray("added_tokens").addObject().put("id", (int) marker[0]).put("content", (String) marker[1])
            .put("single_word", false).put("lstrip", false).put("rstrip", false).put("normalized", false).put("special", true);
      }
      return TextTokenizer.fromJson(JSON.writeValueAsBytes(json), "qwen3+phi4-markers");
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @AfterAll
  static void close() {
    TOKENIZER.close();
  }

  private static int[] reply(String before, String calls) {
    return IntStream.concat(IntStream.concat(IntStream.of(TOKENIZER.encode(before, false)), IntStream.of(CALL)),
        IntStream.concat(IntStream.of(TOKENIZER.encode(calls, false)), IntStream.of(CALL_END, EOS))).toArray();
  }

  private static EmbeddedChannel channel(GenerationRunTest.ScriptedRouter router) {
    return new EmbeddedChannel(new HttpApiHandler(MODEL, router, new FrontendMetrics(), 0, Duration.ZERO));
  }

  @Test
  void theMarkersAreSpecialTokensOfThisTokenizer() {
    assertEquals(CALL, TOKENIZER.specialTokenId("<|tool_call|>"));
    assertEquals("", TOKENIZER.decode(new int[] {CALL}, true), "skipped like any special token");
    assertEquals(-1, TOKENIZER.specialTokenId("<tool_call>"), "Qwen3's own call tag is an added token, not a special one");
    assertEquals(ToolCallFormat.PHI4_MINI_JSON, MODEL.parsers().toolCalls(), "recognised from the template");
  }

  @Test
  void aCallBetweenSpecialMarkersIsParsedAndTheToolsReachTheSystemMessage() throws Exception {
    var router = new GenerationRunTest.ScriptedRouter(l -> {
      int[] all = reply("Let me check.", "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]");
      l.onChunk(chunk(java.util.Arrays.copyOfRange(all, 0, 5), null)); // the marker arrives in a later piece
      l.onChunk(chunk(java.util.Arrays.copyOfRange(all, 5, all.length), FinishReason.STOP));
      l.onCompleted();
    });
    EmbeddedChannel ch = channel(router);
    post(ch, CHAT + TOOLS + "}");
    JsonNode body = JSON.readTree(drain(ch).body());
    JsonNode message = body.at("/choices/0/message");
    assertEquals("Let me check.", message.get("content").asText(), body.toString());
    assertEquals("get_weather", message.at("/tool_calls/0/function/name").asText(), body.toString());
    assertEquals("{\"city\":\"Paris\"}", message.at("/tool_calls/0/function/arguments").asText());
    assertEquals("tool_calls", body.at("/choices/0/finish_reason").asText());
    String prompt = TOKENIZER.decode(router.routed.getFirst().promptTokens(), false);
    assertTrue(prompt.startsWith("<|system|>You are a helpful assistant with some tools.<|tool|>[{\"name\": \"get_weather\""), prompt);
  }

  @Test
  void streamedTheMarkersNeverReachTheContent() throws Exception {
    var router = new GenerationRunTest.ScriptedRouter(l -> {
      for (int t : reply("Checking. ", "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]")) {
        l.onChunk(chunk(new int[] {t}, t == EOS ? FinishReason.STOP : null));
      }
      l.onCompleted();
    });
    EmbeddedChannel ch = channel(router);
    post(ch, CHAT + TOOLS + ",\"stream\":true}");
    StringBuilder content = new StringBuilder();
    List<JsonNode> calls = new ArrayList<>();
    for (JsonNode e : events(drain(ch).body())) {
      content.append(e.at("/choices/0/delta/content").asText(""));
      e.at("/choices/0/delta/tool_calls").forEach(calls::add);
    }
    assertEquals("Checking. ", content.toString());
    assertEquals("get_weather", calls.getFirst().at("/function/name").asText());
  }

  @Test
  void withoutToolsTheMarkersAreSkippedLikeAnySpecialToken() throws Exception {
    var router = new GenerationRunTest.ScriptedRouter(l -> {
      l.onChunk(chunk(reply("Plain ", "text"), FinishReason.STOP));
      l.onCompleted();
    });
    EmbeddedChannel ch = channel(router);
    post(ch, CHAT + "}");
    assertEquals("Plain text", JSON.readTree(drain(ch).body()).at("/choices/0/message/content").asText());
  }

  @Test
  void aForcedCallIsSteeredAsPlainText() throws Exception {
    var router = new GenerationRunTest.ScriptedRouter(l -> {
      l.onChunk(chunk(TOKENIZER.encode("functools[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]", false), FinishReason.STOP));
      l.onCompleted();
    });
    EmbeddedChannel ch = channel(router);
    post(ch, CHAT + TOOLS + ",\"tool_choice\":\"required\"}");
    JsonNode body = JSON.readTree(drain(ch).body());
    var constraint = router.routed.getFirst().structuredOutput();
    assertEquals("functools[", constraint.prefix(), "no special token for the grammar to write");
    assertEquals("]", constraint.suffix());
    assertEquals("{\"city\":\"Oslo\"}", body.at("/choices/0/message/tool_calls/0/function/arguments").asText(), body.toString());
  }
}
