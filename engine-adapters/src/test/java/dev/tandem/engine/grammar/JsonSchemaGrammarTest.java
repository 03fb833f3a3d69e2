package dev.tandem.engine.grammar;

import static dev.tandem.engine.grammar.GrammarTesting.assertMatch;
import static dev.tandem.engine.grammar.GrammarTesting.assertNoMatch;
import static dev.tandem.engine.grammar.GrammarTesting.matches;
import static dev.tandem.engine.grammar.GrammarTesting.prefix;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class JsonSchemaGrammarTest {
  private static Grammar g(String schema) {
    return JsonSchemaGrammar.compile("", schema, "");
  }

  @Test
  void objectWithRequiredAndOptionalPropertiesInSchemaOrder() {
    Grammar grammar = g("""
        {"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},
         "required":["name"]}""");
    assertTrue(matches(grammar, "{\"name\":\"Ada\"}"));
    assertTrue(matches(grammar, "{\"name\": \"Ada\", \"age\": 36}"));
    assertTrue(matches(grammar, "{\n  \"name\": \"Ada\",\n  \"tags\": [\"a\", \"b\"]\n}"));
    assertTrue(matches(grammar, "{\"name\":\"Ada\",\"age\":-3,\"tags\":[]}"));
    assertFalse(matches(grammar, "{\"age\":36}"), "name is required");
    assertFalse(matches(grammar, "{\"age\":36,\"name\":\"Ada\"}"), "properties come in the schema's order");
    assertFalse(matches(grammar, "{\"name\":\"Ada\",\"extra\":1}"), "no additional properties");
    assertFalse(matches(grammar, "{\"name\":\"Ada\",\"age\":3.5}"), "age is an integer");
    assertFalse(matches(grammar, "{\"name\":\"Ada\"} "), "nothing after the value");
    assertTrue(prefix(grammar, "{\"name\":\"Ad"));
  }

  @Test
  void stringsEscapesUtf8AndLengths() {
    Grammar any = g("{\"type\":\"string\"}");
    assertTrue(matches(any, "\"a\\\"b\\\\c\\n\\u00e9 é 日本 😀\""));
    assertFalse(matches(any, "\"tab\there\""), "raw control characters are not JSON");
    assertFalse(matches(any, "\"\\ud800\""), "lone surrogate escapes are left out");
    assertFalse(prefix(any, "\"\u0000"));
    Grammar bounded = g("{\"type\":\"string\",\"minLength\":2,\"maxLength\":3}");
    assertFalse(matches(bounded, "\"a\""));
    assertTrue(matches(bounded, "\"ab\""));
    assertTrue(matches(bounded, "\"a\\nc\""), "an escape is one character");
    assertTrue(matches(bounded, "\"日本語\""));
    assertFalse(matches(bounded, "\"abcd\""));
  }

  @Test
  void numbersWithRanges() {
    Grammar percent = g("{\"type\":\"integer\",\"minimum\":0,\"maximum\":100}");
    assertTrue(matches(percent, "0"));
    assertTrue(matches(percent, "100"));
    assertFalse(matches(percent, "101"));
    assertFalse(prefix(percent, "-1"), "no negative integer is in range");
    assertTrue(matches(percent, "-0"), "-0 is 0");
    assertFalse(prefix(percent, "2."), "integers have no point");
    assertFalse(prefix(percent, "01"));
    Grammar prob = g("{\"type\":\"number\",\"minimum\":0,\"exclusiveMaximum\":1}");
    assertTrue(matches(prob, "0.25"));
    assertTrue(matches(prob, "0"));
    assertFalse(prefix(prob, "1"), "1 and everything starting with it is at least 1");
    Grammar negative = g("{\"type\":\"number\",\"maximum\":-2.5}");
    assertTrue(matches(negative, "-2.5"));
    assertTrue(matches(negative, "-10"));
    assertFalse(matches(negative, "-2.4"));
    assertFalse(prefix(negative, "-2.4"), "every number starting -2.4 is above -2.5");
    assertTrue(prefix(negative, "-2.5"));
  }

  @Test
  void enumsConstAnyOfNullableRefs() {
    Grammar color = g("{\"enum\":[\"red\",\"green\",null,3]}");
    assertTrue(matches(color, "\"green\""));
    assertTrue(matches(color, "null"));
    assertTrue(matches(color, "3"));
    assertFalse(matches(color, "\"blue\""));
    Grammar union = g("{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"object\",\"properties\":{\"a\":{\"const\":true}},\"required\":[\"a\"]}]}");
    assertTrue(matches(union, "12"));
    assertTrue(matches(union, "{\"a\":true}"));
    assertFalse(matches(union, "{\"a\":false}"));
    Grammar nullable = g("{\"type\":[\"string\",\"null\"]}");
    assertTrue(matches(nullable, "null"));
    assertTrue(matches(nullable, "\"x\""));
    Grammar openApi = g("{\"type\":\"integer\",\"nullable\":true}");
    assertTrue(matches(openApi, "null"), "OpenAPI's nullable");
    assertTrue(matches(openApi, "7"));
    Grammar tree = g("""
        {"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},
         "$ref":"#/$defs/node"}""");
    assertTrue(matches(tree, "{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3,\"kids\":[{\"v\":4}]}]}"));
    assertFalse(matches(tree, "{\"v\":1,\"kids\":[{}]}"));
  }

  @Test
  void patternsAndFormats() {
    Grammar zip = g("{\"type\":\"string\",\"pattern\":\"^[0-9]{5}(-[0-9]{4})?$\"}");
    assertTrue(matches(zip, "\"12345\""));
    assertTrue(matches(zip, "\"12345-6789\""));
    assertFalse(matches(zip, "\"1234\""));
    Grammar contains = g("{\"type\":\"string\",\"pattern\":\"ab+\"}");
    assertTrue(matches(contains, "\"xxabbby\""), "an unanchored pattern matches anywhere");
    assertFalse(matches(contains, "\"xxa\""));
    Grammar quote = g("{\"type\":\"string\",\"pattern\":\"^[\\\"a]+$\"}");
    assertTrue(matches(quote, "\"a\\\"a\""), "a quote in the class is written escaped");
    Grammar date = g("{\"type\":\"string\",\"format\":\"date\"}");
    assertTrue(matches(date, "\"2026-12-01\""));
    assertFalse(matches(date, "\"2026-13-01\""));
  }

  @Test
  void aPatternOfNestedCountedRepetitionsTakesBoundedWorkPerByte() {
    // Schema grammars keep every state, but a step's walk is bounded: this pattern walked 9^depth
    // ways per byte (a minute and more at depth 8) before it was.
    org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(60), () -> {
      Grammar nested = g("{\"type\":\"string\",\"pattern\":\"^" + "(".repeat(12) + "a" + "){0,9}".repeat(12) + "$\"}");
      assertTrue(matches(nested, "\"" + "a".repeat(60) + "\""));
      assertFalse(matches(nested, "\"" + "a".repeat(60) + "b\""));
    });
  }

  @Test
  void anEnumOrAnyOfOfThousandsReachesItsLastOption() {
    // A step's walk is bounded, but by more than a walk through every node of the grammar.
    StringBuilder values = new StringBuilder("{\"enum\":[");
    StringBuilder branches = new StringBuilder("{\"anyOf\":[");
    for (int i = 0; i < 5_000; i++) {
      values.append(i > 0 ? "," : "").append("\"v").append(i).append('"');
      branches.append(i > 0 ? "," : "").append("{\"type\":\"object\",\"properties\":{\"k").append(i)
          .append("\":{\"type\":\"integer\"}},\"required\":[\"k").append(i).append("\"]}");
    }
    assertTrue(matches(g(values.append("]}").toString()), "\"v4999\""));
    assertTrue(matches(g(branches.append("]}").toString()), "{\"k4999\":1}"));
  }

  @Test
  void otherMembersBesideNamedOnes() {
    // Pydantic's extra="allow": the named members in order, then any others
    Grammar open = g("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},\"additionalProperties\":true}");
    assertMatch(open, "{}", "{\"a\":1}", "{\"a\":1, \"b\":[1]}", "{\"b\":{\"c\":null}}", "{\"a\":1,\"b\":2,\"\":3}");
    assertNoMatch(open, "{\"a\":1,\"a\":2}", "{\"a\":\"x\"}");
    // others' names are none of the named ones, whatever prefixes they share
    Grammar typed = g("{\"properties\":{\"name\":{\"type\":\"integer\"},\"nam\":{\"type\":\"integer\"},"
        + "\"names\":{\"type\":\"integer\"},\"a\\\"b\":{\"type\":\"integer\"}},\"additionalProperties\":{\"type\":\"string\"}}");
    for (String key : List.of("na", "namex", "namesx", "x", "", "nbme", "a\\\"c", "a", "a\\\"", "é")) {
      assertTrue(matches(typed, "{\"" + key + "\":\"s\"}"), key);
    }
    for (String key : List.of("name", "nam", "names", "a\\\"b")) {
      assertFalse(matches(typed, "{\"" + key + "\":\"s\"}"), key + " is named: its value must be an integer");
      assertTrue(matches(typed, "{\"" + key + "\":1}"), key);
    }
    assertTrue(matches(typed, "{\"nam\":1,\"names\":2,\"other\":\"s\",\"more\":\"t\"}"));
    assertFalse(matches(typed, "{\"nam\":1,\"other\":3}"), "another member's value is a string");
    // required members still come first
    Grammar required = g("{\"properties\":{\"id\":{\"type\":\"integer\"}},\"required\":[\"id\"],\"additionalProperties\":true}");
    assertTrue(matches(required, "{\"id\":1,\"x\":true}"));
    assertFalse(matches(required, "{\"x\":true}"));
    assertEquals("/additionalProperties", assertThrows(GrammarException.class,
        () -> g("{\"properties\":{\"é\":{}},\"additionalProperties\":true}")).path());
  }

  @Test
  void tuples() {
    // Pydantic's tuple[int, str]
    Grammar pair = g("{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"string\"}],\"minItems\":2,\"maxItems\":2}");
    assertTrue(matches(pair, "[1,\"a\"]"));
    assertTrue(matches(pair, "[ 1, \"a\" ]"));
    assertNoMatch(pair, "[1]", "[]", "[1,\"a\",2]", "[\"a\",1]", "[1,2]");
    // tuple[int, *str]-like: the rest under items
    Grammar open = g("{\"prefixItems\":[{\"type\":\"integer\"}],\"items\":{\"type\":\"string\"}}");
    assertMatch(open, "[]", "[1]", "[1,\"a\",\"b\"]");
    assertNoMatch(open, "[\"a\"]", "[1,2]", "[1,\"a\",3]");
    // no rest, and no minimum: any prefix of the tuple
    Grammar upTo = g("{\"type\":\"array\",\"prefixItems\":[{\"type\":\"integer\"},{\"const\":\"x\"}],\"items\":false}");
    assertMatch(upTo, "[]", "[1]", "[1,\"x\"]");
    assertFalse(matches(upTo, "[1,\"x\",2]"));
    // no prefix but no rest: only []
    assertTrue(matches(g("{\"type\":\"array\",\"items\":false}"), "[]"));
    assertFalse(matches(g("{\"type\":\"array\",\"items\":false}"), "[1]"));
    // the earlier drafts' form: items as a list, the rest under additionalItems
    Grammar draft7 = g("{\"type\":\"array\",\"items\":[{\"type\":\"boolean\"},{\"type\":\"null\"}],\"additionalItems\":{\"type\":\"integer\"},\"minItems\":1,\"maxItems\":3}");
    assertMatch(draft7, "[true]", "[false,null]", "[true,null,7]");
    assertNoMatch(draft7, "[]", "[true,null,7,8]", "[true,1]", "[null]");
    // the rest's count within minItems and maxItems
    Grammar three = g("{\"prefixItems\":[{\"type\":\"integer\"}],\"minItems\":3,\"maxItems\":4}");
    assertMatch(three, "[1,2,3]", "[1,{},[],\"z\"]");
    assertNoMatch(three, "[1,2]", "[1,2,3,4,5]");
    Grammar capped = g("{\"prefixItems\":[{\"type\":\"integer\"},{\"type\":\"integer\"},{\"type\":\"integer\"}],\"maxItems\":2}");
    assertMatch(capped, "[1,2]");
    assertNoMatch(capped, "[1,2,3]");
    assertEquals("/minItems", assertThrows(GrammarException.class,
        () -> g("{\"prefixItems\":[{}],\"items\":false,\"minItems\":2}")).path());
    assertEquals("/minItems", assertThrows(GrammarException.class, () -> g("{\"items\":false,\"minItems\":1}")).path());
    assertEquals("/prefixItems", assertThrows(GrammarException.class, () -> g("{\"prefixItems\":[]}")).path());
    assertEquals("/prefixItems/1/type", assertThrows(GrammarException.class,
        () -> g("{\"prefixItems\":[{},{\"type\":\"strin\"}]}")).path());
    assertEquals("/items", assertThrows(GrammarException.class, () -> g("{\"prefixItems\":[{}],\"items\":[{}]}")).path());
  }

  @Test
  void multiplesOf() {
    Grammar fives = g("{\"type\":\"integer\",\"multipleOf\":5}");
    assertMatch(fives, "0", "5", "-15", "100", "-0");
    assertNoMatch(fives, "7", "12", "-1");
    assertTrue(prefix(fives, "1"), "10 follows");
    Grammar cents = g("{\"type\":\"number\",\"multipleOf\":0.01}");
    assertTrue(matches(cents, "1.23"));
    assertTrue(matches(cents, "-0.5"));
    assertTrue(matches(cents, "3"));
    assertTrue(matches(cents, "2.50"), "2.50 is 2.5");
    assertFalse(prefix(cents, "1.234"), "no multiple of 0.01 starts with 1.234");
    assertFalse(prefix(cents, "1.231"), "nor with 1.231 (1.2310… is not one either)");
    assertTrue(prefix(cents, "1.230"), "1.230 is 1.23");
    Grammar quarters = g("{\"type\":\"number\",\"multipleOf\":0.25,\"minimum\":0,\"maximum\":1}");
    assertFalse(prefix(quarters, "0.3"), "[0.3, 0.4) holds no quarter");
    assertTrue(prefix(quarters, "0.2"), "0.25");
    assertFalse(matches(quarters, "1.25"));
    Grammar integerOfHalves = g("{\"type\":\"integer\",\"multipleOf\":2.5}"); // integers that are multiples of 2.5: of 5
    assertTrue(matches(integerOfHalves, "10"));
    assertFalse(matches(integerOfHalves, "7"));
    assertFalse(prefix(integerOfHalves, "2."));
    Grammar sevens = g("{\"multipleOf\":7,\"minimum\":10,\"maximum\":20}"); // no type: a number
    assertTrue(matches(sevens, "14"));
    assertTrue(matches(sevens, "14.0"));
    assertFalse(prefix(sevens, "2"), "20 to 29 and 2.x hold no multiple of 7 in range");
    assertFalse(matches(sevens, "21"));
  }

  @Test
  void multiplesOfAgainstArithmetic() {
    // Every number of up to 3 integer and 2 fraction digits in [-30, 30]: accepted exactly when a
    // multiple in range, and each of its prefixes alive exactly when some number in the grid continues it.
    java.util.SplittableRandom random = new java.util.SplittableRandom(11);
    String[] steps = {"0.5", "0.25", "3", "0.1", "0.03", "7", "1.5", "0.07"};
    for (String step : steps) {
      for (boolean integer : new boolean[] {false, true}) {
        int lo = random.nextInt(-30, 10);
        int hi = lo + random.nextInt(1, 40);
        String schema = "{\"type\":\"" + (integer ? "integer" : "number") + "\",\"multipleOf\":" + step
            + ",\"minimum\":" + lo + ",\"exclusiveMaximum\":" + hi + "}";
        Grammar grammar = g(schema);
        java.math.BigDecimal unit = new java.math.BigDecimal(step);
        for (int cents = -3_000; cents <= 3_000; cents++) {
          java.math.BigDecimal v = java.math.BigDecimal.valueOf(cents, 2);
          if (integer && cents % 100 != 0) {
            continue;
          }
          String text = integer ? v.toBigInteger().toString() : v.stripTrailingZeros().toPlainString();
          boolean valid = v.remainder(unit).signum() == 0 && v.compareTo(java.math.BigDecimal.valueOf(lo)) >= 0
              && v.compareTo(java.math.BigDecimal.valueOf(hi)) < 0;
          assertEquals(valid, matches(grammar, text), () -> schema + " on " + text);
          if (valid) {
            for (int k = 1; k < text.length(); k++) {
              assertTrue(prefix(grammar, text.substring(0, k)), schema + " prefix of " + text);
            }
          }
        }
      }
    }
  }

  @Test
  void formats() {
    Grammar ipv6 = g("{\"type\":\"string\",\"format\":\"ipv6\"}");
    assertMatch(ipv6, quoted("2001:db8::1", "::", "::1", "fe80::", "1:2:3:4:5:6:7:8", "1::8", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8"));
    assertNoMatch(ipv6, quoted("1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", ":1", "1:2:3:4:5:6:7", "g::"));
    Grammar host = g("{\"type\":\"string\",\"format\":\"hostname\"}");
    assertMatch(host, quoted("localhost", "api.example.com", "a-b.c1", "x".repeat(62) + ".io"));
    assertNoMatch(host, quoted("-a.com", "a-.com", "a..b", ".a", "a_b", "a.b.c.d.e", ""));
    Grammar duration = g("{\"type\":\"string\",\"format\":\"duration\"}");
    assertMatch(duration, quoted("P1Y2M3DT4H5M6S", "PT30M", "P2W", "P3D", "PT1H", "P1M", "P1YT2S"));
    assertNoMatch(duration, quoted("P", "PT", "P1H", "1D", "P1DT", "P2W1D", "P1D2Y"));
  }

  /** Each of {@code texts} as a JSON string (none needs escaping). */
  private static String[] quoted(String... texts) {
    return java.util.Arrays.stream(texts).map(t -> "\"" + t + "\"").toArray(String[]::new);
  }

  @Test
  void anEnumSharesItsValuesPrefixes() {
    // As a trie, 1,000 values that start with one of 26 letters are 26 ways after the opening
    // quote, not 1,000 (each a frame the matcher steps and the masker masks).
    StringBuilder values = new StringBuilder("{\"enum\":[");
    for (int i = 0; i < 1_000; i++) {
      values.append(i > 0 ? "," : "").append('"').append((char) ('a' + i % 26)).append("value").append(i).append('"');
    }
    Grammar grammar = g(values.append(",\"a\",\"ab\",3,30,null]}").toString());
    GrammarState state = grammar.newState();
    assertTrue(state.advance("\"".getBytes(StandardCharsets.UTF_8)));
    assertTrue(state.states().size() <= 26, "ways after the quote: " + state.states().size());
    assertMatch(grammar, "\"avalue0\"", "\"lvalue999\"", "\"zvalue25\"", "\"a\"", "\"ab\"", "3", "30", "null");
    assertNoMatch(grammar, "\"avalue1\"", "\"\"", "\"abc\"", "\"b\"", "33", "\"zvalue99\"");
  }

  @Test
  void aUnionOfConstsAndEnumsIsOneEnum() {
    // Documented choices ({"const": …, "title": …} each) share prefixes like an enum's values.
    StringBuilder branches = new StringBuilder("{\"oneOf\":[");
    for (int i = 0; i < 300; i++) {
      branches.append(i > 0 ? "," : "").append("{\"const\":\"").append((char) ('a' + i % 26)).append("choice").append(i)
          .append("\",\"title\":\"choice ").append(i).append("\"}");
    }
    Grammar grammar = g(branches.append(",{\"enum\":[1,2]},{\"const\":{\"k\":[true]}}]}").toString());
    GrammarState state = grammar.newState();
    assertTrue(state.advance("\"".getBytes(StandardCharsets.UTF_8)));
    assertTrue(state.states().size() <= 26, "ways after the quote: " + state.states().size());
    assertMatch(grammar, "\"achoice0\"", "\"nchoice299\"", "1", "2", "{\"k\":[true]}");
    assertNoMatch(grammar, "\"achoice1\"", "3", "{\"k\": [true]}", "null");
    // A branch of any other kind keeps the union an alternation, with the same values.
    Grammar mixed = g("{\"anyOf\":[{\"const\":\"a\"},{\"type\":\"integer\"},{\"const\":\"b\",\"nullable\":true}]}");
    assertMatch(mixed, "\"a\"", "\"b\"", "12", "null");
    assertFalse(matches(mixed, "\"c\""));
  }

  @Test
  void anyJsonAndJsonObject() {
    Grammar object = g("{\"type\":\"object\"}");
    assertTrue(matches(object, "{\"a\": [1, {\"b\": null}, \"x\"], \"c\": -0.5}"));
    assertFalse(matches(object, "[1]"));
    Grammar any = g("{}");
    assertTrue(matches(any, "[true,false,null,\"s\",{}]"));
  }

  @Test
  void unsupportedKeywordsAreNamed() {
    GrammarException e = assertThrows(GrammarException.class,
        () -> g("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"number\",\"not\":{\"const\":5}}}}"));
    assertEquals("/properties/n/not", e.path());
    assertEquals("/format", assertThrows(GrammarException.class, () -> g("{\"type\":\"string\",\"format\":\"uri\"}")).path());
    assertEquals("/minimum", assertThrows(GrammarException.class, () -> g("{\"type\":\"number\",\"minimum\":1e999}")).path(),
        "a number past a double's range is refused by name, not a NumberFormatException");
    for (String step : List.of("0", "-2", "1e-16", "-1e999")) {
      assertEquals("/multipleOf", assertThrows(GrammarException.class,
          () -> g("{\"type\":\"number\",\"multipleOf\":" + step + "}")).path(), step);
    }
    assertTrue(assertThrows(GrammarException.class,
        () -> g("{\"type\":\"integer\",\"multipleOf\":10,\"minimum\":1,\"maximum\":9}")).getMessage().contains("multiple of 10"));
    assertEquals("/pattern", assertThrows(GrammarException.class, () -> g("{\"type\":\"string\",\"pattern\":\"(?=a)\"}")).path());
    assertEquals("/required", assertThrows(GrammarException.class,
        () -> g("{\"properties\":{\"a\":{}},\"required\":[\"b\"]}")).path());
    assertTrue(assertThrows(GrammarException.class,
        () -> g("{\"type\":\"integer\",\"minimum\":5,\"maximum\":4}")).getMessage().contains("range"));
    assertThrows(GrammarException.class, () -> g("{\"$ref\":\"#\"}"), "recursion without end admits no value");
    assertThrows(GrammarException.class, () -> g("{\"type\":\"strin\"}"));
    assertThrows(GrammarException.class, () -> g("not json"));
  }
}
