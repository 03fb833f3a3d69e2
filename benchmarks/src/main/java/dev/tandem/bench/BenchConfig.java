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

  /**
   * A run against {@code url} serving {@code model}, with {@code tandem bench}'s defaults: 100
   * completions of 512 input and 64 output tokens, one at a time, no shared prefixes, seed 0,
   * 600 s per request.
   */
  public static Builder builder(URI url, String model) {
    return new Builder(url, model);
  }

  /** Builds a {@link BenchConfig}; every setter returns the builder. */
  public static final class Builder {
    private final URI url;
    private final String model;
    private String endpoint = "completions";
    private int concurrency = 1;
    private double requestRate;
    private int numRequests = 100;
    private int inputTokens = 512;
    private int outputTokens = 64;
    private int prefixes;
    private int prefixRepeats = 1;
    private int prefixTokens = 256;
    private long seed;
    private Duration timeout = Duration.ofSeconds(600);

    private Builder(URI url, String model) {
      this.url = url;
      this.model = model;
    }

    /** {@code completions} or {@code chat}. */
    public Builder endpoint(String endpoint) {
      this.endpoint = endpoint;
      return this;
    }

    /** Requests in flight at once (a closed loop); ignored when a request rate is set. */
    public Builder concurrency(int concurrency) {
      this.concurrency = concurrency;
      return this;
    }

    /** Poisson arrivals at this rate per second (an open loop). */
    public Builder requestRate(double perSecond) {
      this.requestRate = perSecond;
      return this;
    }

    public Builder numRequests(int numRequests) {
      this.numRequests = numRequests;
      return this;
    }

    public Builder tokens(int input, int output) {
      this.inputTokens = input;
      this.outputTokens = output;
      return this;
    }

    /** {@code prefixes} shared prefixes of {@code tokens} tokens, each used {@code repeats} times. */
    public Builder sharedPrefixes(int prefixes, int repeats, int tokens) {
      this.prefixes = prefixes;
      this.prefixRepeats = repeats;
      this.prefixTokens = tokens;
      return this;
    }

    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    public Builder timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    /**
     * @throws IllegalArgumentException naming what is inconsistent
     */
    public BenchConfig build() {
      return new BenchConfig(url, model, endpoint, concurrency, requestRate, numRequests, inputTokens, outputTokens,
          prefixes, prefixRepeats, prefixTokens, seed, timeout);
    }
  }
}
