package dev.tandem.frontend.parse;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Takes tool calls out of one choice's streamed content, in the model family's {@link
 * ToolCallFormat}. Text before a call stays content; a call is returned once it is complete (its
 * closing tag, or the end of the output); a call that does not parse is returned as content,
 * tags and all — never dropped. Whitespace between calls is not content.
 *
 * <p>Threading: one choice's thread (the connection's event loop).
 */
public final class ToolCallExtractor {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String MISTRAL_OPEN = "[TOOL_CALLS]";
  private static final String PYTHON_TAG = "<|python_tag|>";

  /**
   * Where a tagged call starts and ends ({@code close} null: at the end of the output), and what
   * its body starts with that the opening marker took ({@code "["} of {@code functools[}).
   */
  private record Marker(String open, String close, String bodyStart) {}

  private static final List<Marker> HERMES_MARKERS = List.of(new Marker("<tool_call>", "</tool_call>", ""));
  /**
   * Phi-4-mini writes {@code <|tool_call|>[…]<|/tool_call|>}, often without the closing tag (as
   * the Berkeley function-calling leaderboard's handler found); vLLM's template for it asks for
   * {@code functools[…]}, up to the end of the output.
   */
  private static final List<Marker> PHI4_MINI_MARKERS =
      List.of(new Marker("<|tool_call|>", "<|/tool_call|>", ""), new Marker("functools[", null, "["));

  /** A piece of content with the calls completed in it. */
  public record Extracted(String content, List<ToolCall> calls) {
    static final Extracted EMPTY = new Extracted("", List.of());
  }

  private final ToolCallFormat format;
  private final StringBuilder pending = new StringBuilder();
  private boolean inCall; // hermes, phi4_mini_json: inside a marker; others: the rest of the output is calls
  private Marker opened; // the marker of the tagged call in progress
  private boolean decided; // llama3_json / pythonic: whether the output is calls was decided
  private boolean afterCall;
  private int calls;

  public ToolCallExtractor(ToolCallFormat format) {
    this.format = format;
    this.decided = switch (format) {
      case NONE, HERMES, MISTRAL, PHI4_MINI_JSON -> true;
      case LLAMA3_JSON, PYTHONIC -> false;
    };
  }

  /** Calls found so far. */
  public int calls() {
    return calls;
  }

  public Extracted add(String text) {
    if (format == ToolCallFormat.NONE) {
      return text.isEmpty() ? Extracted.EMPTY : new Extracted(text, List.of());
    }
    pending.append(text);
    StringBuilder content = new StringBuilder();
    List<ToolCall> found = new ArrayList<>();
    switch (format) {
      case HERMES -> tagged(HERMES_MARKERS, content, found);
      case PHI4_MINI_JSON -> tagged(PHI4_MINI_MARKERS, content, found);
      case MISTRAL -> {
        if (!inCall) {
          int open = pending.indexOf(MISTRAL_OPEN);
          if (open >= 0) {
            content.append(pending, 0, open);
            pending.delete(0, open + MISTRAL_OPEN.length());
            inCall = true;
          } else {
            release(content, ReasoningSplitter.partialTag(pending, MISTRAL_OPEN));
          }
        }
      }
      default -> { // LLAMA3_JSON, PYTHONIC: the whole output is calls, or none is
        if (!decided) {
          String lead = pending.toString().stripLeading();
          char first = format == ToolCallFormat.PYTHONIC ? '[' : '{';
          if (lead.isEmpty() || (format == ToolCallFormat.LLAMA3_JSON && PYTHON_TAG.startsWith(lead) && lead.length() < PYTHON_TAG.length())) {
            break;
          }
          decided = true;
          inCall = lead.charAt(0) == first || (format == ToolCallFormat.LLAMA3_JSON && lead.startsWith(PYTHON_TAG));
        }
        if (!inCall) {
          content.append(pending);
          pending.setLength(0);
        }
      }
    }
    calls += found.size();
    return content.isEmpty() && found.isEmpty() ? Extracted.EMPTY : new Extracted(content.toString(), found);
  }

