package dev.tandem.engine.grammar;

import static dev.tandem.engine.grammar.GrammarTesting.matches;
import static dev.tandem.engine.grammar.GrammarTesting.prefix;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
        () -> g("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"number\",\"multipleOf\":5}}}"));
    assertEquals("/properties/n/multipleOf", e.path());
    assertEquals("/format", assertThrows(GrammarException.class, () -> g("{\"type\":\"string\",\"format\":\"hostname\"}")).path());
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
