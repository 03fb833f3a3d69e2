package dev.tandem.engine.grammar;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.common.StructuredOutput;
import dev.tandem.engine.grammar.GrammarNode.Alt;
import dev.tandem.engine.grammar.GrammarNode.Lit;
import dev.tandem.engine.grammar.GrammarNode.Seq;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The grammar of a {@link StructuredOutput}, whatever its kind: a JSON schema ({@link
 * JsonSchemaGrammar}), a regular expression matching the whole output ({@link
 * PatternGrammar#compileText}), one of a list of strings, or an EBNF grammar ({@link
 * EbnfGrammar}) — the one place the frontend (to refuse what the engine would) and the engine
 * compile them.
 *
 * <p>Stateless; thread-safe.
 */
public final class OutputGrammars {
  /** Most strings a choice may list. */
  public static final int MAX_CHOICES = 4096;
  private static final ObjectMapper JSON = new ObjectMapper();

  private OutputGrammars() {}

  /** Most newlines between the end of a reasoning and the constrained text. */
  static final int NEWLINES_AFTER_REASONING = 2;

  /**
   * Compiles {@code c} (from the start; where it resumes does not change the grammar).
   *
   * @throws GrammarException if {@code c} is not supported, saying why — also where its rules
   *     reference each other too deeply for the compiler's recursive walks (thousands of rules in a
   *     chain), rather than let a client's grammar overflow the stack of the thread compiling it
   */
  public static Grammar compile(StructuredOutput c) {
    try {
      return compileUnguarded(c);
    } catch (StackOverflowError e) {
      throw new GrammarException("", "the " + c.kind().name().toLowerCase(java.util.Locale.ROOT).replace('_', ' ')
          + " nests too deeply to compile (rules or references thousands of levels deep)");
    }
  }

  private static Grammar compileUnguarded(StructuredOutput c) {
    GrammarNode body = switch (c.kind()) {
      case JSON_SCHEMA -> JsonSchemaGrammar.root(c.prefix(), JsonSchemaGrammar.parse(c.spec()), c.suffix());
      case REGEX -> around(c.prefix(), PatternGrammar.compileText(c.spec(), ""), c.suffix());
      case CHOICE -> around(c.prefix(), choice(choices(c.spec())), c.suffix());
      case GRAMMAR -> EbnfGrammar.root(c.prefix(), c.spec(), c.suffix());
      case STRUCTURAL_TAG -> around(c.prefix(), structuralTag(c.spec()), c.suffix());
    };
    GrammarNode root = afterReasoning(c.reasoning(), body);
    return switch (c.kind()) {
      case JSON_SCHEMA -> new Grammar(root, "json schema");
      case REGEX -> Grammar.ofText(root, "regex");
      case CHOICE -> Grammar.ofText(root, "choice");
      case GRAMMAR -> Grammar.ofText(root, "grammar");
      case STRUCTURAL_TAG -> new Grammar(root, "structural tag");
    };
  }

  /**
   * {@code body} after {@code r}'s reasoning: any text up to the first closing tag, at most
   * {@value #NEWLINES_AFTER_REASONING} newlines, then the body — from the first byte where the
   * output starts inside the reasoning, else optionally, opened by the opening tag. The reasoning
   * is free but must end: the masker's budget closes it in time for the body to fit.
   */
  static GrammarNode afterReasoning(StructuredOutput.Reasoning r, GrammarNode body) {
    if (r.none()) {
      return body;
    }
    GrammarNode until = new GrammarNode.Until(r.close().getBytes(StandardCharsets.UTF_8));
    GrammarNode newlines = new GrammarNode.Rep(lit("\n"), null, 0, NEWLINES_AFTER_REASONING);
    if (r.opened()) {
      return new Seq(until, newlines, body);
    }
    return new Alt(new Seq(lit(r.open()), until, newlines, body), body);
  }

  /** Most triggers and structures a structural tag may have, and bytes a trigger may have. */
  public static final int MAX_TRIGGERS = 64;
  public static final int MAX_STRUCTURES = 256;
  public static final int MAX_TRIGGER_BYTES = 64;

