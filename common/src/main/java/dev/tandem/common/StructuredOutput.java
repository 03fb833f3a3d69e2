package dev.tandem.common;

import java.util.Objects;

/**
 * A constraint on a generation's output: {@code prefix}, then a JSON value valid under {@code
 * jsonSchema} (schema text), then {@code suffix}, then the end of the sequence. The frontend
 * builds it from {@code response_format} or a forced tool call; the engine compiles it into a
 * grammar and masks every token that would leave it. {@code resumeTokens}: the last that many
 * prompt tokens are output already generated under this constraint (a stream moved to another
 * worker mid-way); the engine's matcher starts after them. Immutable.
 */
public record StructuredOutput(String jsonSchema, String prefix, String suffix, int resumeTokens) {
  /** {@code response_format: json_object}: any JSON object. */
  public static final StructuredOutput JSON_OBJECT = new StructuredOutput("{\"type\":\"object\"}", "", "");

  public StructuredOutput(String jsonSchema, String prefix, String suffix) {
    this(jsonSchema, prefix, suffix, 0);
  }

  public StructuredOutput {
    Objects.requireNonNull(jsonSchema, "jsonSchema");
    Objects.requireNonNull(prefix, "prefix");
    Objects.requireNonNull(suffix, "suffix");
    if (resumeTokens < 0) {
      throw new IllegalArgumentException("resumeTokens must not be negative, was " + resumeTokens);
    }
  }

  /** The same constraint, resumed after {@code tokens} output tokens already generated. */
  public StructuredOutput resumedAfter(int tokens) {
    return new StructuredOutput(jsonSchema, prefix, suffix, tokens);
  }

  /** The constraint itself, without where it resumes (what a compiled grammar is cached by). */
  public StructuredOutput fromTheStart() {
    return resumeTokens == 0 ? this : new StructuredOutput(jsonSchema, prefix, suffix, 0);
  }

  public static StructuredOutput jsonSchema(String schema) {
    return new StructuredOutput(schema, "", "");
  }
}
