package dev.tandem.frontend.parse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class OutputParsersTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Feeds {@code pieces} one by one; returns [reasoning, content]. */
  private static String[] split(ReasoningFormat f, String... pieces) {
    ReasoningSplitter s = new ReasoningSplitter(f);
    StringBuilder r = new StringBuilder();
    StringBuilder c = new StringBuilder();
    for (String p : pieces) {
      var out = s.add(p);
      r.append(out.reasoning());
      c.append(out.content());
    }
    var end = s.finish();
    return new String[] {r.append(end.reasoning()).toString(), c.append(end.content()).toString()};
  }

  @Test
  void qwen3ReasoningIsSplitEvenWhenATagIsCutAcrossPieces() {
    String[] whole = split(ReasoningFormat.QWEN3, "<think>\nLet me think.\n</think>\n\nThe answer is 4.");
    assertEquals("Let me think.\n", whole[0]);
    assertEquals("The answer is 4.", whole[1]);
    String[] cut = split(ReasoningFormat.QWEN3, "<thi", "nk>\nLet me", " think.\n</th", "ink>\n", "\nThe answer", " is 4.");
    assertEquals(whole[0], cut[0]);
    assertEquals(whole[1], cut[1]);
    String[] none = split(ReasoningFormat.QWEN3, "Just", " an answer with a < sign");
    assertEquals("", none[0]);
    assertEquals("Just an answer with a < sign", none[1]);
    String[] unfinished = split(ReasoningFormat.QWEN3, "<think>still thinking when max_tokens hit");
    assertEquals("still thinking when max_tokens hit", unfinished[0]);
    assertEquals("", unfinished[1]);
  }

  @Test
  void deepSeekR1OutputStartsInsideTheReasoning() {
    String[] r = split(ReasoningFormat.DEEPSEEK_R1, "First, 2+2.", "</think>", "4");
    assertEquals("First, 2+2.", r[0]);
    assertEquals("4", r[1]);
    assertEquals("x", split(ReasoningFormat.DEEPSEEK_R1, "<think>x</think>")[0]);
    assertEquals("<think>x</think>", split(ReasoningFormat.NONE, "<think>x</think>")[1]);
  }

  private record Result(String content, List<ToolCall> calls) {}

  private static Result extract(ToolCallFormat f, String... pieces) {
    ToolCallExtractor x = new ToolCallExtractor(f);
    StringBuilder content = new StringBuilder();
    List<ToolCall> calls = new ArrayList<>();
    for (String p : pieces) {
      var out = x.add(p);
      content.append(out.content());
      calls.addAll(out.calls());
    }
    var end = x.finish();
    content.append(end.content());
    calls.addAll(end.calls());
    return new Result(content.toString(), calls);
  }

  @Test
  void hermesCallsAreTakenOutOfTheContentAcrossPieces() throws Exception {
    Result r = extract(ToolCallFormat.HERMES, "Let me check. <tool", "_call>\n{\"name\": \"get_weather\", \"argu",
        "ments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>");
    assertEquals("Let me check. ", r.content());
    assertEquals(2, r.calls().size());
    assertEquals("get_weather", r.calls().get(0).name());
    assertEquals(JSON.readTree("{\"city\":\"Paris\"}"), JSON.readTree(r.calls().get(0).arguments()));
    assertEquals("{}", r.calls().get(1).arguments());
    assertTrue(r.calls().get(0).id().startsWith("call_") && !r.calls().get(0).id().equals(r.calls().get(1).id()));
  }

  @Test
  void malformedCallsStayContentAndAnUnclosedCallIsParsedAtTheEnd() {
    Result bad = extract(ToolCallFormat.HERMES, "<tool_call>{\"name\": oops}</tool_call> after");
    assertEquals("<tool_call>{\"name\": oops}</tool_call> after", bad.content());
    assertEquals(0, bad.calls().size());
    Result unclosed = extract(ToolCallFormat.HERMES, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}");
    assertEquals(1, unclosed.calls().size());
    assertEquals("", unclosed.content());
    Result truncated = extract(ToolCallFormat.HERMES, "<tool_call>\n{\"name\": \"f\", \"argu");
    assertEquals("<tool_call>\n{\"name\": \"f\", \"argu", truncated.content(), "never dropped");
  }

  @Test
  void otherFamilies() {
    Result llama = extract(ToolCallFormat.LLAMA3_JSON, "{\"name\": \"f\", \"parameters\": {\"x\": 2}}; {\"name\": \"g\", \"parameters\": {}}");
    assertEquals(List.of("f", "g"), llama.calls().stream().map(ToolCall::name).toList());
    assertEquals("Plain answer.", extract(ToolCallFormat.LLAMA3_JSON, "Plain", " answer.").content());
    Result mistral = extract(ToolCallFormat.MISTRAL, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"q\": \"x\"}}]");
    assertEquals(1, mistral.calls().size());
    Result py = extract(ToolCallFormat.PYTHONIC, "[get_weather(city='San Francisco', days=3, metric=True), now()]");
    assertEquals(List.of("get_weather", "now"), py.calls().stream().map(ToolCall::name).toList());
    assertEquals("{\"city\":\"San Francisco\",\"days\":3,\"metric\":true}", py.calls().get(0).arguments());
    assertEquals("[1, 2, 3]", extract(ToolCallFormat.PYTHONIC, "[1, 2, 3]").content(), "a list that is not calls is content");
  }

  /**
   * Phi-4-mini: a list of calls after {@code <|tool_call|>}, closed or not (the Berkeley
   * function-calling leaderboard's handler saw both, and objects without the list's brackets), or
   * after vLLM's {@code functools} marker; text before a call stays content.
   */
  @Test
  void phi4MiniCallsTaggedOrAfterFunctools() throws Exception {
    Result closed = extract(ToolCallFormat.PHI4_MINI_JSON, "I'll look. <|tool", "_call|>[{\"name\": \"get_weather\", \"argu",
        "ments\": {\"city\": \"Paris\"}}, {\"name\": \"now\", \"arguments\": {}}]<|/tool_", "call|>");
    assertEquals("I'll look. ", closed.content());
    assertEquals(List.of("get_weather", "now"), closed.calls().stream().map(ToolCall::name).toList());
    assertEquals(JSON.readTree("{\"city\":\"Paris\"}"), JSON.readTree(closed.calls().get(0).arguments()));
    Result unclosed = extract(ToolCallFormat.PHI4_MINI_JSON, "<|tool_call|>[{\"name\": \"now\", \"arguments\": {}}]");
    assertEquals(List.of("now"), unclosed.calls().stream().map(ToolCall::name).toList());
    assertEquals("", unclosed.content());
    Result bare = extract(ToolCallFormat.PHI4_MINI_JSON,
        "<|tool_call|>{\"name\": \"f\", \"arguments\": {\"a\": 1}}, {\"name\": \"g\", \"arguments\": {}}<|/tool_call|>");
    assertEquals(List.of("f", "g"), bare.calls().stream().map(ToolCall::name).toList(), "objects without the list's brackets");
    Result functools = extract(ToolCallFormat.PHI4_MINI_JSON, "functools[{\"name\": \"f\", \"arguments\": {\"q\": [1, 2]}}]");
    assertEquals(List.of("f"), functools.calls().stream().map(ToolCall::name).toList());
    assertEquals("{\"q\":[1,2]}", functools.calls().get(0).arguments());
    assertEquals("import functools\nfunctools.reduce(add, xs)", extract(ToolCallFormat.PHI4_MINI_JSON,
        "import functools\nfunc", "tools.reduce(add, xs)").content(), "the module's name in prose is content");
    Result truncated = extract(ToolCallFormat.PHI4_MINI_JSON, "<|tool_call|>[{\"name\": \"f\", \"argu");
    assertEquals("<|tool_call|>[{\"name\": \"f\", \"argu", truncated.content(), "never dropped");
    Result bad = extract(ToolCallFormat.PHI4_MINI_JSON, "<|tool_call|>[oops]<|/tool_call|> after");
    assertEquals("<|tool_call|>[oops]<|/tool_call|> after", bad.content());
  }

  @Test
  void autoDetectionFromTheChatTemplate() {
    String qwen3 = "{% if tools %}<tool_call>{% endif %}<think>";
    OutputParsers p = OutputParsers.resolve("auto", "auto", qwen3::contains);
    assertEquals(new OutputParsers(ReasoningFormat.QWEN3, ToolCallFormat.HERMES, true), p, "calls under auto constrained unless told");
    assertEquals(false, OutputParsers.resolve("auto", "auto", false, qwen3::contains).constrainedCalls());
    assertEquals(new OutputParsers(ReasoningFormat.NONE, ToolCallFormat.NONE, true), OutputParsers.resolve("auto", "auto", "{{ messages }}"::contains));
    assertEquals(ToolCallFormat.HERMES, OutputParsers.resolve("none", "qwen3", s -> false).toolCalls());
    String phi4Mini = "{% if message['role'] == 'system' and 'tools' in message %}{{ '<|tool|>' + message['tools'] + '<|/tool|>' }}";
    assertEquals(ToolCallFormat.PHI4_MINI_JSON, OutputParsers.resolve("auto", "auto", phi4Mini::contains).toolCalls());
    assertEquals(ToolCallFormat.PHI4_MINI_JSON, OutputParsers.resolve("auto", "phi4_mini_json", s -> false).toolCalls());
  }
}
