package dev.tandem.engine.sched;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.nio.charset.StandardCharsets;

/**
 * Fuzz target for {@code --speculative-config} (a flag value, often set through the chart's
 * {@code model.speculativeConfig}): any text is read into a valid configuration or refused with
 * an {@link IllegalArgumentException} naming the flag; a valid one's lookup, run over any tokens,
 * proposes at most what it was asked for, each token one that occurs in them. Input: the text,
 * then (after a 0 byte) tokens, a byte each, from an alphabet of eight so that n-grams repeat.
 * Committed inputs run with every test run; {@code .ci/fuzz} fuzzes it for a bounded time.
 */
class SpeculativeConfigFuzzTest {
  @FuzzTest(maxDuration = "30s")
  void speculativeConfig(byte[] bytes) {
    int split = 0;
    while (split < bytes.length && bytes[split] != 0) {
      split++;
    }
    String text = new String(bytes, 0, split, StandardCharsets.UTF_8);
    SpeculativeConfig config;
    try {
      config = SpeculativeConfig.parse(text, "--speculative-config");
    } catch (IllegalArgumentException e) {
      assertTrue(e.getMessage().startsWith("--speculative-config"), "names the flag: " + e.getMessage());
      return;
    }
    if (!config.enabled()) {
      assertEquals(SpeculativeConfig.OFF, config, "off only for an empty value");
      assertTrue(text.isBlank(), "off only for an empty value: " + text);
      return;
    }
    assertTrue(config.tokens() >= 1 && config.tokens() <= SpeculativeConfig.MAX_TOKENS, config.toString());
    assertTrue(config.lookupMin() >= 1 && config.lookupMin() <= config.lookupMax(), config.toString());
    int n = Math.max(0, bytes.length - split - 1);
    int[] tokens = new int[n];
    boolean[] seen = new boolean[8];
    for (int i = 0; i < n; i++) {
      tokens[i] = bytes[split + 1 + i] & 7;
      seen[tokens[i]] = true;
    }
    int[] out = new int[config.tokens()];
    int proposed = config.propose(tokens, n, config.tokens(), out);
    assertTrue(proposed == 0 || proposed == config.tokens(), "a match proposes the whole limit: " + proposed);
    for (int i = 0; i < proposed; i++) {
      assertTrue(seen[out[i]], "proposed " + out[i] + ", which never occurred");
    }
  }
}
