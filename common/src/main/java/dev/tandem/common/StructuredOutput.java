package dev.tandem.common;

import java.util.Objects;

/**
 * A constraint on a generation's output: {@code prefix}, then text of the given {@link Kind} —
 * a JSON value valid under a JSON schema, text a regular expression matches whole, one of a list
 * of strings, text an EBNF grammar derives, or free text with structures after triggers ({@code
 * spec} holds the schema, the expression, the strings as a JSON array, the grammar, or the
 * structures and triggers as a JSON object) — then {@code suffix}, then the end of the sequence.
 * The frontend builds it from {@code response_format}, vLLM's {@code structured_outputs} or a
 * forced tool call; the engine compiles it into a grammar and masks every token that would leave
 * it. {@code reasoning}: free text the model may reason in first (a reasoning model's {@code
 * <think>…</think>}), {@link Reasoning#NONE} for none. A stream moved to another worker mid-way
 * resumes it after the output so far ({@link GenerationRequest#resumedOutputTokens}). Immutable.
 */
public record StructuredOutput(Kind kind, String spec, String prefix, String suffix, Reasoning reasoning) {
  /** What {@code spec} is. */
  public enum Kind { JSON_SCHEMA, REGEX, CHOICE, GRAMMAR, STRUCTURAL_TAG }

  /**
   * Where a reasoning model reasons before the constrained output, which then follows {@code
   * close} (and at most two newlines). {@code opened}: the output starts inside the reasoning (the
   * prompt opened it), so it runs from the first token to {@code close}; otherwise the output may
   * begin with {@code open} … {@code close}, or go straight to the constrained text. Nothing is
   * constrained inside the reasoning but that it ends with the first {@code close}.
   */
  public record Reasoning(String open, String close, boolean opened) {
    /** No reasoning: the constraint applies from the first token. */
    public static final Reasoning NONE = new Reasoning("", "", false);

    public Reasoning {
      Objects.requireNonNull(open, "open");
      Objects.requireNonNull(close, "close");
      if (close.isEmpty() && (!open.isEmpty() || opened)) {
        throw new IllegalArgumentException("reasoning needs the text that closes it");
      }
      if (!close.isEmpty() && !opened && open.isEmpty()) {
        throw new IllegalArgumentException("reasoning that the output may open needs the text that opens it");
      }
    }

    /** True for {@link #NONE}. */
    public boolean none() {
      return close.isEmpty();
    }
  }

  /** {@code response_format: json_object}: any JSON object. */
  public static final StructuredOutput JSON_OBJECT = new StructuredOutput("{\"type\":\"object\"}", "", "");

  /** A JSON value valid under the schema {@code jsonSchema}, between {@code prefix} and {@code suffix}. */
  public StructuredOutput(String jsonSchema, String prefix, String suffix) {
    this(Kind.JSON_SCHEMA, jsonSchema, prefix, suffix, Reasoning.NONE);
  }

  /** A constraint from the first output token (no reasoning before it). */
  public StructuredOutput(Kind kind, String spec, String prefix, String suffix) {
    this(kind, spec, prefix, suffix, Reasoning.NONE);
  }

  public StructuredOutput {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(spec, "spec");
    Objects.requireNonNull(prefix, "prefix");
    Objects.requireNonNull(suffix, "suffix");
    Objects.requireNonNull(reasoning, "reasoning");
  }

  /** The same constraint after {@code r}'s reasoning. */
  public StructuredOutput withReasoning(Reasoning r) {
    return new StructuredOutput(kind, spec, prefix, suffix, r);
  }

  public static StructuredOutput jsonSchema(String schema) {
    return new StructuredOutput(schema, "", "");
  }

  /** Text that the regular expression {@code regex} matches as a whole. */
  public static StructuredOutput regex(String regex) {
    return new StructuredOutput(Kind.REGEX, regex, "", "");
  }

  /** Exactly one of the strings in {@code jsonArray} (a JSON array of strings). */
  public static StructuredOutput choice(String jsonArray) {
    return new StructuredOutput(Kind.CHOICE, jsonArray, "", "");
  }

  /**
   * Free text in which each occurrence of a trigger starts one of the structures that begin with
   * it — its {@code begin}, a JSON value valid under its {@code schema}, its {@code end} — and
   * free text follows (vLLM's {@code structural_tag}); {@code spec} is the JSON object {@code
   * {"structures": [{"begin", "schema", "end"}, …], "triggers": […]}}.
   */
  public static StructuredOutput structuralTag(String spec) {
    return new StructuredOutput(Kind.STRUCTURAL_TAG, spec, "", "");
  }

  /** Text that the EBNF grammar {@code ebnf} derives from its rule {@code root}. */
  public static StructuredOutput grammar(String ebnf) {
    return new StructuredOutput(Kind.GRAMMAR, ebnf, "", "");
  }
}
