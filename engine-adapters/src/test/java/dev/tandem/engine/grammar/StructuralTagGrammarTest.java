package dev.tandem.engine.grammar;

import static dev.tandem.engine.grammar.GrammarTesting.matches;
import static dev.tandem.engine.grammar.GrammarTesting.prefix;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.common.StructuredOutput;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * vLLM's structural tag: free text in which each trigger starts one of the structures that begin
 * with it (begin, a JSON value under its schema, end), then free text again — checked against a
 * reference that finds triggers with {@link String#indexOf}, and through the masker over the real
 * Qwen3 vocabulary.
 */
class StructuralTagGrammarTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String WEATHER = """
      {"triggers": ["<function="],
       "structures": [
         {"begin": "<function=get_weather>", "end": "</function>",
          "schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}},
         {"begin": "<function=get_time>", "end": "</function>",
          "schema": {"type": "object", "properties": {"tz": {"enum": ["UTC", "CET"]}}, "required": ["tz"], "additionalProperties": false}}]}
      """;

  private static Grammar compile(String spec) {
    return OutputGrammars.compile(StructuredOutput.structuralTag(spec));
  }

  @Test
  void freeTextAroundStructuresThatFollowTheirSchemas() {
    Grammar g = compile(WEATHER);
    assertTrue(matches(g, ""), "no text at all");
    assertTrue(matches(g, "I can answer that myself."));
    assertTrue(matches(g, "Checking.<function=get_weather>{\"city\":\"Paris\"}</function>"));
    assertTrue(matches(g, "<function=get_weather>{\"city\":\"Paris\"}</function> and <function=get_time>{\"tz\":\"CET\"}</function> done"),
        "free text between and after structures");
    assertTrue(matches(g, "a < b, function = f, <function"), "text that only begins a trigger is free");
    assertFalse(matches(g, "<function=get_weather>{\"town\":\"Paris\"}</function>"), "the structure's schema");
    assertFalse(prefix(g, "<function=get_news>"), "a trigger starts one of the structures that begin with it");
    assertFalse(matches(g, "<function=get_weather>{\"city\":\"Paris\"}"), "its end");
    assertFalse(prefix(g, "<function=get_time>{\"tz\":\"CET\"}</function><function=get_time>{\"tz\":\"PST\""), "every time");
    assertEquals("", g.shortestExample());
    assertEquals(0, g.minLength());

    GrammarState s = g.newState();
    assertTrue(s.advance("Let me see. <function=get_wea".getBytes(StandardCharsets.UTF_8)));
    assertEquals("ther>".length() + "{\"city\":\"\"}".length() + "</function>".length(), s.remainingBytes(),
        "inside a begin: its rest, the shortest value and the end");
    assertTrue(s.advance("ther>{\"city\":\"Rome\"}</function>".getBytes(StandardCharsets.UTF_8)));
    assertTrue(s.accepting());
  }

  @Test
  void stopAfterFirstEndsTheOutputWithItsFirstStructure() {
    Grammar g = compile(WEATHER.replace("{\"triggers\"", "{\"stop_after_first\": true, \"triggers\""));
    assertTrue(matches(g, ""));
    assertTrue(matches(g, "No call needed."));
    assertTrue(matches(g, "Checking.<function=get_time>{\"tz\":\"UTC\"}</function>"));
    assertFalse(prefix(g, "<function=get_time>{\"tz\":\"UTC\"}</function> "), "nothing after the first structure");
    var e = assertThrows(GrammarException.class, () -> compile(WEATHER.replace("{\"triggers\"", "{\"stop_after_first\": 1, \"triggers\"")));
    assertEquals("/stop_after_first", e.path());
  }

  @Test
  void eachTriggerDispatchesAtItsFirstOccurrenceAsAReferenceParserDoes() throws Exception {
    // Two triggers that overlap ("ab" ends where "bc" would begin), a begin longer than its
    // trigger, and two structures behind one trigger; random texts over a small alphabet are
    // accepted exactly when the reference parse accepts them.
    String spec = """
        {"triggers": ["ab", "bc"],
         "structures": [{"begin": "ab", "schema": {"enum": [1]}, "end": "."},
                        {"begin": "abx", "schema": {"enum": [2]}, "end": "."},
                        {"begin": "bc", "schema": {"enum": [3]}, "end": ";"}]}
        """;
    Grammar g = compile(spec);
    var tag = JSON.readTree(spec);
    SplittableRandom random = new SplittableRandom(7);
    // Whole structures among single characters, so that both valid and broken ones are drawn.
    String[] pieces = {"a", "b", "c", "x", "1", "2", "3", ".", ";", "ab1.", "abx2.", "bc3;"};
    int withStructures = 0;
    int rejected = 0;
    for (int i = 0; i < 20_000; i++) {
      StringBuilder text = new StringBuilder();
      int length = random.nextInt(8);
      for (int k = 0; k < length; k++) {
        text.append(pieces[random.nextInt(pieces.length)]);
      }
      String t = text.toString();
      boolean expected = reference(t, 0, tag);
      withStructures += expected && (t.contains("ab") || t.contains("bc")) ? 1 : 0;
      rejected += expected ? 0 : 1;
      assertEquals(expected, matches(g, t), () -> "over " + t);
    }
    assertTrue(withStructures > 1_000 && rejected > 1_000, "texts with structures and refused ones were drawn: " + withStructures + ", " + rejected);
    assertTrue(matches(g, "zzab1.bc3;abx2.q"));
    assertFalse(matches(g, "abc3;"), "'ab' came first, so the structure is ab's");
  }

  /** Whether {@code t} from {@code at} is free text and structures: the first trigger found decides. */
  private static boolean reference(String t, int at, com.fasterxml.jackson.databind.JsonNode tag) {
    int first = -1;
    String trigger = null;
    for (var tr : tag.get("triggers")) {
      int i = t.indexOf(tr.asText(), at);
      if (i >= 0 && (first < 0 || i < first)) {
        first = i;
        trigger = tr.asText();
      }
    }
    if (first < 0) {
      return true; // free text to the end
    }
    for (var s : tag.get("structures")) {
      String whole = s.get("begin").asText() + s.get("schema").get("enum").get(0).asText() + s.get("end").asText();
      if (s.get("begin").asText().startsWith(trigger) && t.startsWith(whole, first) && reference(t, first + whole.length(), tag)) {
        return true;
      }
    }
    return false;
  }

  @Test
  void aBadStructuralTagIsRefusedNamingWhere() {
    record Bad(String spec, String path, String says) {}
    for (Bad b : List.of(
        new Bad("[]", "", "must be an object"),
        new Bad("{\"triggers\":[],\"structures\":[]}", "/triggers", "1 to 64 strings"),
        new Bad("{\"triggers\":[\"<f\"],\"structures\":[{\"begin\":\"<g>\",\"schema\":{},\"end\":\"\"}]}", "/structures/0/begin",
            "starts with none of the triggers"),
        new Bad("{\"triggers\":[\"<f\",\"<g\"],\"structures\":[{\"begin\":\"<f>\",\"schema\":{},\"end\":\"\"}]}", "/triggers/1",
            "no structure begins with"),
        new Bad("{\"triggers\":[\"<f\",\"x<f\"],\"structures\":[{\"begin\":\"<f>\",\"schema\":{},\"end\":\"\"}]}", "/triggers",
            "no trigger may contain another"),
        new Bad("{\"triggers\":[\"<f\"],\"structures\":[{\"begin\":\"<f>\",\"schema\":{\"type\":\"number\",\"not\":{\"const\":3}},\"end\":\"\"}]}",
            "/structures/0/schema", "'not'"),
        new Bad("{\"triggers\":[\"<f\"],\"structures\":[{\"begin\":\"<f>\",\"end\":7}]}", "/structures/0", "'begin', 'schema' and 'end'"))) {
      var e = assertThrows(GrammarException.class, () -> compile(b.spec()), b.spec());
      assertTrue(e.path().startsWith(b.path()), () -> b.spec() + " → " + e.path());
      assertTrue(e.getMessage().contains(b.says()), () -> b.spec() + " → " + e.getMessage());
    }
  }

  @Test
  void aRandomModelThatWritesATriggerFinishesItsStructureWithinItsTokens() throws Exception {
    // A random "model" over Qwen3's vocabulary, made to write the trigger at step 3 (as a model
    // that calls a tool would): the masker then holds it to a structure, and the output ends
    // within its tokens with every structure valid.
    TokenMasker masker = GrammarTesting.qwen3();
    Grammar g = compile(WEATHER);
    int[] ends = {GrammarTesting.IM_END};
    long[] mask = new long[masker.maskWords()];
    int trigger = -1;
    for (int t = 0; t < GrammarTesting.QWEN3_VOCAB && trigger < 0; t++) {
      if (java.util.Arrays.equals("<".getBytes(StandardCharsets.UTF_8), masker.vocabulary().bytes(t))) {
        trigger = t;
      }
    }
    java.util.regex.Pattern call = java.util.regex.Pattern.compile("<function=(get_weather|get_time)>(.*?)</function>", java.util.regex.Pattern.DOTALL);
    for (int seed = 0; seed < 6; seed++) {
      SplittableRandom random = new SplittableRandom(seed);
      GrammarState state = g.newState();
      StringBuilder out = new StringBuilder();
      String forced = "<function=";
      int budget = 48;
      boolean ended = false;
      for (int step = 0; step < budget && !ended; step++) {
        int n = masker.mask(state, budget - step, ends, mask);
        assertTrue(n > 0, "a way forward after " + out);
        int token = GrammarTesting.pick(mask, n, random);
        if (step >= 3 && !forced.isEmpty()) {
          token = tokenFor(masker, forced.substring(0, 1), trigger);
          forced = forced.substring(1);
          assertTrue((mask[token >>> 6] & (1L << token)) != 0, "the trigger's bytes are free text");
        }
        if (token == GrammarTesting.IM_END) {
          ended = true;
        } else {
          byte[] bytes = masker.vocabulary().bytes(token);
          assertTrue(state.advance(bytes));
          out.append(new String(bytes, StandardCharsets.UTF_8));
        }
      }
      String text = out.toString();
      assertTrue(ended, () -> "no end within the budget: " + text);
      int at = text.indexOf("<function=");
      assertTrue(at >= 0, text);
      var m = call.matcher(text);
      assertTrue(m.find(at) && m.start() == at, () -> "a whole structure where the trigger was written: " + text);
      var arguments = JSON.readTree(m.group(2));
      assertEquals(1, arguments.size(), text);
      assertTrue(m.group(1).equals("get_weather") ? arguments.get("city").isTextual() : List.of("UTC", "CET").contains(arguments.path("tz").asText()),
          () -> "valid under its schema: " + text);
    }
  }

  /** The single-byte token for {@code s} ({@code lt} for "<", found above). */
  private static int tokenFor(TokenMasker masker, String s, int lt) {
    if (s.equals("<")) {
      return lt;
    }
    byte[] want = s.getBytes(StandardCharsets.UTF_8);
    for (int t = 0; t < GrammarTesting.QWEN3_VOCAB; t++) {
      if (java.util.Arrays.equals(want, masker.vocabulary().bytes(t))) {
        return t;
      }
    }
    throw new AssertionError("no token for " + s);
  }
}