  /** The end of the output: a call still open is parsed (or returned as content). */
  public Extracted finish() {
    StringBuilder content = new StringBuilder();
    List<ToolCall> found = new ArrayList<>();
    String rest = pending.toString();
    pending.setLength(0);
    if (!inCall) {
      content.append(afterCall ? rest.strip() : rest);
    } else {
      List<ToolCall> parsed = switch (format) {
        case HERMES, PHI4_MINI_JSON -> body(opened.bodyStart() + rest);
        case MISTRAL -> jsonCalls(rest);
        case LLAMA3_JSON -> jsonCalls(rest.strip().startsWith(PYTHON_TAG) ? rest.strip().substring(PYTHON_TAG.length()) : rest);
        case PYTHONIC -> PythonCalls.parse(rest);
        case NONE -> null;
      };
      if (parsed == null || parsed.isEmpty()) {
        content.append(opened != null ? opened.open() : format == ToolCallFormat.MISTRAL ? MISTRAL_OPEN : "").append(rest);
      } else {
        found.addAll(parsed);
      }
    }
    calls += found.size();
    return new Extracted(content.toString(), found);
  }

  /** Calls between markers, repeated; text around them is content. */
  private void tagged(List<Marker> markers, StringBuilder content, List<ToolCall> found) {
    while (true) {
      if (!inCall) {
        int open = -1;
        int keep = 0;
        for (Marker m : markers) {
          int at = pending.indexOf(m.open());
          if (at >= 0 && (open < 0 || at < open)) {
            open = at;
            opened = m;
          }
          keep = Math.max(keep, ReasoningSplitter.partialTag(pending, m.open()));
        }
        if (open < 0) {
          release(content, keep);
          return;
        }
        appendContent(content, pending.substring(0, open));
        pending.delete(0, open + opened.open().length());
        inCall = true;
      }
      if (opened.close() == null) {
        return; // the rest of the output is calls
      }
      int close = pending.indexOf(opened.close());
      if (close < 0) {
        return;
      }
      String text = pending.substring(0, close);
      pending.delete(0, close + opened.close().length());
      inCall = false;
      List<ToolCall> calls = body(opened.bodyStart() + text);
      if (calls == null) {
        appendContent(content, opened.open() + text + opened.close());
      } else {
        found.addAll(calls);
        afterCall = true;
      }
    }
  }

  /** A tagged call's body in this format, or null. */
  private List<ToolCall> body(String text) {
    if (format == ToolCallFormat.HERMES) {
      return one(text);
    }
    // Phi-4-mini: a list of calls, or calls separated by commas without the list's brackets.
    String t = text.strip();
    List<ToolCall> calls = jsonCalls(t.startsWith("[") ? t : "[" + t + "]");
    return calls == null || calls.isEmpty() ? null : calls;
  }

  /** Moves all but the last {@code keep} pending characters to content. */
  private void release(StringBuilder content, int keep) {
    appendContent(content, pending.substring(0, pending.length() - keep));
    pending.delete(0, pending.length() - keep);
  }

  private void appendContent(StringBuilder content, String s) {
    if (afterCall) {
      if (s.isBlank()) {
        return; // whitespace between calls is not content
      }
      s = s.stripLeading();
      afterCall = false;
    }
    content.append(s);
  }

  /** One {"name", "arguments"|"parameters"} object, or null. */
  private static List<ToolCall> one(String body) {
    try {
      JsonNode n = JSON.readTree(body.strip());
      ToolCall c = call(n);
      return c == null ? null : List.of(c);
    } catch (IOException e) {
      return null;
    }
  }

  /** A JSON array of calls, or calls separated by ';' or whitespace; null if any does not parse. */
  private static List<ToolCall> jsonCalls(String text) {
    List<ToolCall> out = new ArrayList<>();
    String t = text.strip();
    try {
      if (t.startsWith("[")) {
        for (JsonNode n : JSON.readTree(t)) {
          ToolCall c = call(n);
          if (c == null) {
            return null;
          }
          out.add(c);
        }
        return out;
      }
      for (String part : t.split(";")) {
        if (part.isBlank()) {
          continue;
        }
        try (MappingIterator<JsonNode> it = JSON.readerFor(JsonNode.class).with(JsonParser.Feature.AUTO_CLOSE_SOURCE).readValues(part)) {
          while (it.hasNext()) {
            ToolCall c = call(it.next());
            if (c == null) {
              return null;
            }
            out.add(c);
          }
        }
      }
      return out;
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  private static ToolCall call(JsonNode n) {
    if (n == null || !n.isObject() || !n.path("name").isTextual()) {
      return null;
    }
    JsonNode args = n.has("arguments") ? n.get("arguments") : n.get("parameters");
    if (args == null || args.isNull()) {
      args = JSON.createObjectNode();
    }
    if (args.isTextual()) { // some models write the arguments as a JSON string
      try {
        args = JSON.readTree(args.asText());
      } catch (IOException e) {
        return null;
      }
    }
    if (!args.isObject()) {
      return null;
    }
    return ToolCall.of(n.get("name").asText(), args.toString());
  }
}
