package dev.tandem.common;

import java.util.Objects;

/**
 * A constraint on a generation's output: {@code prefix}, then a JSON value valid under {@code
 * jsonSchema} (schema text), then {@code suffix}, then the end of the sequence. The frontend
 * builds it from {@code response_format} or a forced tool call; the engine compiles it into a
 * grammar and masks every token that would leave it. Immutable.
 */
public record StructuredOutput(String jsonSchema, String prefix, String suffix) {
  /** {@code response_format: json_object}: any JSON object. */
  public static final StructuredOutput JSON_OBJECT = new StructuredOutput("{\"type\":\"object\"}", "", "");

  public StructuredOutput {
    Objects.requireNonNull(jsonSchema, "jsonSchema");
    Objects.requireNonNull(prefix, "prefix");
    Objects.requireNonNull(suffix, "suffix");
  }

  public static StructuredOutput jsonSchema(String schema) {
    return new StructuredOutput(schema, "", "");
  }
}
