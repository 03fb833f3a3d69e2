package dev.tandem.engine.grammar;

import static dev.tandem.engine.grammar.GrammarTesting.matches;
import static dev.tandem.engine.grammar.GrammarTesting.prefix;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.StructuredOutput;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The grammars over plain text that vLLM's {@code structured_outputs} asks for — a regular
 * expression matching the whole output, one of a list of strings, an EBNF grammar — matched byte
 * by byte, with their errors.
 */
class TextGrammarsTest {
  private static Grammar regex(String r) {
    return OutputGrammars.compile(StructuredOutput.regex(r));
  }

  private static Grammar choice(String jsonArray) {
    return OutputGrammars.compile(StructuredOutput.choice(jsonArray));
  }

  private static Grammar ebnf(String text) {
    return OutputGrammars.compile(StructuredOutput.grammar(text));
  }

  @Test
  void aRegularExpressionMatchesTheWholeOutputWrittenAsItIs() {
    Grammar email = regex("[a-z]+@[a-z]+\\.com");
    assertTrue(matches(email, "bob@example.com"));
    assertFalse(matches(email, "bob@example.com!"), "nothing may follow the match");
    assertFalse(prefix(email, " bob"), "nor precede it");
    assertTrue(prefix(email, "bob@ex"));
    assertEquals(matches(regex("^[a-z]+$"), "abc"), matches(regex("[a-z]+"), "abc"), "anchors change nothing");

    // Characters that a JSON string would escape are plain text here.
    Grammar quoted = regex("\"[^\"]*\"\\n\\\\");
    assertTrue(matches(quoted, "\"hi there\"\n\\"));
    assertFalse(prefix(quoted, "\\\""), "no JSON escapes");
    assertTrue(matches(regex("café( au lait)?"), "café au lait"), "non-ASCII literals");
    assertTrue(matches(regex("a.c"), "aéc"), "'.' takes a whole UTF-8 character");
    assertFalse(matches(regex("a.c"), "a\nc"), "but not a newline");
    assertTrue(matches(regex("\\d{3}-\\d{4}"), "555-1234"));
    assertFalse(matches(regex("\\d{3}-\\d{4}"), "555-123"));
    assertEquals("a@a.com", regex("[a-z]+@[a-z]+\\.com").shortestExample());

    GrammarException e = assertThrows(GrammarException.class, () -> regex("(?=a)b"));
    assertTrue(e.getMessage().contains("lookaround"), e.getMessage());
    assertTrue(matches(regex("x{2, 3}"), "xxx"), "counts read as in a grammar");
    assertTrue(assertThrows(GrammarException.class, () -> regex("x{1,2,3}")).getMessage().contains("in the form {m}, {m,} or {m,n}"));
    // Ends that once escaped as index errors: a class cut after a backslash; an escaped non-ASCII
    // character that is no letter (plain text: itself; in a schema's pattern: refused).
    assertThrows(GrammarException.class, () -> regex("[a\\"));
    assertTrue(matches(regex("a\\→b"), "a→b"));
    assertThrows(GrammarException.class, () -> JsonSchemaGrammar.compile("", "{\"type\":\"string\",\"pattern\":\"a\\\\→\"}", ""));
  }

  @Test
  void aChoiceIsExactlyOneOfItsStringsSharingTheirPrefixes() {
    Grammar g = choice("[\"positive\", \"negative\", \"neutral\", \"neutral\"]");
    for (String c : List.of("positive", "negative", "neutral")) {
      assertTrue(matches(g, c), c);
    }
    assertFalse(matches(g, "neg"));
    assertFalse(matches(g, "negative!"));
    assertFalse(prefix(g, "x"));
    assertTrue(prefix(g, "neu"));

    Grammar nested = choice("[\"a\", \"ab\", \"abc\", \"b\", \"\", \"é\"]");
    for (String c : List.of("a", "ab", "abc", "b", "", "é")) {
      assertTrue(matches(nested, c), "'" + c + "'");
    }
    assertFalse(matches(nested, "abcd"));
    assertFalse(matches(nested, "ac"));

    // One state per distinct next byte, not one per string: 4,096 strings sharing a long prefix.
    List<String> many = new ArrayList<>();
    for (int i = 0; i < OutputGrammars.MAX_CHOICES; i++) {
      many.add("label-" + "x".repeat(100) + i);
    }
    Grammar big = choice(toJson(many));
    GrammarState s = big.newState();
    assertTrue(s.advance(("label-" + "x".repeat(100) + "40").getBytes(StandardCharsets.UTF_8)));
    assertTrue(s.states().size() <= 11, "states after a shared prefix: " + s.states().size());
    assertTrue(s.accepting(), "label-…40 is one of them");
    assertTrue(s.advance("95".getBytes(StandardCharsets.UTF_8)) && s.accepting(), "and so is label-…4095");

    many.add("one too many");
    assertThrows(GrammarException.class, () -> choice(toJson(many)));
    assertThrows(GrammarException.class, () -> choice("[]"));
    assertThrows(GrammarException.class, () -> choice("[\"a\", 1]"));
  }