  /**
   * A structural tag ({@link StructuredOutput#structuralTag}): free text up to the first trigger,
   * then one of the structures whose {@code begin} starts with it (the rest of the begin, a JSON
   * value under its schema, its end), any number of times, then free text without a trigger. With
   * {@code "stop_after_first": true} (xgrammar's option; the frontend sets it for {@code
   * parallel_tool_calls: false}), the output ends with its first structure.
   */
  static GrammarNode structuralTag(String spec) {
    JsonNode tag;
    try {
      tag = JSON.readTree(spec);
    } catch (JsonProcessingException e) {
      throw new GrammarException("", "the structural tag is not JSON: " + e.getOriginalMessage());
    }
    if (tag == null || !tag.isObject()) {
      throw new GrammarException("", "the structural tag must be an object with 'structures' and 'triggers'");
    }
    JsonNode triggers = tag.get("triggers");
    JsonNode structures = tag.get("structures");
    if (triggers == null || !triggers.isArray() || triggers.isEmpty() || triggers.size() > MAX_TRIGGERS) {
      throw new GrammarException("/triggers", "'triggers' must be a list of 1 to " + MAX_TRIGGERS + " strings");
    }
    if (structures == null || !structures.isArray() || structures.isEmpty() || structures.size() > MAX_STRUCTURES) {
      throw new GrammarException("/structures", "'structures' must be a list of 1 to " + MAX_STRUCTURES + " objects");
    }
    String[] names = new String[triggers.size()];
    byte[][] texts = new byte[names.length][];
    for (int i = 0; i < texts.length; i++) {
      JsonNode t = triggers.get(i);
      names[i] = t.asText();
      texts[i] = names[i].getBytes(StandardCharsets.UTF_8);
      if (!t.isTextual() || texts[i].length == 0 || texts[i].length > MAX_TRIGGER_BYTES) {
        throw new GrammarException("/triggers/" + i, "each trigger must be a non-empty string of at most " + MAX_TRIGGER_BYTES + " bytes");
      }
    }
    GrammarNode.Scan scan;
    try {
      scan = new GrammarNode.Scan(texts);
    } catch (GrammarException e) {
      throw new GrammarException("/triggers", e.getMessage());
    }
    List<List<GrammarNode>> after = new ArrayList<>();
    for (int i = 0; i < texts.length; i++) {
      after.add(new ArrayList<>());
    }
    for (int k = 0; k < structures.size(); k++) {
      JsonNode s = structures.get(k);
      String at = "/structures/" + k;
      if (!s.isObject() || !s.path("begin").isTextual() || !s.path("end").isTextual()) {
        throw new GrammarException(at, "each structure must be an object with 'begin', 'schema' and 'end' (strings but the schema)");
      }
      String begin = s.get("begin").asText();
      int trigger = -1;
      for (int i = 0; i < texts.length && trigger < 0; i++) {
        if (begin.startsWith(names[i])) {
          trigger = i;
        }
      }
      if (trigger < 0) {
        throw new GrammarException(at + "/begin", "'" + begin + "' starts with none of the triggers");
      }
      JsonNode schema = s.get("schema");
      if (schema == null || schema.isNull()) {
        schema = JSON.createObjectNode(); // any JSON value
      }
      if (!schema.isObject() && !schema.isBoolean()) {
        throw new GrammarException(at + "/schema", "the schema must be a JSON object");
      }
      try {
        after.get(trigger).add(JsonSchemaGrammar.root(begin.substring(names[trigger].length()), schema,
            s.get("end").asText()));
      } catch (GrammarException e) {
        throw new GrammarException(at + "/schema" + e.path(), e.getMessage().replace(" (at " + e.path() + ")", ""));
      }
    }
    GrammarNode[] ways = new GrammarNode[texts.length];
    for (int i = 0; i < texts.length; i++) {
      List<GrammarNode> rests = after.get(i);
      if (rests.isEmpty()) {
        throw new GrammarException("/triggers/" + i, "no structure begins with the trigger '" + names[i] + "'");
      }
      GrammarNode rest = rests.size() == 1 ? rests.get(0) : new Alt(rests.toArray(GrammarNode[]::new));
      ways[i] = new Seq(new GrammarNode.Until(scan, i), rest);
    }
    GrammarNode structure = ways.length == 1 ? ways[0] : new Alt(ways);
    JsonNode once = tag.get("stop_after_first");
    if (once != null && !once.isBoolean()) {
      throw new GrammarException("/stop_after_first", "'stop_after_first' must be a boolean");
    }
    if (once != null && once.asBoolean()) {
      return new Alt(new GrammarNode.FreeText(scan), structure);
    }
    return new Seq(new GrammarNode.Rep(structure, null, 0, Integer.MAX_VALUE), new GrammarNode.FreeText(scan));
  }

