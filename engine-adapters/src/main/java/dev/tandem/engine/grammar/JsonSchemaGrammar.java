package dev.tandem.engine.grammar;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.BooleanNode;
import dev.tandem.engine.grammar.GrammarNode.Alt;
import dev.tandem.engine.grammar.GrammarNode.ByteSet;
import dev.tandem.engine.grammar.GrammarNode.Chr;
import dev.tandem.engine.grammar.GrammarNode.Lit;
import dev.tandem.engine.grammar.GrammarNode.Num;
import dev.tandem.engine.grammar.GrammarNode.Ref;
import dev.tandem.engine.grammar.GrammarNode.Rep;
import dev.tandem.engine.grammar.GrammarNode.Seq;
import dev.tandem.engine.grammar.GrammarNode.Str;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Compiles a JSON schema into a {@link Grammar} of the JSON text that satisfies it.
 *
 * <p>Supported: {@code type} (one or a list), {@code enum}, {@code const}, {@code anyOf}, {@code
 * oneOf} (as anyOf: the output matches at least one), {@code allOf} of one schema, {@code $ref}
 * into the same document ({@code #}, {@code #/$defs/…}, {@code #/definitions/…}, recursion
 * included), {@code nullable}; objects with {@code properties} (written in the schema's order;
 * those not {@code required} may be left out), {@code required}, {@code additionalProperties}
 * (false unless given when there are {@code properties}; true or a schema: other members after
 * the named ones, with names that are none of theirs);
 * arrays with {@code items}, {@code prefixItems} (tuples; or {@code items} as a list with {@code
 * additionalItems}, as earlier drafts write them), {@code minItems}, {@code maxItems}; strings with {@code minLength},
 * {@code maxLength}, {@code pattern} (a regular-expression subset, see {@link PatternGrammar}) or
 * {@code format} date, time, date-time, duration, uuid, email, hostname, ipv4, ipv6 (OpenAI's list);
 * numbers and integers with {@code minimum}, {@code maximum}, {@code exclusiveMinimum}, {@code
 * exclusiveMaximum}, {@code multipleOf} (no exponent, at most 15 digits each side of the point). An
 * {@code enum}, and a union whose branches are all {@code const} or {@code enum}, is a trie of the
 * values' text ({@link OutputGrammars#literals}). Annotations (title, description, default,
 * examples, …) are ignored. Anything else is refused with a {@link GrammarException} naming the keyword.
 *
 * <p>Whitespace: up to {@value #MAX_WHITESPACE} spaces, tabs or newlines after {@code { [ , :}
 * and before {@code } ]}, nowhere else. Limits: {@value #MAX_NODES} grammar nodes, schemas
 * nested {@value #MAX_SCHEMA_DEPTH} deep, {@value #MAX_PROPERTIES} properties per object.
 *
 * <p>Stateless; thread-safe.
 */
public final class JsonSchemaGrammar {
  static final int MAX_WHITESPACE = 12;
  static final int MAX_NODES = 20_000;
  static final int MAX_SCHEMA_DEPTH = 32;
  static final int MAX_PROPERTIES = 128;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Set<String> ANNOTATIONS = Set.of(
      "title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated",
      "readOnly", "writeOnly", "$defs", "definitions", "discriminator", "example");
  private static final Set<String> HANDLED = Set.of(
      "type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "nullable", "properties", "required",
      "additionalProperties", "items", "prefixItems", "additionalItems", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format",
      "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf");

  private final JsonNode document;
  private final Map<String, Ref> refs = new HashMap<>();
  private final GrammarNode ws = new Rep(new ByteSet(" \t\n"), null, 0, MAX_WHITESPACE);
  private GrammarNode anyValue;
  private int nodes;

  private JsonSchemaGrammar(JsonNode document) {
    this.document = document;
  }

  /** The grammar of JSON values valid under {@code schema}. */
  public static Grammar compile(JsonNode schema) {
    return compile("", schema, "");
  }

  /**
   * The grammar of {@code prefix}, a JSON value valid under {@code schema}, then {@code suffix}
   * (literal text, such as a tool-call tag).
   */
  public static Grammar compile(String prefix, JsonNode schema, String suffix) {
    return new Grammar(root(prefix, schema, suffix), "json schema");
  }

  /** The root node of {@link #compile(String, JsonNode, String)}'s grammar. */
  static GrammarNode root(String prefix, JsonNode schema, String suffix) {
    JsonSchemaGrammar c = new JsonSchemaGrammar(schema);
    GrammarNode value = c.schema(schema, "", 0);
    return prefix.isEmpty() && suffix.isEmpty() ? value : new Seq(lit(prefix), value, lit(suffix));
  }

  /** The grammar of JSON values valid under the schema in {@code schemaJson}. */
  public static Grammar compile(String prefix, String schemaJson, String suffix) {
    return compile(prefix, parse(schemaJson), suffix);
  }

  /** Parses schema text, or throws a GrammarException saying why it is not JSON. */
  public static JsonNode parse(String schemaJson) {
    try {
      return JSON.readTree(schemaJson);
    } catch (JsonProcessingException e) {
      throw new GrammarException("", "the schema is not valid JSON: " + e.getOriginalMessage());
    }
  }

  private GrammarNode schema(JsonNode s, String path, int depth) {
    if (depth > MAX_SCHEMA_DEPTH) {
      throw new GrammarException(path, "the schema is nested deeper than " + MAX_SCHEMA_DEPTH + " levels");
    }
    if (++nodes > MAX_NODES) {
      throw new GrammarException(path, "the schema is larger than " + MAX_NODES + " nodes");
    }
    if (s.isBoolean()) {
      if (!s.asBoolean()) {
        throw new GrammarException(path, "the schema 'false' admits no value");
      }
      return any();
    }
    if (!s.isObject()) {
      throw new GrammarException(path, "a schema must be an object or a boolean");
    }
    for (Iterator<String> it = s.fieldNames(); it.hasNext(); ) {
      String k = it.next();
      if (!HANDLED.contains(k) && !ANNOTATIONS.contains(k)) {
        throw new GrammarException(path + "/" + k, "the JSON schema keyword '" + k + "' is not supported");
      }
    }
    if (s.has("$ref")) {
      return ref(s.get("$ref"), path + "/$ref", depth);
    }
    GrammarNode node = typed(s, path, depth);
    if (s.path("nullable").asBoolean(false)) {
      node = new Alt(node, lit("null"));
    }
    return node;
  }

  private GrammarNode typed(JsonNode s, String path, int depth) {
    if (s.has("const")) {
      return lit(compact(s.get("const")));
    }
    if (s.has("enum")) {
      JsonNode e = s.get("enum");
      if (!e.isArray() || e.isEmpty()) {
        throw new GrammarException(path + "/enum", "'enum' must be a non-empty array");
      }
      return OutputGrammars.literals(literalValues(s));
    }
    for (String union : List.of("anyOf", "oneOf")) {
      if (s.has(union)) {
        return union(s.get(union), path + "/" + union, depth);
      }
    }
    if (s.has("allOf")) {
      JsonNode all = s.get("allOf");
      if (!all.isArray() || all.size() != 1) {
        throw new GrammarException(path + "/allOf", "'allOf' is supported with exactly one schema");
      }
      return schema(all.get(0), path + "/allOf/0", depth + 1);
    }
    JsonNode type = s.get("type");
    if (type == null) {
      if (s.has("properties") || s.has("required") || s.has("additionalProperties")) {
        return object(s, path, depth);
      }
      if (s.has("items") || s.has("prefixItems") || s.has("minItems") || s.has("maxItems")) {
        return array(s, path, depth);
      }
      if (s.has("minLength") || s.has("maxLength") || s.has("pattern") || s.has("format")) {
        return string(s, path);
      }
      if (s.has("minimum") || s.has("maximum") || s.has("exclusiveMinimum") || s.has("exclusiveMaximum")
          || s.has("multipleOf")) {
        return number(s, path, false);
      }
      return any();
    }
    if (type.isArray()) {
      if (type.isEmpty()) {
        throw new GrammarException(path + "/type", "'type' must not be an empty list");
      }
      List<GrammarNode> alts = new ArrayList<>();
      for (JsonNode t : type) {
        alts.add(ofType(t, s, path, depth));
      }
      return alts.size() == 1 ? alts.get(0) : new Alt(alts.toArray(GrammarNode[]::new));
    }
    return ofType(type, s, path, depth);
  }

  private GrammarNode ofType(JsonNode type, JsonNode s, String path, int depth) {
    return switch (type.asText()) {
      case "object" -> object(s, path, depth);
      case "array" -> array(s, path, depth);
      case "string" -> string(s, path);
      case "integer" -> number(s, path, true);
      case "number" -> number(s, path, false);
      case "boolean" -> new Alt(lit("true"), lit("false"));
      case "null" -> lit("null");
      default -> throw new GrammarException(path + "/type", "unknown type '" + type.asText() + "'");
    };
  }

  private GrammarNode union(JsonNode alts, String path, int depth) {
    if (!alts.isArray() || alts.isEmpty()) {
      throw new GrammarException(path, "must be a non-empty array of schemas");
    }
    List<GrammarNode> out = new ArrayList<>();
    List<byte[]> values = new ArrayList<>();
    for (int i = 0; i < alts.size(); i++) {
      out.add(schema(alts.get(i), path + "/" + i, depth + 1));
      List<byte[]> some = values == null ? null : literalValues(alts.get(i));
      values = some == null ? null : values;
      if (values != null) {
        values.addAll(some);
      }
    }
    if (values != null && out.size() > 1) { // a union of consts and enums (documented choices) is one enum
      return OutputGrammars.literals(values);
    }
    return out.size() == 1 ? out.get(0) : new Alt(out.toArray(GrammarNode[]::new));
  }

  /**
   * The values a schema of {@code const} or {@code enum} admits (their compact JSON text), which
   * are all it admits: {@link #typed} reads those keywords before any other; null for any other schema.
   */
  private static List<byte[]> literalValues(JsonNode s) {
    if (!s.isObject() || s.has("$ref") || s.path("nullable").asBoolean(false)) {
      return null;
    }
    JsonNode values = s.has("const") ? JSON.createArrayNode().add(s.get("const")) : s.get("enum");
    if (values == null || !values.isArray()) {
      return null;
    }
    List<byte[]> out = new ArrayList<>(values.size());
    for (JsonNode v : values) {
      out.add(compact(v).getBytes(StandardCharsets.UTF_8));
    }
    return out;
  }

  private GrammarNode ref(JsonNode r, String path, int depth) {
    if (!r.isTextual() || !r.asText().startsWith("#")) {
      throw new GrammarException(path, "only references into the same schema ('#…') are supported");
    }
    String pointer = r.asText().substring(1);
    Ref ref = refs.get(pointer);
    if (ref != null) {
      return ref;
    }
    JsonNode target = pointer.isEmpty() ? document : document.at(pointer);
    if (target.isMissingNode()) {
      throw new GrammarException(path, "the reference '" + r.asText() + "' points at nothing");
    }
    ref = new Ref();
    refs.put(pointer, ref);
    ref.target = schema(target, pointer, depth + 1);
    return ref;
  }

  private GrammarNode object(JsonNode s, String path, int depth) {
    JsonNode props = s.get("properties");
    JsonNode additional = s.get("additionalProperties");
    if (props != null && !props.isObject()) {
      throw new GrammarException(path + "/properties", "'properties' must be an object");
    }
    Set<String> required = new java.util.HashSet<>();
    JsonNode req = s.get("required");
    if (req != null) {
      if (!req.isArray()) {
        throw new GrammarException(path + "/required", "'required' must be an array of names");
      }
      for (JsonNode r : req) {
        required.add(r.asText());
      }
    }
    if (props == null || props.isEmpty()) {
      if (!required.isEmpty()) {
        throw new GrammarException(path + "/required", "required properties need 'properties' describing them");
      }
      if (additional != null && additional.isBoolean() && !additional.asBoolean()) {
        return new Seq(lit("{"), ws, lit("}"));
      }
      GrammarNode value = additional == null || additional.isBoolean()
          ? any() : schema(additional, path + "/additionalProperties", depth + 1);
      return anyObject(value);
    }
    if (props.size() > MAX_PROPERTIES) {
      throw new GrammarException(path + "/properties", "more than " + MAX_PROPERTIES + " properties");
    }
    List<GrammarNode> members = new ArrayList<>();
    List<Boolean> needed = new ArrayList<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = props.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      GrammarNode value = schema(e.getValue(), path + "/properties/" + e.getKey(), depth + 1);
      members.add(new Seq(lit(compact(JSON.getNodeFactory().textNode(e.getKey())) + ":"), ws, value));
      needed.add(required.remove(e.getKey()));
    }
    if (!required.isEmpty()) {
      throw new GrammarException(path + "/required",
          "required property '" + required.iterator().next() + "' is not among the properties");
    }
    // Other members (additionalProperties true or a schema) come after the named ones, with names
    // that are none of theirs; false, or not given, allows none.
    GrammarNode[] ends = {lit(""), lit("")};
    if (additional != null && !(additional.isBoolean() && !additional.asBoolean())) {
      List<String> names = new ArrayList<>();
      props.fieldNames().forEachRemaining(names::add);
      GrammarNode other = otherMember(names, additional.isBoolean() ? any()
          : schema(additional, path + "/additionalProperties", depth + 1), path + "/additionalProperties");
      GrammarNode separator = new Seq(lit(","), ws);
      ends = new GrammarNode[] {new Rep(other, separator, 0, Integer.MAX_VALUE),
          new Rep(new Seq(separator, other), null, 0, Integer.MAX_VALUE)};
    }
    // rest[j]: what may follow member j — ", member m" for a later m with only optional ones
    // skipped, or the end (and other members) if everything after j is optional.
    int n = members.size();
    GrammarNode[] rest = new GrammarNode[n];
    for (int j = n - 1; j >= 0; j--) {
      rest[j] = following(j + 1, members, needed, rest, ends[1], true);
    }
    GrammarNode body = following(0, members, needed, rest, ends[0], false);
    return new Seq(lit("{"), ws, body, ws, lit("}"));
  }

  /**
   * A member that none of {@code names} names, its value {@code value}. Exact for names of
   * printable ASCII other than '/': a string character is then written one way only (as itself,
   * or {@code \"} and {@code \\}), so a different text is a different name.
   */
  private GrammarNode otherMember(List<String> names, GrammarNode value, String path) {
    for (String name : names) {
      for (int i = 0; i < name.length(); i++) {
        char c = name.charAt(i);
        if (c < 0x20 || c > 0x7e || c == '/') {
          throw new GrammarException(path, "'additionalProperties' beside 'properties' is supported where the"
              + " properties' names are printable ASCII other than '/'; '" + name + "' is not");
        }
      }
    }
    List<String> sorted = names.stream().distinct().sorted().toList();
    return new Seq(lit("\""), otherName(sorted, 0), lit("\":"), ws, value);
  }

  /**
   * The rest of a name whose first {@code depth} characters are those of every one of {@code
   * names} (sorted), such that it is none of them: it ends where none does, goes on with a
   * character none has there, or follows the names that have the character it writes.
   */
  private GrammarNode otherName(List<String> names, int depth) {
    List<GrammarNode> alts = new ArrayList<>();
    int i = 0;
    if (names.get(0).length() == depth) {
      i = 1; // a name ends here: the text must go on
    } else {
      alts.add(lit(""));
    }
    long[] others = printable();
    while (i < names.size()) {
      char c = names.get(i).charAt(depth);
      int j = i;
      while (j < names.size() && names.get(j).charAt(depth) == c) {
        j++;
      }
      long[] one = new long[2];
      one[c >>> 6] |= 1L << c;
      others[c >>> 6] &= ~(1L << c);
      alts.add(new Seq(new Chr(one, false), otherName(names.subList(i, j), depth + 1)));
      if ((nodes += 2) > MAX_NODES) {
        throw new GrammarException("", "the schema is larger than " + MAX_NODES + " nodes");
      }
      i = j;
    }
    alts.add(new Seq(new Chr(others, true), new Rep(new Chr(printable(), true), null, 0, Integer.MAX_VALUE)));
    return alts.size() == 1 ? alts.get(0) : new Alt(alts.toArray(GrammarNode[]::new));
  }

  /** Printable ASCII (what a name's character may be, besides any non-ASCII one). */
  private static long[] printable() {
    long[] set = new long[2];
    for (int c = 0x20; c <= 0x7e; c++) {
      set[c >>> 6] |= 1L << c;
    }
    return set;
  }

  private GrammarNode following(int from, List<GrammarNode> members, List<Boolean> needed, GrammarNode[] rest,
      GrammarNode end, boolean comma) {
    List<GrammarNode> alts = new ArrayList<>();
    boolean allOptional = true;
    for (int m = from; m < members.size(); m++) {
      GrammarNode member = comma ? new Seq(lit(","), ws, members.get(m), rest[m]) : new Seq(members.get(m), rest[m]);
      alts.add(member);
      nodes++;
      if (needed.get(m)) {
        allOptional = false;
        break;
      }
    }
    if (allOptional) {
      alts.add(end);
    }
    return alts.size() == 1 ? alts.get(0) : new Alt(alts.toArray(GrammarNode[]::new));
  }

  private GrammarNode anyObject(GrammarNode value) {
    GrammarNode member = new Seq(new Str(0, Integer.MAX_VALUE), lit(":"), ws, value);
    return new Seq(lit("{"), ws, new Rep(member, new Seq(lit(","), ws), 0, Integer.MAX_VALUE), ws, lit("}"));
  }

  private GrammarNode array(JsonNode s, String path, int depth) {
    int min = count(s, "minItems", 0, path);
    int max = count(s, "maxItems", Integer.MAX_VALUE, path);
    if (min > max) {
      throw new GrammarException(path + "/minItems", "minItems is above maxItems");
    }
    // Positional schemas: prefixItems (draft 2020-12), the rest under items; or, in earlier drafts,
    // items as a list, the rest under additionalItems.
    JsonNode items = s.get("items");
    JsonNode prefix = s.get("prefixItems");
    String prefixKey = "prefixItems";
    String restKey = "items";
    if (items != null && items.isArray()) {
      if (prefix != null) {
        throw new GrammarException(path + "/items", "'items' as a list together with 'prefixItems' is not supported");
      }
      prefix = items;
      prefixKey = "items";
      restKey = "additionalItems";
    }
    JsonNode rest = prefix == null ? items : s.get(restKey);
    GrammarNode item = rest == null || rest.equals(BooleanNode.TRUE) ? any()
        : rest.equals(BooleanNode.FALSE) ? null : schema(rest, path + "/" + restKey, depth + 1);
    GrammarNode separator = new Seq(lit(","), ws);
    if (prefix == null) {
      if (item == null && min > 0) {
        throw new GrammarException(path + "/minItems", "minItems is above 0, the items 'items: false' allows");
      }
      return new Seq(lit("["), ws, item == null ? EMPTY : new Rep(item, separator, min, max), ws, lit("]"));
    }
    return new Seq(lit("["), ws, positional(prefix, path + "/" + prefixKey, item, separator, min, max, depth), ws, lit("]"));
  }

  /** Most positional schemas an array may have ({@code prefixItems}: a tuple's fields). */
  static final int MAX_POSITIONAL = 64;
  private static final GrammarNode EMPTY = new Lit(new byte[0]);

  /**
   * The items of an array whose first ones follow {@code prefix}'s schemas in order and the rest
   * {@code rest} (null: none), {@code min} to {@code max} in all: built from the last position
   * back, each position either where the array may end (from {@code min} items on) or its item
   * and what may follow it.
   */
  private GrammarNode positional(JsonNode prefix, String path, GrammarNode rest, GrammarNode separator, int min, int max,
      int depth) {
    if (!prefix.isArray() || prefix.isEmpty() || prefix.size() > MAX_POSITIONAL) {
      throw new GrammarException(path, "must be a list of 1 to " + MAX_POSITIONAL + " schemas");
    }
    int k = prefix.size();
    if (rest == null && min > k) {
      throw new GrammarException(path.substring(0, path.lastIndexOf('/')) + "/minItems",
          "minItems is above the " + k + " items the array may hold");
    }
    List<GrammarNode> schemas = new ArrayList<>(k);
    for (int i = 0; i < k; i++) {
      schemas.add(schema(prefix.get(i), path + "/" + i, depth + 1));
    }
    GrammarNode tail = rest != null && k < max ? new Rep(new Seq(separator, rest), null, Math.max(0, min - k), max - k) : EMPTY;
    for (int j = k - 1; j >= 0; j--) {
      if (j >= max) {
        tail = EMPTY;
        continue;
      }
      GrammarNode next = j == 0 ? new Seq(schemas.get(j), tail) : new Seq(separator, schemas.get(j), tail);
      tail = j >= min ? new Alt(EMPTY, next) : next;
    }
    return tail;
  }

  private GrammarNode string(JsonNode s, String path) {
    int min = count(s, "minLength", 0, path);
    int max = count(s, "maxLength", Integer.MAX_VALUE, path);
    if (min > max) {
      throw new GrammarException(path + "/minLength", "minLength is above maxLength");
    }
    String pattern = null;
    if (s.has("format")) {
      pattern = PatternGrammar.forFormat(s.get("format").asText(), path + "/format");
    }
    if (s.has("pattern")) {
      if (pattern != null) {
        throw new GrammarException(path + "/pattern", "'pattern' together with 'format' is not supported");
      }
      pattern = s.get("pattern").asText();
    }
    if (pattern == null) {
      return new Str(min, max);
    }
    if (s.has("minLength") || s.has("maxLength")) {
      throw new GrammarException(path + "/" + (s.has("minLength") ? "minLength" : "maxLength"),
          "length limits together with a pattern or format are not supported");
    }
    return new Seq(lit("\""), PatternGrammar.compile(pattern, path + (s.has("pattern") ? "/pattern" : "/format")), lit("\""));
  }

  private GrammarNode number(JsonNode s, String path, boolean integer) {
    BigDecimal min = null;
    BigDecimal max = null;
    boolean minEx = false;
    boolean maxEx = false;
    if (s.has("minimum")) {
      min = decimal(s, "minimum", path);
    }
    if (s.has("maximum")) {
      max = decimal(s, "maximum", path);
    }
    JsonNode exMin = s.get("exclusiveMinimum");
    if (exMin != null) {
      if (exMin.isBoolean()) { // draft 4
        minEx = exMin.asBoolean();
      } else {
        BigDecimal v = decimal(s, "exclusiveMinimum", path);
        if (min == null || v.compareTo(min) >= 0) {
          min = v;
          minEx = true;
        }
      }
    }
    JsonNode exMax = s.get("exclusiveMaximum");
    if (exMax != null) {
      if (exMax.isBoolean()) {
        maxEx = exMax.asBoolean();
      } else {
        BigDecimal v = decimal(s, "exclusiveMaximum", path);
        if (max == null || v.compareTo(max) <= 0) {
          max = v;
          maxEx = true;
        }
      }
    }
    BigDecimal multipleOf = null;
    if (s.has("multipleOf")) {
      multipleOf = decimal(s, "multipleOf", path).stripTrailingZeros();
      if (multipleOf.signum() <= 0) {
        throw new GrammarException(path + "/multipleOf", "'multipleOf' must be greater than 0");
      }
      if (multipleOf.scale() > NumberRange.MAX_DIGITS) {
        throw new GrammarException(path + "/multipleOf", "'multipleOf' has more than " + NumberRange.MAX_DIGITS
            + " digits after the point (numbers are written with at most " + NumberRange.MAX_DIGITS + ")");
      }
    }
    NumberRange range = NumberRange.of(integer, multipleOf, min, minEx, max, maxEx);
    if (!range.satisfiable()) {
      throw new GrammarException(path, "no " + (integer ? "integer" : "number") + " of at most "
          + NumberRange.MAX_DIGITS + " digits lies in the range" + (multipleOf == null ? "" : " as a multiple of "
          + s.get("multipleOf").asText()));
    }
    return new Num(range);
  }

  private static BigDecimal decimal(JsonNode s, String key, String path) {
    JsonNode v = s.get(key);
    if (!v.isNumber() || (v.isFloatingPointNumber() && !Double.isFinite(v.doubleValue()) && !v.isBigDecimal())) {
      throw new GrammarException(path + "/" + key, "'" + key + "' must be a finite number");
    }
    return v.decimalValue();
  }

  private static int count(JsonNode s, String key, int dflt, String path) {
    JsonNode v = s.get(key);
    if (v == null) {
      return dflt;
    }
    if (!v.canConvertToInt() || v.asInt() < 0 || !v.isIntegralNumber()) {
      throw new GrammarException(path + "/" + key, "'" + key + "' must be a non-negative integer");
    }
    return v.asInt();
  }

  /** Any JSON value (one recursive node per grammar). */
  private GrammarNode any() {
    if (anyValue == null) {
      Ref ref = new Ref();
      anyValue = ref;
      GrammarNode array = new Seq(lit("["), ws, new Rep(ref, new Seq(lit(","), ws), 0, Integer.MAX_VALUE), ws, lit("]"));
      ref.target = new Alt(anyObject(ref), array, new Str(0, Integer.MAX_VALUE), new Num(NumberRange.ANY_NUMBER),
          lit("true"), lit("false"), lit("null"));
    }
    return anyValue;
  }

  private static GrammarNode lit(String s) {
    return new Lit(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String compact(JsonNode v) {
    try {
      return JSON.writeValueAsString(v);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