  @Test
  void anEbnfGrammarWithRecursionGroupsClassesAndComments() {
    Grammar arithmetic = ebnf("""
        # integer arithmetic
        root   ::= expr
        expr   ::= term (("+" | "-") term)*
        term   ::= factor
                   (("*" | "/") factor)*      # a rule may go on over lines
        factor ::= [0-9]+ | "(" expr ")"
        """);
    for (String ok : List.of("1", "1+2*(3-4)", "((((((((((7))))))))))", "12/3-(4*(5+6))")) {
      assertTrue(matches(arithmetic, ok), ok);
    }
    for (String bad : List.of("", "1+", "(1", "1)", "a", "1 + 2")) {
      assertFalse(matches(arithmetic, bad), bad);
    }

    Grammar escapes = ebnf("root ::= \"\\x41\\u00e9\\n\" [^\"\\\\]{2} . \"\\\"\"");
    assertTrue(matches(escapes, "Aé\nxyz\""));
    assertTrue(matches(escapes, "Aé\nx\nü\""), "a negated class and '.' take newlines and non-ASCII characters");
    assertFalse(matches(escapes, "Aé\n\"yz\""));

    Grammar counted = ebnf("root ::= [a-c]{2,3} \"-\" digit{2}\ndigit ::= [0-9]");
    assertTrue(matches(counted, "ab-12"));
    assertTrue(matches(counted, "abc-12"));
    assertFalse(matches(counted, "abca-12"));
    assertFalse(matches(counted, "ab-1"));
  }

  @Test
  void rightRecursionDoesNotDeepenTheStateSoLongOutputsMatch() {
    Grammar list = ebnf("root ::= \"a\" root | \"b\"");
    assertTrue(matches(list, "a".repeat(5_000) + "b"), "5,000 levels, past the matcher's depth limit of " + Grammar.MAX_DEPTH);
    Grammar choices = choice(toJson(List.of("a".repeat(3_000) + "x", "a".repeat(3_000) + "y", "a".repeat(1_500) + "z")));
    assertTrue(matches(choices, "a".repeat(3_000) + "y"));
  }

  @Test
  void nestingStopsWhereTheWayToTheEndWouldNoLongerFitTheDepthBound() {
    // Each opening bracket opens a level that its closing one ends; the matcher refuses the opening
    // that would leave no room to finish, never a byte of the finish itself.
    String[][] cases = {
        {"root ::= \"(\" root \")\" | \"x\"", "(", "x", ")"},
        {"root ::= e\ne ::= t (\"+\" t)*\nt ::= [0-9]+ (\".\" [0-9]+)? | \"(\" e \")\"", "(", "1", ")"},
        {null, "[", "", "]"}};
    for (String[] c : cases) {
      Grammar g = c[0] != null ? ebnf(c[0])
          : JsonSchemaGrammar.compile("", "{\"$defs\":{\"n\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/n\"}}},\"$ref\":\"#/$defs/n\"}", "");
      GrammarState s = g.newState();
      int open = 0;
      while (open < 1000 && s.advance(c[1].getBytes(StandardCharsets.UTF_8))) {
        open++;
      }
      assertTrue(open > 20 && open < 1000, "opened " + open);
      String rest = c[2] + c[3].repeat(open);
      assertTrue(s.advance(rest.getBytes(StandardCharsets.UTF_8)) && s.accepting(),
          "from the deepest state the matcher allows (" + open + " open), the output can be finished");
    }
  }

  @Test
  void anAmbiguousGrammarKeepsABoundedSetOfStatesAndStillReachesAValidEnd() {
    // Each "a" either expects a "b" later or not: 2^n parses of a^n without the bound.
    Grammar g = ebnf("root ::= \"a\" root | \"a\" root \"b\" | \"\"");
    GrammarState s = g.newState();
    assertTrue(s.advance("a".repeat(60).getBytes(StandardCharsets.UTF_8)));
    assertTrue(s.states().size() <= Grammar.MAX_TEXT_STATES, "states: " + s.states().size());
    int bs = 0;
    while (!s.accepting()) {
      assertTrue(s.advance(new byte[] {'b'}), "every state kept is a way to a valid end");
      bs++;
    }
    assertTrue(bs <= 60, "at most one b per a");
    assertTrue(matches(g, "a".repeat(60) + "b".repeat(bs)));
  }

