package dev.tandem.frontend.openai;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.common.StructuredOutput;
import dev.tandem.engine.grammar.Grammar;
import dev.tandem.engine.grammar.GrammarException;
import dev.tandem.engine.grammar.JsonSchemaGrammar;
import dev.tandem.frontend.http.ApiException;
import dev.tandem.frontend.parse.ToolCallFormat;
import dev.tandem.frontend.text.TextTokenizer;

/**
 * The request parameters that constrain the output — {@code response_format} and a forced
 * {@code tool_choice} — checked and turned into a {@link StructuredOutput}. Each schema is compiled
 * here too, so that an unsupported keyword, a schema over the limits, or a {@code max_tokens} too
 * small for the shortest valid output is a 400 naming the parameter before anything runs.
 *
 * <p>Thread-safe: its only state is a small cache of compiled schemas.
 */
final class StructuredOutputs {
  private static final ObjectMapper JSON = new ObjectMapper();
  /** Schemas compiled recently (clients send the same few again and again); guarded by itself. */
  private static final java.util.Map<StructuredOutput, Grammar> COMPILED = new java.util.LinkedHashMap<>(64, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(java.util.Map.Entry<StructuredOutput, Grammar> eldest) {
      return size() > 256;
    }
  };

  private StructuredOutputs() {}

  /** What {@code tool_choice} asks for. */
  record ToolChoice(Kind kind, String function) {
    enum Kind { AUTO, NONE, REQUIRED, NAMED }

    static final ToolChoice AUTO = new ToolChoice(Kind.AUTO, null);

    boolean forced() {
      return kind == Kind.REQUIRED || kind == Kind.NAMED;
    }
  }

  /** {@code response_format}: null for text, else the constraint. */
  static StructuredOutput responseFormat(JsonNode rf) {
    if (rf == null || rf.isNull()) {
      return null;
    }
    if (!rf.isObject() || !rf.path("type").isTextual()) {
      throw ApiException.invalid("response_format", "'response_format' must be an object with a 'type'.");
    }
    return switch (rf.get("type").asText()) {
      case "text" -> null;
      case "json_object" -> StructuredOutput.JSON_OBJECT;
      case "json_schema" -> {
        JsonNode js = rf.get("json_schema");
        if (js == null || !js.isObject()) {
          throw ApiException.invalid("response_format.json_schema", "Missing required parameter: 'response_format.json_schema'.",
              "missing_required_parameter");
        }
        JsonNode schema = js.get("schema");
        if (schema == null || schema.isNull()) {
          schema = JSON.createObjectNode(); // OpenAI: an absent schema means any JSON
        }
        if (!schema.isObject() && !schema.isBoolean()) {
          throw ApiException.invalid("response_format.json_schema.schema", "The schema must be a JSON object.");
        }
        yield StructuredOutput.jsonSchema(schema.toString());
      }
      default -> throw ApiException.invalid("response_format",
          "Invalid value for 'response_format.type': expected one of text, json_object, json_schema, but got '"
              + rf.get("type").asText() + "'.");
    };
  }