  /** The strings of a choice, from the JSON array {@link StructuredOutput#choice} wrote. */
  static List<String> choices(String spec) {
    JsonNode array;
    try {
      array = JSON.readTree(spec);
    } catch (JsonProcessingException e) {
      throw new GrammarException("", "the choices are not a JSON array: " + e.getOriginalMessage());
    }
    if (array == null || !array.isArray() || array.isEmpty()) {
      throw new GrammarException("", "the choices must be a non-empty list of strings");
    }
    if (array.size() > MAX_CHOICES) {
      throw new GrammarException("", "at most " + MAX_CHOICES + " choices are supported, got " + array.size());
    }
    List<String> out = new ArrayList<>(array.size());
    for (int i = 0; i < array.size(); i++) {
      if (!array.get(i).isTextual()) {
        throw new GrammarException("/" + i, "each choice must be a string");
      }
      out.add(array.get(i).asText());
    }
    return out;
  }

  /**
   * Exactly one of {@code options}, as a trie: alternatives share their common prefixes, so the
   * matcher follows one way per distinct prefix instead of one per option.
   */
  static GrammarNode choice(List<String> options) {
    return literals(options.stream().map(s -> s.getBytes(StandardCharsets.UTF_8)).toList());
  }

  /**
   * Exactly one of {@code options} (bytes), as the trie {@link #choice} builds: also an EBNF
   * alternation of strings, which would otherwise keep one state per option — past the text
   * grammars' {@value Grammar#MAX_TEXT_STATES}, the options after them could not be written — and
   * a JSON schema's {@code enum}, whose values would each be a frame of the masker's state. The
   * trie's size is linear in the options (under two edges an option, each a literal and a
   * sequence, and an alternation where it branches), so the caller's bound on their count bounds it.
   */
  static GrammarNode literals(List<byte[]> options) {
    byte[][] sorted = options.stream().sorted(Arrays::compareUnsigned).toArray(byte[][]::new);
    int distinct = 0;
    for (byte[] o : sorted) {
      if (distinct == 0 || !Arrays.equals(sorted[distinct - 1], o)) {
        sorted[distinct++] = o;
      }
    }
    return trie(sorted, 0, distinct, 0);
  }

  /** The options {@code from..to} (sorted, equal in their first {@code depth} bytes) after those bytes. */
  private static GrammarNode trie(byte[][] options, int from, int to, int depth) {
    List<GrammarNode> alts = new ArrayList<>();
    int i = from;
    if (options[i].length == depth) {
      alts.add(new Lit(new byte[0])); // this option ends here
      i++;
    }
    while (i < to) {
      int j = i + 1;
      while (j < to && options[j][depth] == options[i][depth]) {
        j++;
      }
      // options i..j share byte `depth`; extend to their longest common prefix
      int end = depth + 1;
      while (end < options[i].length && allHave(options, i, j, end, options[i][end])) {
        end++;
      }
      Lit shared = new Lit(Arrays.copyOfRange(options[i], depth, end));
      alts.add(j - i == 1 && end == options[i].length ? shared : new Seq(shared, trie(options, i, j, end)));
      i = j;
    }
    return alts.size() == 1 ? alts.get(0) : new Alt(alts.toArray(GrammarNode[]::new));
  }

  private static boolean allHave(byte[][] options, int from, int to, int at, byte b) {
    for (int k = from; k < to; k++) {
      if (options[k].length <= at || options[k][at] != b) {
        return false;
      }
    }
    return true;
  }

  /** {@code body} between the literal texts {@code prefix} and {@code suffix}. */
  static GrammarNode around(String prefix, GrammarNode body, String suffix) {
    if (prefix.isEmpty() && suffix.isEmpty()) {
      return body;
    }
    return new Seq(lit(prefix), body, lit(suffix));
  }

  private static Lit lit(String s) {
    return new Lit(s.getBytes(StandardCharsets.UTF_8));
  }
}
