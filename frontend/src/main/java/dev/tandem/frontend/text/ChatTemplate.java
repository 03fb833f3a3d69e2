package dev.tandem.frontend.text;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A Hugging Face chat template ({@code tokenizer_config.json}'s {@code chat_template}) rendered
 * with Jinjava as {@code transformers} renders it: trim_blocks and lstrip_blocks on, {@code tojson}
 * as Python writes JSON, {@code raise_exception} and {@code strftime_now} defined, and the
 * template's Python-isms rewritten by {@link JinjaCompat}. One known difference remains: a boolean
 * printed directly renders as {@code true}, where Python prints {@code True}.
 *
 * <p>Thread-safe: rendering keeps no state between calls.
 */
public final class ChatTemplate {
  /**
   * The system message Microsoft's documentation for Phi-4-mini shows with tools, for a
   * conversation that has none of its own.
   */
  static final String TOOLS_SYSTEM_MESSAGE = "You are a helpful assistant with some tools.";

  private static final ObjectMapper ARGUMENTS = new ObjectMapper();

  private final String source;
  private final String compiled;
  private final boolean toolsInSystemMessage;
  private final boolean callsAsContent; // Phi-4-mini's: renders an assistant turn's content only
  private final String bosToken;
  private final String eosToken;
  private final Jinjava jinjava;
  private final boolean given; // by --chat-template, not the model's own

  /** A template that failed to render: {@code raise_exception}, or an error in the template. */
  public static final class TemplateFailure extends RuntimeException {
    public TemplateFailure(String message) {
      super(message);
    }
  }

  ChatTemplate(String source, String bosToken, String eosToken) {
    this(source, bosToken, eosToken, false);
  }

  private ChatTemplate(String source, String bosToken, String eosToken, boolean given) {
    this.source = source;
    this.given = given;
    // Jinja drops one trailing newline of a template (keep_trailing_newline is off); Jinjava keeps it.
    this.compiled =
        JinjaCompat.rewrite(source.endsWith("\n") ? source.substring(0, source.length() - 1) : source);
    this.bosToken = bosToken;
    this.eosToken = eosToken;
    this.jinjava = newJinjava();
    this.toolsInSystemMessage = source.contains("message['tools']") || source.contains("message[\"tools\"]")
        || source.contains("message.tools");
    this.callsAsContent = toolsInSystemMessage && !source.contains("tool_calls");
  }

  /**
   * Whether the deployment gave this template ({@code --chat-template}) rather than reading the
   * model's own: only such a one is a cross-encoder's score template, as in vLLM.
   */
  public boolean given() {
    return given;
  }

  /**
   * Reads the template and special tokens from a {@code tokenizer_config.json}.
   *
   * @throws IllegalArgumentException naming the field if there is no usable chat_template
   */
  public static ChatTemplate fromTokenizerConfig(byte[] tokenizerConfigJson, String source) {
    JsonNode config;
    try {
      config = new ObjectMapper().readTree(tokenizerConfigJson);
    } catch (IOException e) {
      throw new IllegalArgumentException(source + ": tokenizer_config.json is not valid JSON: " + e.getMessage(), e);
    }
    String template = templateIn(config);
    if (template == null) {
      throw noTemplate(source);
    }
    return new ChatTemplate(template, specialToken(config.get("bos_token")), specialToken(config.get("eos_token")));
  }

  /** tokenizer_config.json's {@code chat_template}: the string, or the one named "default" of a list; null when neither. */
  private static String templateIn(JsonNode config) {
    JsonNode t = config.get("chat_template");
    String template = null;
    if (t != null && t.isTextual()) {
      template = t.asText();
    } else if (t != null && t.isArray()) {
      for (JsonNode named : t) {
        if ("default".equals(named.path("name").asText())) {
          template = named.path("template").asText();
        }
      }
    }
    return template;
  }

  private static IllegalArgumentException noTemplate(String source) {
    return new IllegalArgumentException(source + ": tokenizer_config.json has no field 'chat_template' (or no 'default' one)");
  }

  /**
   * The template a served model renders chats with: {@code override} ({@code --chat-template})
   * where given, else {@code templateFile} (the model directory's chat_template.jinja), else
   * tokenizer_config.json's {@code chat_template}, each with tokenizer_config.json's special
   * tokens; null when there is none (the model then serves completions only).
   *
   * @throws IllegalArgumentException naming {@code source} when tokenizer_config.json is not JSON
   */
  public static ChatTemplate forModel(byte[] tokenizerConfigJson, String templateFile, String override, String source) {
    JsonNode config;
    try {
      config = new ObjectMapper().readTree(tokenizerConfigJson);
    } catch (IOException e) {
      throw new IllegalArgumentException(source + ": tokenizer_config.json is not valid JSON: " + e.getMessage(), e);
    }
    String bos = specialToken(config.get("bos_token"));
    String eos = specialToken(config.get("eos_token"));
    if (override != null && !override.isEmpty()) {
      return new ChatTemplate(override, bos, eos, true);
    }
    if (templateFile != null && !templateFile.isEmpty()) {
      return new ChatTemplate(templateFile, bos, eos);
    }
    String template = templateIn(config);
    if (template != null) {
      return new ChatTemplate(template, bos, eos);
    }
    JsonNode t = config.get("chat_template");
    if (t != null && !t.isNull() && !t.isArray()) {
      throw noTemplate(source); // a chat_template that is neither text nor a list: malformed, not absent
    }
    return null;
  }

  private static String specialToken(JsonNode node) {
    if (node == null || node.isNull()) {
      return "";
    }
    return node.isObject() ? node.path("content").asText("") : node.asText("");
  }

  public String source() {
    return source;
  }

  /**
   * A rendered conversation cut right after its final message's text, so that the model goes on
   * writing that message rather than starting a new one (vLLM's {@code continue_final_message}, as
   * Hugging Face's {@code apply_chat_template} does it): everything the template wrote after it
   * (the end of the turn, a generation prompt) is dropped. Where the template keeps the message's
   * own leading and trailing spaces they stay; where it trimmed them, the trimmed text ends it.
   *
   * @param finalText the final message's text (its last text part, for a list of parts)
   * @throws TemplateFailure if the text is empty or the template did not write it
   */
  public static String openFinalMessage(String rendered, String finalText) {
    String trimmed = finalText.strip();
    if (trimmed.isEmpty()) {
      throw new TemplateFailure("the final message has no text to continue");
    }
    int at = rendered.lastIndexOf(trimmed);
    if (at < 0) {
      throw new TemplateFailure("the final message's text does not appear in the conversation as the chat template renders it");
    }
    String kept = finalText.stripLeading();
    boolean spacingKept = rendered.startsWith(kept, at);
    return rendered.substring(0, at + (spacingKept ? kept.length() : trimmed.length()));
  }

  /** True if the template's text contains {@code s} (how a model family's output format is recognised). */
  public boolean mentions(String s) {
    return compiled.contains(s);
  }

  /**
   * Renders a conversation.
   *
   * @param messages OpenAI-style messages as plain maps (role, content, tool_calls...)
   * @param tools tool definitions, or null; a template that reads them from the system message
   *     (Phi-4-mini's: {@code message['tools']}, a JSON text of the functions) finds them there too,
   *     in a system message of its own when the conversation has none; where such a template
   *     renders no {@code tool_calls}, an earlier assistant turn's calls become its content, as
   *     Phi-4-mini writes them ({@code <|tool_call|>[…]<|/tool_call|>})
   * @param extra template variables such as {@code enable_thinking} (chat_template_kwargs)
   * @throws TemplateFailure if the template raises or cannot be rendered
   */
  public String render(
      List<Map<String, Object>> messages,
      List<Map<String, Object>> tools,
      boolean addGenerationPrompt,
      Map<String, Object> extra) {
    Map<String, Object> ctx = new HashMap<>();
    if (extra != null) {
      ctx.putAll(extra);
    }
    if (tools != null && !tools.isEmpty()) {
      ctx.put("tools", tools);
      if (toolsInSystemMessage) {
        messages = withToolsInSystemMessage(messages, tools);
      }
    }
    if (callsAsContent) {
      messages = withCallsAsContent(messages);
    }
    ctx.put("messages", messages);
    ctx.put("add_generation_prompt", addGenerationPrompt);
    ctx.put("bos_token", bosToken);
    ctx.put("eos_token", eosToken);
    RenderResult result;
    try {
      result = jinjava.renderForResult(compiled, ctx);
    } catch (TemplateFailure e) {
      throw e;
    } catch (RuntimeException e) {
      throw new TemplateFailure("chat template failed: " + rootMessage(e));
    }
    for (TemplateError error : result.getErrors()) {
      if (error.getSeverity() == TemplateError.ErrorType.FATAL) {
        Throwable cause = error.getException();
        TemplateFailure raised = findFailure(cause);
        if (raised != null) {
          throw raised;
        }
        throw new TemplateFailure(
            "chat template failed at line " + error.getLineno() + ": " + error.getMessage());
      }
    }
    return result.getOutput();
  }

  /**
   * The conversation with the functions of {@code tools} as JSON text in its system message's
   * {@code tools} (one the caller set there is kept), a system message added first if it has none.
   */
  static List<Map<String, Object>> withToolsInSystemMessage(List<Map<String, Object>> messages, List<Map<String, Object>> tools) {
    List<Object> functions = new ArrayList<>();
    for (Map<String, Object> tool : tools) {
      functions.add(tool.get("function") instanceof Map<?, ?> f ? f : tool);
    }
    String json = PythonJson.dumps(functions, null);
    List<Map<String, Object>> out = new ArrayList<>(messages);
    if (!out.isEmpty() && "system".equals(out.getFirst().get("role"))) {
      if (out.getFirst().get("tools") == null) {
        Map<String, Object> system = new LinkedHashMap<>(out.getFirst());
        system.put("tools", json);
        out.set(0, system);
      }
    } else {
      Map<String, Object> system = new LinkedHashMap<>();
      system.put("role", "system");
      system.put("content", TOOLS_SYSTEM_MESSAGE);
      system.put("tools", json);
      out.addFirst(system);
    }
    return out;
  }

  /** Assistant turns with tool calls and no content get the calls as content, in Phi-4-mini's syntax. */
  static List<Map<String, Object>> withCallsAsContent(List<Map<String, Object>> messages) {
    List<Map<String, Object>> out = new ArrayList<>(messages.size());
    for (Map<String, Object> m : messages) {
      Object content = m.get("content");
      if (!(m.get("tool_calls") instanceof List<?> calls) || calls.isEmpty() || (content != null && !"".equals(content))) {
        out.add(m);
        continue;
      }
      List<Object> written = new ArrayList<>();
      for (Object c : calls) {
        Object f = c instanceof Map<?, ?> call ? call.get("function") : null;
        if (f instanceof Map<?, ?> function) {
          Map<String, Object> w = new LinkedHashMap<>();
          w.put("name", function.get("name"));
          w.put("arguments", arguments(function.get("arguments")));
          written.add(w);
        }
      }
      Map<String, Object> turn = new LinkedHashMap<>(m);
      turn.put("content", "<|tool_call|>" + PythonJson.dumps(written, null) + "<|/tool_call|>");
      out.add(turn);
    }
    return out;
  }

  /** A call's arguments as an object: OpenAI sends them as JSON text. */
  private static Object arguments(Object arguments) {
    if (arguments instanceof String text) {
      try {
        return ARGUMENTS.readValue(text, Object.class);
      } catch (IOException e) {
        return text; // not JSON: written as the string it is
      }
    }
    return arguments;
  }

  private static TemplateFailure findFailure(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof TemplateFailure f) {
        return f;
      }
    }
    return null;
  }

  private static String rootMessage(Throwable t) {
    Throwable c = t;
    while (c.getCause() != null) {
      c = c.getCause();
    }
    return c.getMessage();
  }

  private static Jinjava newJinjava() {
    JinjavaConfig config =
        JinjavaConfig.newBuilder()
            .withTrimBlocks(true)
            .withLstripBlocks(true)
            .withNestedInterpretationEnabled(false)
            .withFailOnUnknownTokens(false)
            .withLegacyOverrides(
                LegacyOverrides.newBuilder()
                    .withUseTrimmingForNotesAndExpressions(true)
                    .withUseNaturalOperatorPrecedence(true)
                    .withParseWhitespaceControlStrictly(true)
                    .withAllowAdjacentTextNodes(true)
                    .withKeepNullableLoopValues(true)
                    .withHandleBackslashInQuotesOnly(true)
                    .withUsePyishObjectMapper(true)
                    .build())
            .build();
    Jinjava jinjava = new Jinjava(config);
    var context = jinjava.getGlobalContext();
    for (var entry : JinjaCompat.METHODS.entrySet()) {
      int arity = entry.getValue() + 1;
      Class<?>[] params = new Class<?>[arity];
      java.util.Arrays.fill(params, Object.class);
      context.registerFunction(
          new ELFunctionDefinition("", "py_" + entry.getKey(), PyFunctions.class, entry.getKey(), params));
    }
    context.registerFunction(
        new ELFunctionDefinition(
            "", "py_slice", PyFunctions.class, "slice", Object.class, Object.class, Object.class, Object.class));
    context.registerFunction(
        new ELFunctionDefinition("", "raise_exception", PyFunctions.class, "raiseException", Object.class));
    context.registerFunction(
        new ELFunctionDefinition("", "strftime_now", PyFunctions.class, "strftimeNow", Object.class));
    context.registerFilter(new ToJsonFilter());
    return jinjava;
  }

  /** Hugging Face's tojson: Python's json.dumps with ensure_ascii off. */
  private static final class ToJsonFilter implements Filter {
    @Override
    public String getName() {
      return "tojson";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
      Integer indent = args.length > 0 && args[0] != null ? Integer.valueOf(args[0]) : null;
      return PythonJson.dumps(var, indent);
    }

    @Override
    public Object filter(
        Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
      Object indent = kwargs.getOrDefault("indent", args.length > 0 ? args[0] : null);
      return PythonJson.dumps(var, indent == null ? null : ((Number) indent).intValue());
    }
  }
}
