package dev.tandem.bench;

import java.net.URI;
import java.time.Duration;

/**
 * A load-generator run. Either fixed {@code concurrency} (requests in flight at once) or, when
 * {@code requestRate} is positive, Poisson arrivals at that many requests per second.
 *
 * @param endpoint {@code completions} (prompts sent as exact token ids) or {@code chat} (prompts as
 *     words, roughly one token each)
 * @param prefixes with {@code prefixRepeats}: a shared-prefix workload of prefixes × repeats
 *     requests, shuffled, each starting with one of {@code prefixes} prefixes of {@code
 *     prefixTokens} tokens; 0 for independent prompts
 */
public record BenchConfig(
    URI url,
    String model,
    String endpoint,
    int concurrency,
    double requestRate,
    int numRequests,
    int inputTokens,
    int outputTokens,
    int prefixes,
    int prefixRepeats,
    int prefixTokens,
    long seed,
    Duration timeout) {

  public BenchConfig {
    if (!endpoint.equals("completions") && !endpoint.equals("chat")) {
      throw new IllegalArgumentException("endpoint must be completions or chat, was " + endpoint);
    }
    if (requestRate <= 0 && concurrency < 1) {
      throw new IllegalArgumentException("give a concurrency >= 1 or a request rate > 0");
    }
    if (inputTokens < 1 || outputTokens < 1) {
      throw new IllegalArgumentException("input and output tokens must be positive");
    }
    if (prefixes > 0 && (prefixRepeats < 1 || prefixTokens < 1 || prefixTokens > inputTokens)) {
      throw new IllegalArgumentException("a shared-prefix workload needs repeats >= 1 and 1 <= prefix tokens <= input tokens");
    }
  }

  /** Requests the run sends. */
  public int totalRequests() {
    return prefixes > 0 ? prefixes * prefixRepeats : numRequests;
  }
}