  @Test
  void aRepetitionOfWhatCanMatchNothingGoesRoundOncePerByte() {
    // Each turn of the loop may take either empty alternative: without taking each turn once, the
    // matcher would walk 2^n ways at the start (n up to its depth limit) and never return.
    assertTimeoutPreemptively(java.time.Duration.ofSeconds(60), () -> {
      Grammar r = regex("(a?|b?)*c");
      assertTrue(matches(r, "abbac"));
      assertTrue(matches(r, "c"));
      assertFalse(matches(r, "abd"));
      Grammar g = ebnf("root ::= (x | y){0,500} \"c\"\nx ::= \"a\"?\ny ::= [b]* | \"\"");
      assertTrue(matches(g, "abbbac"));
      assertFalse(matches(g, "ca"));
      // Nested: each level would multiply the ways through the levels inside it.
      assertTrue(matches(ebnf("root ::= \"\"" + "+".repeat(40) + " \"x\""), "x"));
      Grammar counted = regex("(((a?){0,3}){0,3}){0,3}b");
      assertTrue(matches(counted, "a".repeat(27) + "b"));
      assertFalse(matches(counted, "a".repeat(28) + "b"));
    });
  }

  @Test
  void nestedRepetitionsOfWhatMatchesTakeBoundedWorkPerByte() {
    // Each level multiplies the ways through the ones inside it ((x{0,9}){0,9}… walks 9^depth of
    // them, (x+)+… tells 2^depth counts apart): one byte took minutes, and a fuzzed grammar of 69
    // bytes 21 s, before a step stopped at its bound and counts past a repetition's minimum merged.
    assertTimeoutPreemptively(java.time.Duration.ofSeconds(60), () -> {
      String text = "a".repeat(200);
      assertTrue(matches(regex("(".repeat(30) + "[a-z]" + "){0,9}".repeat(30)), text));
      assertTrue(matches(regex("(".repeat(30) + "[a-z]" + "){1,9}".repeat(30)), text));
      assertTrue(matches(regex("(".repeat(30) + "." + ")+".repeat(30)), text));
      assertTrue(matches(ebnf("root ::= " + "(".repeat(30) + "[a-z]" + ")*".repeat(30)), text));
      assertTrue(matches(ebnf("root ::= \"\"" + "+".repeat(6) + "*" + "[a-z]" + "+".repeat(30)), text));
      assertFalse(matches(regex("(".repeat(30) + "[a-z]" + "){1,9}".repeat(30)), text + "!"));
    });
  }

  @Test
  void aRepetitionOfARepetitionIsOneWhereItsCountsLeaveNoGap() {
    // (x{a,b}){c,d} is x N times, N in the union of [k·a, k·b] for k in c..d: one repetition where
    // that union has no gap, so nesting keeps one count per state; the language is the same either way.
    Grammar folded = regex("((a{0,9}){0,9}){0,9}b");
    assertTrue(matches(folded, "a".repeat(729) + "b"));
    assertFalse(matches(folded, "a".repeat(730) + "b"));
    Grammar range = regex("(a{2,3}){2}");
    for (int n = 0; n <= 8; n++) {
      assertEquals(n >= 4 && n <= 6, matches(range, "a".repeat(n)), "a×" + n);
    }
    Grammar gaps = regex("(a{2}){0,2}"); // {0, 2, 4}: not one repetition
    for (int n = 0; n <= 5; n++) {
      assertEquals(n % 2 == 0, matches(gaps, "a".repeat(n)), "a×" + n);
    }
    Grammar steps = ebnf("root ::= (\"ab\"{3,4}){2,3}"); // 6..8 then 9..12: no gap
    for (int n = 0; n <= 13; n++) {
      assertEquals(n >= 6 && n <= 12, matches(steps, "ab".repeat(n)), "ab×" + n);
    }
    Grammar apart = ebnf("root ::= (\"ab\"{3}){1,2}"); // 3 or 6
    for (int n = 0; n <= 7; n++) {
      assertEquals(n == 3 || n == 6, matches(apart, "ab".repeat(n)), "ab×" + n);
    }
    assertTrue(matches(regex("(((a+){2,}){3,})"), "a".repeat(6)));
    assertFalse(matches(regex("(((a+){2,}){3,})"), "a".repeat(5)));
  }

