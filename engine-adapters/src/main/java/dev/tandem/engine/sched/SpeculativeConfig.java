package dev.tandem.engine.sched;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Iterator;
import java.util.Set;

/**
 * Speculative decoding by n-gram lookup (vLLM's {@code "method": "ngram"}, "prompt lookup
 * decoding"): before a decode step, the last {@code lookupMax} down to {@code lookupMin} tokens of
 * a sequence are looked for earlier in its prompt and output; the up to {@code tokens} tokens that
 * followed the latest match are run through the model with the sequence's next token in one pass,
 * and kept as far as the model agrees with them ({@link Scheduler}). {@link #OFF}: {@code tokens}
 * 0.
 */
public record SpeculativeConfig(int tokens, int lookupMax, int lookupMin) {
  public static final SpeculativeConfig OFF = new SpeculativeConfig(0, 0, 0);
  /** The longest n-gram looked up when the configuration does not say. */
  public static final int DEFAULT_LOOKUP_MAX = 4;
  /** The shortest: a single repeated token predicts too little to pay for the longer pass. */
  public static final int DEFAULT_LOOKUP_MIN = 2;
  /** Most tokens proposed at once: the positions one pass verifies stay within one LM-head chunk. */
  public static final int MAX_TOKENS = 15;

  private static final Set<String> FIELDS = Set.of("method", "num_speculative_tokens", "prompt_lookup_max", "prompt_lookup_min");

  public SpeculativeConfig {
    if (tokens != 0 && (tokens < 1 || tokens > MAX_TOKENS || lookupMin < 1 || lookupMax < lookupMin)) {
      throw new IllegalArgumentException("speculation needs 1.." + MAX_TOKENS + " tokens and 1 <= lookup min <= lookup max, was "
          + tokens + " tokens, n-grams " + lookupMin + ".." + lookupMax);
    }
  }

  public boolean enabled() {
    return tokens > 0;
  }

  /**
   * Reads vLLM's {@code --speculative-config} JSON, e.g. {@code {"method": "ngram",
   * "num_speculative_tokens": 4, "prompt_lookup_max": 4}}; null or blank: {@link #OFF}.
   *
   * @throws IllegalArgumentException naming {@code flag} and the field that is wrong
   */
  public static SpeculativeConfig parse(String json, String flag) {
    if (json == null || json.isBlank()) {
      return OFF;
    }
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException(flag + " is not JSON: " + e.getOriginalMessage());
    }
    if (root == null || !root.isObject()) {
      throw new IllegalArgumentException(flag + " must be a JSON object like {\"method\": \"ngram\", \"num_speculative_tokens\": 4}");
    }
    for (Iterator<String> names = root.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (!FIELDS.contains(name)) {
        throw new IllegalArgumentException(flag + ": unknown field '" + name + "'; known: method, num_speculative_tokens, "
            + "prompt_lookup_max, prompt_lookup_min");
      }
    }
    JsonNode method = root.get("method");
    if (method == null || !method.isTextual()) {
      throw new IllegalArgumentException(flag + ": 'method' is required; the built-in engine speculates by \"ngram\"");
    }
    if (!method.asText().equals("ngram")) {
      throw new IllegalArgumentException(flag + ": method '" + method.asText() + "' is not supported; the built-in engine "
          + "speculates by \"ngram\" (prompt lookup) only: it has no draft-model, EAGLE, Medusa or MTP proposer");
    }
    int tokens = integer(root, "num_speculative_tokens", -1, flag);
    if (tokens < 1 || tokens > MAX_TOKENS) {
      throw new IllegalArgumentException(flag + ": 'num_speculative_tokens' must be 1.." + MAX_TOKENS
          + (tokens == -1 ? " and is required" : ", was " + tokens));
    }
    int max = integer(root, "prompt_lookup_max", -1, flag);
    int min = integer(root, "prompt_lookup_min", -1, flag);
    if (max == -1) {
      max = Math.max(DEFAULT_LOOKUP_MAX, min);
    }
    if (min == -1) {
      min = Math.min(DEFAULT_LOOKUP_MIN, max);
    }
    if (min < 1) {
      throw new IllegalArgumentException(flag + ": 'prompt_lookup_min' must be at least 1, was " + min);
    }
    if (max < min) {
      throw new IllegalArgumentException(flag + ": 'prompt_lookup_max' (" + max + ") is less than 'prompt_lookup_min' (" + min + ")");
    }
    return new SpeculativeConfig(tokens, max, min);
  }

  private static int integer(JsonNode root, String field, int absent, String flag) {
    JsonNode v = root.get(field);
    if (v == null || v.isNull()) {
      return absent;
    }
    if (!v.canConvertToExactIntegral() || !v.canConvertToInt()) {
      throw new IllegalArgumentException(flag + ": '" + field + "' must be an integer, was " + v);
    }
    return v.asInt();
  }

  /**
   * Proposes what followed the latest earlier occurrence of the sequence's last n tokens, n from
   * {@code lookupMax} down to {@code lookupMin} (continued as a repeat where the match runs into
   * the end); writes {@code min(max, out.length)} tokens to {@code out} and returns that count, or 0
   * where nothing matches.
   */
  public int propose(int[] tokens, int length, int max, int[] out) {
    int limit = Math.min(max, out.length);
    if (limit <= 0) {
      return 0;
    }
    for (int n = Math.min(lookupMax, length - 1); n >= lookupMin; n--) {
      int suffix = length - n;
      // The latest match first: it is the likeliest to be continued.
      for (int start = suffix - 1; start >= 0; start--) {
        if (matches(tokens, start, suffix, n)) {
          // What followed the match, continued past the end as the repeat it found (a loop keeps looping).
          int from = start + n;
          for (int i = 0; i < limit; i++) {
            out[i] = from + i < length ? tokens[from + i] : out[from + i - length];
          }
          return limit;
        }
      }
    }
    return 0;
  }

  private static boolean matches(int[] tokens, int a, int b, int n) {
    for (int i = n - 1; i >= 0; i--) { // the last token differs most often
      if (tokens[a + i] != tokens[b + i]) {
        return false;
      }
    }
    return true;
  }
}
