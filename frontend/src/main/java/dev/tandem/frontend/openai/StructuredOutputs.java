package dev.tandem.frontend.openai;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.common.StructuredOutput;
import dev.tandem.engine.grammar.Grammar;
import dev.tandem.engine.grammar.GrammarException;
import dev.tandem.engine.grammar.OutputGrammars;
import dev.tandem.frontend.http.ApiException;
import dev.tandem.frontend.parse.ToolCallFormat;
import dev.tandem.frontend.text.TextTokenizer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The request parameters that constrain the output — {@code response_format}, vLLM's {@code
 * structured_outputs} (and the {@code guided_*} fields it replaced) and a forced {@code
 * tool_choice} — checked and turned into a {@link StructuredOutput}. Each constraint is compiled
 * here too, so that an unsupported keyword, a constraint over the limits, or a {@code max_tokens}
 * too small for the shortest valid output is a 400 naming the parameter before anything runs.
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

  /** Fields of vLLM's {@code structured_outputs} that each give the constraint. */
  private static final List<String> KINDS = List.of("json", "regex", "choice", "grammar", "json_object", "structural_tag");
  /** Fields of {@code structured_outputs} that tune how a constraint is enforced. */
  private static final List<String> OPTIONS = List.of("disable_fallback", "disable_any_whitespace", "disable_additional_properties",
      "whitespace_pattern");
  /** vLLM's fields before {@code structured_outputs} (removed in its v0.12), and what each became (in this order). */
  private static final List<Map.Entry<String, String>> GUIDED = List.of(Map.entry("guided_json", "json"),
      Map.entry("guided_regex", "regex"), Map.entry("guided_choice", "choice"), Map.entry("guided_grammar", "grammar"),
      Map.entry("guided_whitespace_pattern", "whitespace_pattern"));

  /** A constraint and the parameter it came from (what errors name). */
  record Requested(StructuredOutput constraint, String param) {}

  /**
   * vLLM's {@code structured_outputs} — exactly one of {@code json} (a schema, or its text),
   * {@code regex}, {@code choice}, {@code grammar} (EBNF), {@code json_object: true} — or one of
   * the {@code guided_json}, {@code guided_regex}, {@code guided_choice}, {@code guided_grammar}
   * fields it replaced; null when the request has none. {@code guided_decoding_backend} and {@code
   * disable_fallback} choose among vLLM's grammar backends and are accepted without effect (there
   * is one here); options that would change the output ({@code disable_any_whitespace}, {@code
   * whitespace_pattern}) are refused. {@code structural_tag} is a structural tag (its JSON text,
   * as vLLM takes it, or the object).
   */
  static Requested vllmStructuredOutputs(ObjectNode body) {
    List<Requested> found = new ArrayList<>();
    JsonNode so = body.get("structured_outputs");
    if (so != null && !so.isNull()) {
      if (!so.isObject()) {
        throw ApiException.invalid("structured_outputs", "'structured_outputs' must be an object.");
      }
      for (var it = so.fieldNames(); it.hasNext(); ) {
        String field = it.next();
        JsonNode v = so.get(field);
        if (v.isNull() || (field.equals("json_object") && v.isBoolean() && !v.asBoolean())) {
          continue;
        }
        String param = "structured_outputs." + field;
        if (KINDS.contains(field)) {
          found.add(new Requested(constraint(field, v, param), param));
        } else if (field.equals("disable_fallback")) {
          if (!v.isBoolean()) {
            throw ApiException.invalid(param, "'" + param + "' must be a boolean.");
          }
        } else if (OPTIONS.contains(field)) {
          if (!(v.isBoolean() && !v.asBoolean())) {
            throw ApiException.unsupportedParameter(param, "'" + param + "' is not supported" + (field.equals("disable_additional_properties")
                ? ": an object schema with 'properties' allows no others unless 'additionalProperties' says so."
                : ": JSON output allows up to 12 spaces, tabs or newlines after { [ , : and before } ]."));
          }
        } else {
          throw ApiException.invalid(param, "Unknown field '" + field + "' in 'structured_outputs' (expected one of json, regex, choice,"
              + " grammar, json_object, structural_tag).");
        }
      }
    }
    for (Map.Entry<String, String> g : GUIDED) {
      JsonNode v = body.get(g.getKey());
      if (v == null || v.isNull()) {
        continue;
      }
      if (g.getValue().equals("whitespace_pattern")) {
        throw ApiException.unsupportedParameter(g.getKey(), "'" + g.getKey() + "' is not supported: JSON output allows up to 12 spaces,"
            + " tabs or newlines after { [ , : and before } ].");
      }
      found.add(new Requested(constraint(g.getValue(), v, g.getKey()), g.getKey()));
    }
    JsonNode backend = body.get("guided_decoding_backend");
    if (backend != null && !backend.isNull() && !backend.isTextual()) {
      throw ApiException.invalid("guided_decoding_backend", "'guided_decoding_backend' must be a string.");
    }
    if (found.size() > 1) {
      throw ApiException.invalid(found.get(1).param(), "Only one kind of structured output may be given; got '" + found.get(0).param()
          + "' and '" + found.get(1).param() + "'.");
    }
    return found.isEmpty() ? null : found.get(0);
  }

  private static StructuredOutput constraint(String kind, JsonNode v, String param) {
    return switch (kind) {
      case "json" -> {
        if (v.isTextual()) {
          yield StructuredOutput.jsonSchema(v.asText());
        }
        if (!v.isObject() && !v.isBoolean()) {
          throw ApiException.invalid(param, "'" + param + "' must be a JSON schema (an object, or its text).");
        }
        yield StructuredOutput.jsonSchema(v.toString());
      }
      case "regex" -> StructuredOutput.regex(text(v, param, "a regular expression"));
      case "grammar" -> StructuredOutput.grammar(text(v, param, "an EBNF grammar"));
      case "choice" -> {
        if (!v.isArray() || v.isEmpty()) {
          throw ApiException.invalid(param, "'" + param + "' must be a non-empty list of strings.");
        }
        for (JsonNode c : v) {
          if (!c.isTextual()) {
            throw ApiException.invalid(param, "'" + param + "' must be a non-empty list of strings.");
          }
        }
        yield StructuredOutput.choice(v.toString());
      }
      case "json_object" -> {
        if (!v.isBoolean()) {
          throw ApiException.invalid(param, "'" + param + "' must be a boolean.");
        }
        yield StructuredOutput.JSON_OBJECT;
      }
      case "structural_tag" -> {
        JsonNode tag = v;
        if (v.isTextual()) {
          try {
            tag = JSON.readTree(v.asText());
          } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw ApiException.invalid(param, "'" + param + "' must be a structural tag (an object, or its JSON text): "
                + e.getOriginalMessage());
          }
        }
        if (tag == null || !tag.isObject()) {
          throw ApiException.invalid(param, "'" + param + "' must be a structural tag (an object, or its JSON text).");
        }
        yield structuralTag(tag, param);
      }
      default -> throw ApiException.unsupportedParameter(param, "'" + param + "' is not supported (supported: json, regex, choice,"
          + " grammar, json_object, structural_tag).");
    };
  }

  /**
   * A structural tag in the form vLLM documents: {@code structures} (each {@code begin}, {@code
   * schema}, {@code end}) and {@code triggers}; xgrammar's later form (a {@code format} tree) is
   * refused by name.
   */
  private static StructuredOutput structuralTag(JsonNode tag, String param) {
    if (tag.has("format")) {
      throw ApiException.unsupportedParameter(param + ".format", "'" + param + ".format' (xgrammar's structural tag formats) is not"
          + " supported: give 'structures' (each with 'begin', 'schema' and 'end') and 'triggers'.");
    }
    com.fasterxml.jackson.databind.node.ObjectNode spec = JSON.createObjectNode();
    spec.set("structures", tag.get("structures"));
    spec.set("triggers", tag.get("triggers"));
    return StructuredOutput.structuralTag(spec.toString());
  }

  private static String text(JsonNode v, String param, String what) {
    if (!v.isTextual() || v.asText().isEmpty()) {
      throw ApiException.invalid(param, "'" + param + "' must be " + what + " (a non-empty string).");
    }
    return v.asText();
  }

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
      case "structural_tag" -> structuralTag(rf, "response_format");
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
          "Invalid value for 'response_format.type': expected one of text, json_object, json_schema, structural_tag, but got '"
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
    for (int i = 0; i < tools.size(); i++) {
      JsonNode f = tools.get(i).get("function");
      if (choice.kind() != ToolChoice.Kind.NAMED || f.get("name").asText().equals(choice.function())) {
        compile(StructuredOutput.jsonSchema(parameters(f).toString()), "tools[" + i + "].function.parameters");
      }
    }
    ObjectNode schema = callSchema(tools, choice.kind() == ToolChoice.Kind.NAMED ? choice.function() : null, argumentsKey);
    return switch (format) {
      case HERMES -> new StructuredOutput(schema.toString(), "<tool_call>\n", "\n</tool_call>");
      // As plain text: the tagged form's markers may be special tokens, which no grammar writes.
      case PHI4_MINI_JSON -> new StructuredOutput(schema.toString(), "functools[", "]");
      default -> StructuredOutput.jsonSchema(schema.toString());
    };
  }

  /** One call of an offered function (only {@code only}, where not null): its name, and arguments valid under its parameters. */
  private static ObjectNode callSchema(JsonNode tools, String only, String argumentsKey) {
    ArrayNode alternatives = JSON.createArrayNode();
    for (JsonNode t : tools) {
      JsonNode f = t.get("function");
      String name = f.get("name").asText();
      if (only != null && !name.equals(only)) {
        continue;
      }
      ObjectNode call = alternatives.addObject();
      call.put("type", "object");
      ObjectNode props = call.putObject("properties");
      props.putObject("name").put("const", name);
      props.set(argumentsKey, parameters(f));
      call.putArray("required").add("name").add(argumentsKey);
    }
    if (alternatives.size() == 1) {
      return (ObjectNode) alternatives.get(0);
    }
    ObjectNode schema = JSON.createObjectNode();
    schema.set("anyOf", alternatives);
    return schema;
  }

  private static JsonNode parameters(JsonNode function) {
    return function.has("parameters") && !function.get("parameters").isNull() ? function.get("parameters")
        : JSON.createObjectNode().put("type", "object");
  }

  /**
   * Under {@code tool_choice: auto}, the tool calls a Hermes-format model writes held to the
   * offered tools: free text, and wherever it writes {@code <tool_call>}, one call — an offered
   * function's name and arguments valid under its parameters — then {@code </tool_call>}; with
   * {@code oneCall} ({@code parallel_tool_calls: false}) the output ends after the first. Null
   * where the format is not Hermes or the tools' schemas use what the grammar does not support
   * (the calls then stay free, as before, rather than the request failing).
   */
  static StructuredOutput autoCalls(JsonNode tools, ToolCallFormat format, boolean oneCall) {
    if (format != ToolCallFormat.HERMES) {
      return null;
    }
    ObjectNode tag = JSON.createObjectNode();
    ObjectNode structure = tag.putArray("structures").addObject();
    structure.put("begin", "<tool_call>\n");
    structure.set("schema", callSchema(tools, null, "arguments"));
    structure.put("end", "\n</tool_call>");
    tag.putArray("triggers").add("<tool_call>");
    if (oneCall) {
      tag.put("stop_after_first", true);
    }
    StructuredOutput c = StructuredOutput.structuralTag(tag.toString());
    try {
      compile(c, "tools");
      return c;
    } catch (ApiException e) {
      return null;
    }
  }

  /**
   * Compiles the constraint (to refuse what the engine would) and checks that {@code maxTokens}
   * leaves room for its shortest output, in this model's tokens, and the end token. Within a
   * budget that allows it, the engine steers the output to a valid end.
   */
  static void check(StructuredOutput c, String param, int maxTokens, String maxTokensParam, TextTokenizer tokenizer) {
    Grammar g = compile(c, param);
    if (g.minLength() + 1 <= maxTokens) {
      return; // one byte per token is the worst case
    }
    int tokens = tokenizer.encode(g.shortestExample(), false).length;
    if (tokens + 1 > maxTokens) {
      throw ApiException.invalid(maxTokensParam, "'" + maxTokensParam + "' is " + maxTokens + " but the shortest output valid under '"
          + param + "' takes " + tokens + " tokens and the end of the sequence one more.");
    }
  }

  private static Grammar compile(StructuredOutput key, String param) {
    synchronized (COMPILED) {
      Grammar g = COMPILED.get(key);
      if (g != null) {
        return g;
      }
    }
    try {
      Grammar g = OutputGrammars.compile(key);
      synchronized (COMPILED) {
        COMPILED.put(key, g);
      }
      return g;
    } catch (GrammarException e) {
      String at = e.path().isEmpty() ? param : param + " (at " + e.path() + ")";
      String what = switch (key.kind()) {
        case JSON_SCHEMA -> "schema";
        case REGEX -> "regular expression";
        case CHOICE -> "choice";
        case GRAMMAR -> "grammar";
        case STRUCTURAL_TAG -> "structural tag";
      };
      throw ApiException.invalid(param, "Invalid " + what + " in '" + at + "': " + e.getMessage().replace(" (at " + e.path() + ")", "") + ".");
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
