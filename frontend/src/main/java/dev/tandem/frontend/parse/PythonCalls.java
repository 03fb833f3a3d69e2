package dev.tandem.frontend.parse;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;

/**
 * Parses pythonic tool calls, {@code [get_weather(city="Paris", days=3), now()]}: keyword
 * arguments whose values are Python literals (strings, numbers, True/False/None, lists, dicts).
 * Anything else — positional arguments, expressions — is not a call (null).
 */
final class PythonCalls {
  private static final JsonNodeFactory NODES = new ObjectMapper().getNodeFactory();
  private final String s;
  private int at;

  private PythonCalls(String s) {
    this.s = s;
  }

  /** The calls, or null if {@code text} is not a list of calls. */
  static List<ToolCall> parse(String text) {
    PythonCalls p = new PythonCalls(text.strip());
    try {
      List<ToolCall> calls = p.list();
      p.space();
      return p.at == p.s.length() ? calls : null;
    } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
      return null;
    }
  }

  private List<ToolCall> list() {
    expect('[');
    List<ToolCall> out = new ArrayList<>();
    space();
    while (peek() != ']') {
      String name = identifier();
      expect('(');
      ObjectNode args = NODES.objectNode();
      space();
      while (peek() != ')') {
        String key = identifier();
        expect('=');
        args.set(key, value());
        space();
        if (peek() == ',') {
          at++;
          space();
        }
      }
      at++;
      out.add(ToolCall.of(name, args.toString()));
      space();
      if (peek() == ',') {
        at++;
        space();
      }
    }
    at++;
    return out;
  }

  private JsonNode value() {
    space();
    char c = peek();
    if (c == '"' || c == '\'') {
      return NODES.textNode(string());
    }
    if (c == '[' || c == '(') {
      char close = c == '[' ? ']' : ')';
      at++;
      ArrayNode a = NODES.arrayNode();
      space();
      while (peek() != close) {
        a.add(value());
        space();
        if (peek() == ',') {
          at++;
          space();
        }
      }
      at++;
      return a;
    }
    if (c == '{') {
      at++;
      ObjectNode o = NODES.objectNode();
      space();
      while (peek() != '}') {
        JsonNode key = value();
        if (!key.isTextual()) {
          throw new IllegalArgumentException("dict keys must be strings");
        }
        space();
        expect(':');
        o.set(key.asText(), value());
        space();
        if (peek() == ',') {
          at++;
          space();
        }
      }
      at++;
      return o;
    }
    int start = at;
    while (at < s.length() && (Character.isLetterOrDigit(s.charAt(at)) || "+-._".indexOf(s.charAt(at)) >= 0)) {
      at++;
    }
    String word = s.substring(start, at);
    return switch (word) {
      case "True" -> NODES.booleanNode(true);
      case "False" -> NODES.booleanNode(false);
      case "None" -> NODES.nullNode();
      default -> {
        try {
          yield word.matches("[+-]?\\d+") ? NODES.numberNode(new java.math.BigInteger(word)) : NODES.numberNode(new java.math.BigDecimal(word));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("not a literal: " + word);
        }
      }
    };
  }

  private String string() {
    char quote = s.charAt(at++);
    StringBuilder out = new StringBuilder();
    while (s.charAt(at) != quote) {
      char c = s.charAt(at++);
      if (c == '\\') {
        char e = s.charAt(at++);
        out.append(switch (e) {
          case 'n' -> '\n';
          case 't' -> '\t';
          case 'r' -> '\r';
          default -> e;
        });
      } else {
        out.append(c);
      }
    }
    at++;
    return out.toString();
  }

  private String identifier() {
    space();
    int start = at;
    while (at < s.length() && (Character.isLetterOrDigit(s.charAt(at)) || s.charAt(at) == '_' || s.charAt(at) == '.' || s.charAt(at) == '-')) {
      at++;
    }
    if (start == at) {
      throw new IllegalArgumentException("expected a name at " + at);
    }
    return s.substring(start, at);
  }

  private void expect(char c) {
    space();
    if (peek() != c) {
      throw new IllegalArgumentException("expected '" + c + "' at " + at);
    }
    at++;
  }

  private char peek() {
    return s.charAt(at);
  }

  private void space() {
    while (at < s.length() && Character.isWhitespace(s.charAt(at))) {
      at++;
    }
  }
}
