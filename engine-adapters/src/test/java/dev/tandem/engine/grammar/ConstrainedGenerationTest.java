package dev.tandem.engine.grammar;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * A "model" with no preference at all — each step a uniformly random allowed token, or the
 * argmax of random logits — constrained by each schema of the corpus over the real Qwen3
 * vocabulary (151,936 ids), must end within its token budget with JSON that an independent
 * validator (networknt json-schema-validator, format assertions on) accepts. In the full tier:
 * the real vocabulary's trie and 200 generations take seconds.
 */
@org.junit.jupiter.api.Tag("e2e")
class ConstrainedGenerationTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int[] ENDS = {GrammarTesting.IM_END};
  private static final SchemaRegistry REGISTRY = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12);

  @Test
  void everySchemaOfTheCorpusGivesValidJsonFromARandomModel() throws Exception {
    TokenMasker masker = GrammarTesting.qwen3();
    assertTrue(SchemaCorpus.SCHEMAS.size() >= 30);
    List<Long> maskNanos = new ArrayList<>();
    int runs = 0;
    for (String schemaText : SchemaCorpus.SCHEMAS) {
      Grammar grammar = JsonSchemaGrammar.compile("", schemaText, "");
      Schema validator = REGISTRY.getSchema(JSON.readTree(schemaText));
      for (int seed = 0; seed < 3; seed++) {
        for (boolean greedy : new boolean[] {false, true}) {
          String out = generate(masker, grammar, new SplittableRandom(seed * 31L + schemaText.hashCode()), greedy, 96, maskNanos);
          JsonNode value = JSON.readTree(out);
          var errors = validator.validate(value, ctx -> ctx.executionConfig(c -> c.formatAssertionsEnabled(true)));
          assertEquals(List.of(), errors, () -> schemaText + " seed gave " + out);
          runs++;
        }
      }
    }
    maskNanos.sort(null);
    System.out.printf("%d constrained generations, %d masks: p50 %.1f µs, p99 %.1f µs, max %.1f ms; frame cache %d hits, %d misses%n",
        runs, maskNanos.size(), maskNanos.get(maskNanos.size() / 2) / 1e3,
        maskNanos.get((int) (maskNanos.size() * 0.99)) / 1e3, maskNanos.getLast() / 1e6,
        masker.cacheHits(), masker.cacheMisses());
  }

  @Test
  void regexChoiceAndGrammarOutputsOfARandomModelMatchWhatJavasRegexSays() {
    TokenMasker masker = GrammarTesting.qwen3();
    // Each constraint beside a java.util.regex pattern for the same language (the EBNF grammar's is regular).
    java.util.Map<dev.tandem.common.StructuredOutput, String> cases = new java.util.LinkedHashMap<>();
    cases.put(dev.tandem.common.StructuredOutput.regex("\\(\\d{3}\\) \\d{3}-\\d{4}"), "\\(\\d{3}\\) \\d{3}-\\d{4}");
    cases.put(dev.tandem.common.StructuredOutput.regex("[A-Z][a-z]+( [a-z\"\\\\]+| café){1,6}[.!?]\\n"), "[A-Z][a-z]+( [a-z\"\\\\]+| café){1,6}[.!?]\\n");
    cases.put(dev.tandem.common.StructuredOutput.choice("[\"positive\",\"negative\",\"neutral\",\"n/a\"]"), "positive|negative|neutral|n/a");
    cases.put(dev.tandem.common.StructuredOutput.grammar("""
        root ::= "SELECT " cols " FROM " table (" WHERE " col " = " [0-9]{1,4})? ";"
        cols ::= "*" | col (", " col)*
        col ::= "id" | "name" | "email"
        table ::= "users" | "orders"
        """), "SELECT (\\*|(id|name|email)(, (id|name|email))*) FROM (users|orders)( WHERE (id|name|email) = [0-9]{1,4})?;");
    for (var c : cases.entrySet()) {
      Grammar grammar = OutputGrammars.compile(c.getKey());
      for (int seed = 0; seed < 4; seed++) {
        String out = generate(masker, grammar, new SplittableRandom(seed), seed % 2 == 1, 160, new ArrayList<>());
        assertTrue(out.matches(c.getValue()), () -> c.getKey().spec() + " gave " + out);
      }
    }
  }

  @Test
  void aRecursiveGrammarNestedAsDeepAsARandomModelGoesAlwaysFindsItsWayToTheEnd() {
    // A random walk opens parentheses far more often than it closes them: past the matcher's depth
    // bound, each output must still have a way to close them all within the budget.
    Grammar arithmetic = OutputGrammars.compile(dev.tandem.common.StructuredOutput.grammar("""
        root ::= expr
        expr ::= term (ws [+-] ws term)*
        term ::= factor (ws [*/] ws factor)*
        factor ::= [0-9]+ ("." [0-9]+)? | "(" ws expr ws ")"
        ws ::= " "?
        """));
    for (int seed = 0; seed < 20; seed++) {
      String out = generate(GrammarTesting.qwen3(), arithmetic, new SplittableRandom(seed), false, 256, new ArrayList<>());
      int open = 0;
      for (char c : out.toCharArray()) {
        open += c == '(' ? 1 : c == ')' ? -1 : 0;
        assertTrue(open >= 0, out);
      }
      assertEquals(0, open, out);
      String s = out;
      for (String before = ""; !before.equals(s); ) { // reduce innermost parentheses to a number
        before = s;
        s = s.replaceAll("\\( ?[0-9.]+( ?[-+*/] ?[0-9.]+)* ?\\)", "1");
      }
      assertTrue(s.matches("[0-9.]+( ?[-+*/] ?[0-9.]+)*"), () -> "not arithmetic: " + out);
    }
  }

  @Test
  void aPrefixAndSuffixFrameTheValue() throws Exception {
    Grammar grammar = JsonSchemaGrammar.compile("<tool_call>\n",
        "{\"type\":\"object\",\"properties\":{\"name\":{\"const\":\"get_weather\"},\"arguments\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}},\"required\":[\"name\",\"arguments\"]}",
        "\n</tool_call>");
    String out = generate(GrammarTesting.qwen3(), grammar, new SplittableRandom(7), false, 64, new ArrayList<>());
    assertTrue(out.startsWith("<tool_call>\n{") && out.endsWith("}\n</tool_call>"), out);
    JsonNode call = JSON.readTree(out.substring("<tool_call>\n".length(), out.length() - "\n</tool_call>".length()));
    assertEquals("get_weather", call.get("name").asText());
    assertTrue(call.get("arguments").get("city").isTextual());
  }

  @Test
  void aBudgetTooSmallForTheValueEndsIncompleteButNeverInvalidSoFar() {
    Grammar grammar = JsonSchemaGrammar.compile("", "{\"type\":\"string\",\"minLength\":20}", "");
    TokenMasker masker = GrammarTesting.qwen3();
    GrammarState state = grammar.newState();
    long[] mask = new long[masker.maskWords()];
    SplittableRandom random = new SplittableRandom(3);
    for (int left = 3; left > 0; left--) {
      int n = masker.mask(state, left, ENDS, mask);
      assertTrue(n > 0, "the masker always offers a way forward");
      int token = GrammarTesting.pick(mask, n, random);
      assertTrue(state.advance(masker.vocabulary().bytes(token)));
    }
  }

  /** Generates until an end token, returning the text; fails if the budget runs out first. */
  @Test
  void anAmbiguousNestingIsMaskedFromAFewOfItsFramesAndStillEndsValid() {
    // Each count of each level (the optional b after it keeps them apart) is a frame, and each new
    // frame a walk of the vocabulary: a mask of the 8-level form took 4 s before a call stopped
    // masking new frames past TokenMasker.MASK_WORK.
    String nested = "(".repeat(4) + "[a-z]" + "){0,9}b?".repeat(4);
    Grammar grammar = OutputGrammars.compile(dev.tandem.common.StructuredOutput.regex(nested));
    TokenMasker masker = GrammarTesting.qwen3();
    long leftOut = masker.framesLeftOut();
    for (int seed = 0; seed < 2; seed++) {
      String out = generate(masker, grammar, new SplittableRandom(seed), seed == 1, 32, new ArrayList<>());
      assertTrue(out.matches(nested), out);
    }
    assertTrue(masker.framesLeftOut() > leftOut, "some states had more new frames than one mask computes");
  }

  @Test
  void aWideStateOfCheapFramesIsMaskedWhole() {
    // An anyOf of 1,000 string patterns: a frame per value, a few hundred frames stepped each. A
    // flat bound per call left 800 of them out of the first mask (the model could not choose those
    // values). (An enum of the same values, or an anyOf of consts, is a trie: a frame per first letter.)
    StringBuilder e = new StringBuilder("{\"anyOf\":[");
    java.util.List<String> values = new ArrayList<>();
    SplittableRandom random = new SplittableRandom(7);
    for (int i = 0; i < 1_000; i++) {
      StringBuilder w = new StringBuilder();
      for (int k = 0; k < 6; k++) {
        w.append((char) ('a' + random.nextInt(26)));
      }
      values.add(w.toString() + i);
      e.append(i > 0 ? "," : "").append("{\"type\":\"string\",\"pattern\":\"^").append(values.getLast()).append("$\"}");
    }
    Grammar grammar = OutputGrammars.compile(dev.tandem.common.StructuredOutput.jsonSchema(e.append("]}").toString()));
    TokenMasker masker = GrammarTesting.qwen3();
    GrammarState state = grammar.newState();
    assertTrue(state.advance("\"".getBytes(StandardCharsets.UTF_8)));
    long leftOut = masker.framesLeftOut();
    long[] mask = new long[masker.maskWords()];
    masker.mask(state, 100, ENDS, mask);
    assertEquals(leftOut, masker.framesLeftOut(), "no value's frame left out");
    for (String v : values) { // each value's first letter is allowed as a token
      int token = masker.vocabulary().size();
      for (int t = 0; t < masker.vocabulary().size() && token == masker.vocabulary().size(); t++) {
        if (java.util.Arrays.equals(masker.vocabulary().bytes(t), v.substring(0, 1).getBytes(StandardCharsets.UTF_8))) {
          token = t;
        }
      }
      int t = token;
      assertTrue((mask[t >>> 6] & (1L << t)) != 0, () -> "the first letter of " + v);
    }
  }

  static String generate(TokenMasker masker, Grammar grammar, SplittableRandom random, boolean greedy, int maxTokens,
      List<Long> maskNanos) {
    GrammarState state = grammar.newState();
    long[] mask = new long[masker.maskWords()];
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int step = 0; step < maxTokens; step++) {
      long t0 = System.nanoTime();
      int n = masker.mask(state, maxTokens - step, ENDS, mask);
      maskNanos.add(System.nanoTime() - t0);
      assertTrue(n > 0, "no token allowed after " + out.toString(StandardCharsets.UTF_8));
      int token = greedy ? argmaxOfRandomLogits(mask, random) : GrammarTesting.pick(mask, n, random);
      if (token == GrammarTesting.IM_END) {
        assertTrue(state.accepting());
        return out.toString(StandardCharsets.UTF_8);
      }
      byte[] bytes = masker.vocabulary().bytes(token);
      assertTrue(state.advance(bytes), "a masked-in token must keep the grammar alive");
      out.writeBytes(bytes);
    }
    throw new AssertionError("no end within " + maxTokens + " tokens: " + out.toString(StandardCharsets.UTF_8));
  }

  private static int argmaxOfRandomLogits(long[] mask, SplittableRandom random) {
    int best = -1;
    double bestLogit = Double.NEGATIVE_INFINITY;
    for (int w = 0; w < mask.length; w++) {
      for (long word = mask[w]; word != 0; word &= word - 1) {
        double logit = random.nextDouble();
        if (logit > bestLogit) {
          bestLogit = logit;
          best = w * 64 + Long.numberOfTrailingZeros(word);
        }
      }
    }
    return best;
  }
}