  /** {@code tool_choice}, checked against the offered tools. */
  static ToolChoice toolChoice(JsonNode choice, JsonNode tools) {
    boolean offered = tools != null && tools.isArray() && !tools.isEmpty();
    if (choice == null || choice.isNull()) {
      return offered ? ToolChoice.AUTO : new ToolChoice(ToolChoice.Kind.NONE, null);
    }
    ToolChoice c;
    if (choice.isTextual()) {
      c = switch (choice.asText()) {
        case "auto" -> ToolChoice.AUTO;
        case "none" -> new ToolChoice(ToolChoice.Kind.NONE, null);
        case "required" -> new ToolChoice(ToolChoice.Kind.REQUIRED, null);
        default -> throw ApiException.invalid("tool_choice",
            "Invalid value for 'tool_choice': expected none, auto, required or a named function, but got '" + choice.asText() + "'.");
      };
    } else if (choice.isObject() && choice.path("function").path("name").isTextual()) {
      c = new ToolChoice(ToolChoice.Kind.NAMED, choice.get("function").get("name").asText());
    } else {
      throw ApiException.invalid("tool_choice", "'tool_choice' must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": …}}.");
    }
    if (c.forced() && !offered) {
      throw ApiException.invalid("tool_choice", "'tool_choice' " + (c.kind() == ToolChoice.Kind.NAMED ? "names a function" : "is required")
          + " but no tools were given.");
    }
    if (c.kind() == ToolChoice.Kind.NAMED && function(tools, c.function()) == null) {
      throw ApiException.invalid("tool_choice", "Tool choice '" + c.function() + "' is not among the offered tools.");
    }
    return c;
  }

  /**
   * The constraint for a forced tool call: one call of an offered function (the named one), its
   * arguments valid under that function's parameters, written in the model family's format.
   */
  static StructuredOutput forcedCall(ToolChoice choice, JsonNode tools, ToolCallFormat format) {
    String argumentsKey = switch (format) {
      case HERMES, PHI4_MINI_JSON -> "arguments";
      case LLAMA3_JSON -> "parameters";
      default -> throw ApiException.unsupportedParameter("tool_choice", "'tool_choice' " + choice.kind().name().toLowerCase(java.util.Locale.ROOT)
          + " needs a model whose tool calls are parsed as hermes, llama3_json or phi4_mini_json; this one's are "
          + format.flagName() + " (set --tool-call-parser).");
    };
    ArrayNode alternatives = JSON.createArrayNode();
    for (int i = 0; i < tools.size(); i++) {
      JsonNode f = tools.get(i).get("function");
      String name = f.get("name").asText();
      if (choice.kind() == ToolChoice.Kind.NAMED && !name.equals(choice.function())) {
        continue;
      }
      JsonNode params = f.has("parameters") && !f.get("parameters").isNull() ? f.get("parameters") : JSON.createObjectNode().put("type", "object");
      compile("", params.toString(), "", "tools[" + i + "].function.parameters");
      ObjectNode call = alternatives.addObject();
      call.put("type", "object");
      ObjectNode props = call.putObject("properties");
      props.putObject("name").put("const", name);
      props.set(argumentsKey, params);
      call.putArray("required").add("name").add(argumentsKey);
    }
    ObjectNode schema = JSON.createObjectNode();
    if (alternatives.size() == 1) {
      schema = (ObjectNode) alternatives.get(0);
    } else {
      schema.set("anyOf", alternatives);
    }
    return switch (format) {
      case HERMES -> new StructuredOutput(schema.toString(), "<tool_call>\n", "\n</tool_call>");
      // As plain text: the tagged form's markers may be special tokens, which no grammar writes.
      case PHI4_MINI_JSON -> new StructuredOutput(schema.toString(), "functools[", "]");
      default -> StructuredOutput.jsonSchema(schema.toString());
    };
  }

  /**
   * Compiles the constraint (to refuse what the engine would) and checks that {@code maxTokens}
   * leaves room for its shortest output, in this model's tokens, and the end token. Within a
   * budget that allows it, the engine steers the output to a valid end.
   */
  static void check(StructuredOutput c, String param, int maxTokens, String maxTokensParam, TextTokenizer tokenizer) {
    Grammar g = compile(c.prefix(), c.jsonSchema(), c.suffix(), param);
    if (g.minLength() + 1 <= maxTokens) {
      return; // one byte per token is the worst case
    }
    int tokens = tokenizer.encode(g.shortestExample(), false).length;
    if (tokens + 1 > maxTokens) {
      throw ApiException.invalid(maxTokensParam, "'" + maxTokensParam + "' is " + maxTokens + " but the shortest output valid under '"
          + param + "' takes " + tokens + " tokens and the end of the sequence one more.");
    }
  }

  private static Grammar compile(String prefix, String schema, String suffix, String param) {
    StructuredOutput key = new StructuredOutput(schema, prefix, suffix);
    synchronized (COMPILED) {
      Grammar g = COMPILED.get(key);
      if (g != null) {
        return g;
      }
    }
    try {
      Grammar g = JsonSchemaGrammar.compile(prefix, schema, suffix);
      synchronized (COMPILED) {
        COMPILED.put(key, g);
      }
      return g;
    } catch (GrammarException e) {
      String at = e.path().isEmpty() ? param : param + " (at " + e.path() + ")";
      throw ApiException.invalid(param, "Invalid schema in '" + at + "': " + e.getMessage().replace(" (at " + e.path() + ")", "") + ".");
    }
  }

  private static JsonNode function(JsonNode tools, String name) {
    for (JsonNode t : tools) {
      if (name.equals(t.path("function").path("name").asText(null))) {
        return t;
      }
    }
    return null;
  }
}
