package dev.tandem.engine.grammar;

import java.util.List;

/** JSON schemas of the kinds agents send, for generation tests and the mask benchmark. */
public final class SchemaCorpus {
  private SchemaCorpus() {}

  public static final List<String> SCHEMAS = List.of(
      "{\"type\":\"object\"}",
      "{\"type\":\"string\"}",
      "{\"type\":\"integer\"}",
      "{\"type\":\"boolean\"}",
      "{\"type\":\"array\",\"items\":{\"type\":\"number\"},\"maxItems\":5}",
      "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":150}},\"required\":[\"name\",\"age\"],\"additionalProperties\":false}",
      "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":20},\"unit\":{\"enum\":[\"celsius\",\"fahrenheit\"]}},\"required\":[\"city\"]}",
      "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"},\"d\":{\"type\":\"string\"}}}",
      "{\"type\":\"object\",\"properties\":{\"items\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"sku\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}-[0-9]{4}$\"},\"qty\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":99}},\"required\":[\"sku\",\"qty\"]},\"minItems\":1,\"maxItems\":3}},\"required\":[\"items\"]}",
      "{\"enum\":[\"red\",\"green\",\"blue\",null,42,true]}",
      "{\"const\":{\"version\":2,\"ok\":true}}",
      "{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\",\"maxLength\":8},{\"type\":\"null\"}]}",
      "{\"type\":[\"number\",\"null\"],\"minimum\":-1,\"maximum\":1}",
      "{\"type\":\"number\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":1}",
      "{\"type\":\"integer\",\"minimum\":1000,\"maximum\":1005}",
      "{\"type\":\"number\",\"minimum\":-273.15,\"maximum\":-200.5}",
      "{\"type\":\"string\",\"minLength\":3,\"maxLength\":6}",
      "{\"type\":\"string\",\"format\":\"date\"}",
      "{\"type\":\"string\",\"format\":\"date-time\"}",
      "{\"type\":\"string\",\"format\":\"uuid\"}",
      "{\"type\":\"string\",\"format\":\"email\"}",
      "{\"type\":\"string\",\"format\":\"ipv4\"}",
      "{\"type\":\"string\",\"pattern\":\"^(yes|no|maybe)$\"}",
      "{\"type\":\"string\",\"pattern\":\"^\\\\d{3}-\\\\w+$\"}",
      "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"value\":{\"type\":\"integer\"},\"children\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/node\"},\"maxItems\":2}},\"required\":[\"value\"]}},\"$ref\":\"#/$defs/node\"}",
      "{\"definitions\":{\"point\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"},\"y\":{\"type\":\"number\"}},\"required\":[\"x\",\"y\"]}},\"type\":\"object\",\"properties\":{\"from\":{\"$ref\":\"#/definitions/point\"},\"to\":{\"$ref\":\"#/definitions/point\"}},\"required\":[\"from\",\"to\"]}",
      "{\"type\":\"object\",\"properties\":{\"shape\":{\"oneOf\":[{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"circle\"},\"r\":{\"type\":\"number\",\"minimum\":0}},\"required\":[\"kind\",\"r\"]},{\"type\":\"object\",\"properties\":{\"kind\":{\"const\":\"square\"},\"side\":{\"type\":\"number\",\"minimum\":0}},\"required\":[\"kind\",\"side\"]}]}},\"required\":[\"shape\"]}",
      "{\"type\":\"object\",\"properties\":{\"note\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]},\"score\":{\"type\":[\"integer\",\"null\"]}},\"required\":[\"note\",\"score\"]}",
      "{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}",
      "{\"type\":\"array\",\"items\":{\"type\":\"array\",\"items\":{\"type\":\"boolean\"},\"minItems\":2,\"maxItems\":2},\"minItems\":2,\"maxItems\":3}",
      "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"description\":\"the user's name\",\"title\":\"Name\"},\"email\":{\"type\":\"string\",\"format\":\"email\"},\"roles\":{\"type\":\"array\",\"items\":{\"enum\":[\"admin\",\"user\",\"guest\"]},\"minItems\":1}},\"required\":[\"name\",\"email\",\"roles\"],\"additionalProperties\":false}",
      "{\"type\":\"object\",\"properties\":{\"location\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":14},\"details\":{\"type\":\"object\",\"properties\":{\"hourly\":{\"type\":\"boolean\"},\"fields\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":4}}}},\"required\":[\"location\",\"days\"]}",
      "{\"allOf\":[{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\",\"exclusiveMinimum\":0}},\"required\":[\"id\"]}]}",
      "{}");
}