  @Test
  void anAlternationOfThousandsOfStringsReachesEachOfThem() {
    // One state per option would pass the matcher's 256: the options after them could not be written.
    StringBuilder g = new StringBuilder("root ::= ");
    for (int i = 0; i < 1_000; i++) {
      g.append(i > 0 ? " | " : "").append("\"w").append(i).append("x\"");
    }
    Grammar words = ebnf(g.toString());
    for (int i : new int[] {0, 255, 256, 999}) {
      assertTrue(matches(words, "w" + i + "x"), "w" + i + "x");
    }
    assertFalse(matches(words, "w1000x"));
    Grammar prefixes = ebnf("root ::= (\"a\" | \"ab\" | \"abc\" | \"ab\") \";\"");
    assertTrue(matches(prefixes, "a;") && matches(prefixes, "ab;") && matches(prefixes, "abc;"));
    assertFalse(matches(prefixes, "abcd;"));
  }

  @Test
  void groupsNestedPastTheBoundAndRuleChainsTooDeepToCompileAreRefused() {
    GrammarException nested = assertThrows(GrammarException.class, () -> regex("(".repeat(65) + "a" + ")".repeat(65)));
    assertTrue(nested.getMessage().contains("groups are nested more than 64 deep"), nested.getMessage());
    assertTrue(matches(regex("(".repeat(64) + "a" + ")".repeat(64)), "a"));
    StringBuilder chain = new StringBuilder("root ::= r0\n");
    for (int i = 0; i < 6_000; i++) {
      chain.append('r').append(i).append(" ::= \"a\" r").append(i + 1).append('\n');
    }
    chain.append("r6000 ::= \"b\"\n");
    // Whether 6,000 levels overflow a thread's stack depends on its size and on how far the JIT
    // has compiled the walks; on any thread the chain compiles and matches, or is refused by name.
    try {
      assertTrue(matches(ebnf(chain.toString()), "a".repeat(6_000) + "b"));
    } catch (GrammarException e) {
      assertTrue(e.getMessage().contains("the grammar nests too deeply to compile"), e.getMessage());
    }
    // On a thread of a 128 KiB stack it cannot compile: the overflow is the refusal.
    java.util.concurrent.atomic.AtomicReference<Throwable> thrown = new java.util.concurrent.atomic.AtomicReference<>();
    Thread small = new Thread(null, () -> {
      try {
        ebnf(chain.toString());
      } catch (Throwable t) {
        thrown.set(t);
      }
    }, "small-stack", 128 * 1024);
    small.start();
    assertTimeoutPreemptively(java.time.Duration.ofSeconds(60), () -> small.join());
    GrammarException deep = assertInstanceOf(GrammarException.class, thrown.get());
    assertTrue(deep.getMessage().contains("the grammar nests too deeply to compile"), deep.getMessage());
  }

  @Test
  void badGrammarsAreRefusedNamingTheRuleOrTheLineAndColumn() {
    assertError("root ::= root \"a\" | \"a\"", "the rule 'root' is left-recursive");
    assertError("root ::= x\nx ::= y \"b\"\ny ::= \"\" x | \"c\"", "left-recursive");
    assertError("root ::= \"a\" missing", "line 1, column 14: the rule 'missing' is used but never defined");
    assertError("start ::= \"a\"", "no rule named 'root'");
    assertError("root ::= \"a\"\nroot ::= \"b\"", "line 2, column 1: the rule 'root' is defined twice");
    assertError("root ::= \"a\nb\"", "line 1, column 10: unclosed string");
    assertError("root ::= 'a'", "strings are written in double quotes");
    assertError("root ::= [é-ü]", "non-ASCII characters in classes are not supported");
    assertError("root ::= \"a\"{3,2}", "repetition counts");
    assertError("root ::= (\"a\"", "unclosed '('");
    assertError("root ::= \"a\" root", "no finite output");
    assertError("", "the grammar is empty");
    assertError("root ::= " + "(".repeat(100) + "\"a\"" + ")".repeat(100), "nested more than 64 deep");
  }

  private static void assertError(String grammar, String expected) {
    GrammarException e = assertThrows(GrammarException.class, () -> ebnf(grammar), grammar);
    assertTrue(e.getMessage().contains(expected), () -> "expected '" + expected + "' in: " + e.getMessage());
  }

  private static String toJson(List<String> strings) {
    try {
      return new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(strings);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new AssertionError(e);
    }
  }
}
