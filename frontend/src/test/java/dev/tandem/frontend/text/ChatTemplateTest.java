package dev.tandem.frontend.text;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.engine.ModelFiles;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

/**
 * The Qwen3 and Gemma 3 chat templates rendered by Jinjava must equal what Jinja2 renders with
 * Hugging Face's settings; expected outputs come from src/test/python/render_chat_golden.py.
 */
class ChatTemplateTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  record Case(String name, List<Map<String, Object>> messages, List<Map<String, Object>> tools,
      boolean addGenerationPrompt, Map<String, Object> kwargs) {
    @Override
    public String toString() {
      return name;
    }
  }

  private static <T> T resource(String path, TypeReference<T> type) throws IOException {
    try (InputStream in = ChatTemplateTest.class.getResourceAsStream(path)) {
      return JSON.readValue(in, type);
    }
  }

  static Stream<Case> cases(String file) throws IOException {
    List<Map<String, Object>> raw = resource(file, new TypeReference<>() {});
    return raw.stream().map(c -> new Case(
        (String) c.get("name"),
        castList(c.get("messages")),
        castList(c.get("tools")),
        (Boolean) c.get("add_generation_prompt"),
        cast(c.getOrDefault("kwargs", Map.of()))));
  }

  static Stream<Case> qwen3Cases() throws IOException {
    return cases("/chat/cases.json");
  }

  @SuppressWarnings("unchecked")
  private static List<Map<String, Object>> castList(Object o) {
    return (List<Map<String, Object>>) o;
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> cast(Object o) {
    return (Map<String, Object>) o;
  }

  private static final ChatTemplate QWEN3 =
      ChatTemplate.fromTokenizerConfig(ModelFiles.bundledQwen3().tokenizerConfigJson(), "qwen3");

  @ParameterizedTest(name = "{0}")
  @MethodSource("qwen3Cases")
  void qwen3MatchesJinja2(Case c) throws IOException {
    Map<String, String> expected = resource("/chat/qwen3_expected.json", new TypeReference<>() {});
    assertEquals(expected.get(c.name()), QWEN3.render(c.messages(), c.tools(), c.addGenerationPrompt(), c.kwargs()));
  }

  @Test
  void pythonIsmsMatchJinja2() throws IOException {
    String source;
    try (InputStream in = getClass().getResourceAsStream("/chat/compat_template.jinja")) {
      source = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    ChatTemplate template = new ChatTemplate(source, "", "");
    Map<String, String> expected = resource("/chat/compat_expected.json", new TypeReference<>() {});
    Case c = cases("/chat/compat_cases.json").findFirst().orElseThrow();
    assertEquals(expected.get("compat"), template.render(c.messages(), null, false, Map.of()));
  }

  static Stream<Case> gemma3Cases() throws IOException {
    return cases("/chat/gemma3_cases.json");
  }

  /** Gemma 3's template: system folded into the first user turn, "model" turns, BOS from the template. */
  @ParameterizedTest(name = "{0}")
  @MethodSource("gemma3Cases")
  void gemma3MatchesJinja2(Case c) throws IOException {
    Map<String, String> expected = resource("/chat/gemma3_expected.json", new TypeReference<>() {});
    assertEquals(expected.get(c.name()), gemma3().render(c.messages(), null, c.addGenerationPrompt(), Map.of()));
  }

  static Stream<Case> phi4MiniCases() throws IOException {
    return cases("/chat/phi4_mini_cases.json");
  }

  /**
   * Phi-4-mini's template reads the tools from the system message, not the request's {@code
   * tools}: rendered from the request as it comes (tools beside the messages, an earlier call as
   * {@code tool_calls}), it matches Jinja2 rendering the conversation as Microsoft documents it.
   */
  @ParameterizedTest(name = "{0}")
  @MethodSource("phi4MiniCases")
  void phi4MiniFindsTheToolsInItsSystemMessage(Case c) throws IOException {
    Map<String, String> expected = resource("/chat/phi4_mini_expected.json", new TypeReference<>() {});
    ChatTemplate phi4Mini = template("/chat/phi4_mini_template.jinja", "", "<|endoftext|>");
    assertEquals(expected.get(c.name()), phi4Mini.render(c.messages(), c.tools(), c.addGenerationPrompt(), Map.of()));
  }

  @Test
  void gemma3RefusesTurnsThatDoNotAlternate() throws IOException {
    var e = assertThrows(ChatTemplate.TemplateFailure.class, () -> gemma3().render(
        List.of(Map.of("role", "user", "content", "a"), Map.of("role", "user", "content", "b")), null, true, Map.of()));
    assertEquals("Conversation roles must alternate user/assistant/user/assistant/...", e.getMessage());
  }

  private static ChatTemplate gemma3() throws IOException {
    return template("/chat/gemma3_template.jinja", "<bos>", "<eos>");
  }

  private static ChatTemplate template(String resource, String bos, String eos) throws IOException {
    try (InputStream in = ChatTemplateTest.class.getResourceAsStream(resource)) {
      return new ChatTemplate(new String(in.readAllBytes(), StandardCharsets.UTF_8), bos, eos);
    }
  }

  @Test
  void theFinalMessageIsLeftOpenForTheModelToContinue() {
    var chat = List.<Map<String, Object>>of(Map.of("role", "user", "content", "Name a colour."),
        Map.of("role", "assistant", "content", "The colour is "));
    String rendered = QWEN3.render(chat, null, false, Map.of("enable_thinking", false));
    assertTrue(rendered.endsWith("The colour is <|im_end|>\n"), rendered);
    assertEquals(rendered.substring(0, rendered.length() - "<|im_end|>\n".length()), ChatTemplate.openFinalMessage(rendered, "The colour is "),
        "the end of the turn dropped; Qwen3's template keeps the message's spacing, so it stays");
    ChatTemplate trims = new ChatTemplate("{% for m in messages %}[{{ m['role'] }}]{{ m['content'] | trim }}[end]{% endfor %}", "", "");
    var spaced = List.<Map<String, Object>>of(Map.of("role", "assistant", "content", "Sure, "));
    assertEquals("[assistant]Sure,", ChatTemplate.openFinalMessage(trims.render(spaced, null, false, Map.of()), "Sure, "),
        "a template that trims the text: the trimmed text ends the prompt");
    var missing = assertThrows(ChatTemplate.TemplateFailure.class, () -> ChatTemplate.openFinalMessage("[user]hi[end]", "absent"));
    assertTrue(missing.getMessage().contains("does not appear"), missing.getMessage());
    assertThrows(ChatTemplate.TemplateFailure.class, () -> ChatTemplate.openFinalMessage("[user]hi[end]", "  "));
  }

  @Test
  void raiseExceptionSurfacesTheTemplatesMessage() {
    ChatTemplate t = new ChatTemplate(
        "{% if messages[0].role != 'user' %}{{ raise_exception('Conversations must start with a user message') }}{% endif %}ok", "", "");
    var e = assertThrows(ChatTemplate.TemplateFailure.class,
        () -> t.render(List.of(Map.of("role", "assistant", "content", "x")), null, true, Map.of()));
    assertEquals("Conversations must start with a user message", e.getMessage());
    assertEquals("ok", t.render(List.of(Map.of("role", "user", "content", "x")), null, true, Map.of()));
  }

  @Test
  void aModelsTemplateIsTheOverrideElseItsJinjaFileElseTokenizerConfigsElseNone() {
    byte[] config = "{\"bos_token\": \"<s>\", \"chat_template\": \"config:{{ messages[0]['content'] }}\"}".getBytes(StandardCharsets.UTF_8);
    byte[] bare = "{\"bos_token\": \"<s>\"}".getBytes(StandardCharsets.UTF_8);
    List<Map<String, Object>> hi = List.of(Map.of("role", "user", "content", "hi"));
    String file = "{{ bos_token }}file:{{ messages[0]['content'] }}";
    assertEquals("config:hi", ChatTemplate.forModel(config, "", null, "m").render(hi, null, false, Map.of()));
    assertEquals("<s>file:hi", ChatTemplate.forModel(config, file, null, "m").render(hi, null, false, Map.of()),
        "chat_template.jinja over tokenizer_config.json, with its special tokens");
    assertEquals("<s>flag:hi", ChatTemplate.forModel(config, file, "{{ bos_token }}flag:{{ messages[0]['content'] }}", "m")
        .render(hi, null, false, Map.of()), "--chat-template over both");
    assertEquals(null, ChatTemplate.forModel(bare, "", null, "m"), "none at all");
    byte[] namedOnly = "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"x\"}]}".getBytes(StandardCharsets.UTF_8);
    assertEquals(null, ChatTemplate.forModel(namedOnly, "", null, "m"), "named templates but no 'default'");
  }

  @Test
  void missingChatTemplateNamesTheField() {
    var e = assertThrows(IllegalArgumentException.class,
        () -> ChatTemplate.fromTokenizerConfig("{\"eos_token\": \"x\"}".getBytes(StandardCharsets.UTF_8), "/models/m"));
    assertTrue(e.getMessage().contains("/models/m") && e.getMessage().contains("chat_template"), e.getMessage());
  }
}
