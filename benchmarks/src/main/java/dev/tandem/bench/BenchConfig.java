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
    Duration timeout,
    int turns,
    int longTokens,
    double longShare,
    String apiKey,
    double durationS) {

  public BenchConfig {
    if (!endpoint.equals("completions") && !endpoint.equals("chat")) {
      throw new IllegalArgumentException("endpoint must be completions or chat, was " + endpoint);
    }
    if (!(requestRate >= 0) || Double.isInfinite(requestRate)) {
      throw new IllegalArgumentException("--request-rate must be 0 (a closed loop at --concurrency) or a positive number, was " + requestRate);
    }
    if (requestRate == 0 && concurrency < 1) {
      throw new IllegalArgumentException("--concurrency must be at least 1 (or give --request-rate > 0), was " + concurrency);
    }
    if (turns <= 0 && prefixes <= 0 && numRequests < 1) {
      throw new IllegalArgumentException("--num-requests must be at least 1, was " + numRequests);
    }
    if (inputTokens < 1 || outputTokens < 1) {
      throw new IllegalArgumentException("--input-tokens and --output-tokens must be at least 1, were " + inputTokens + " and " + outputTokens);
    }
    if (turns > 0) {
      if (prefixes < 1 || prefixTokens < 1) {
        throw new IllegalArgumentException("a multi-turn workload needs conversations (--prefixes) >= 1 and a first turn (--prefix-tokens) >= 1");
      }
    } else if (prefixes > 0 && (prefixRepeats < 1 || prefixTokens < 1 || prefixTokens > inputTokens)) {
      throw new IllegalArgumentException("a shared-prefix workload needs --prefix-repeats >= 1 and 1 <= --prefix-tokens <= --input-tokens");
    }
    if (longShare < 0 || longShare > 1 || (longShare > 0 && longTokens < 1)) {
      throw new IllegalArgumentException("a mixed workload needs 0 <= --long-share <= 1 and --long-tokens >= 1");
    }
    if (durationS < 0 || (durationS > 0 && requestRate > 0)) {
      throw new IllegalArgumentException("--duration-s must be 0 or more and goes with --concurrency, not --request-rate");
    }
  }

  /** Requests the run sends. */
  public int totalRequests() {
    return turns > 0 ? prefixes * turns : prefixes > 0 ? prefixes * prefixRepeats : numRequests;
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
    private int turns;
    private int longTokens;
    private double longShare;
    private double durationS;
    private String apiKey;

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

    /**
     * Multi-turn conversations: {@code conversations} of {@code turns} turns, the first {@code
     * firstTurnTokens} long, each later one the whole conversation so far plus {@code turnTokens}
     * (the last answer and a new question). Turns go out in order, one turn of every conversation
     * at a time.
     */
    public Builder multiTurn(int conversations, int turns, int firstTurnTokens, int turnTokens) {
      this.prefixes = conversations;
      this.turns = turns;
      this.prefixTokens = firstTurnTokens;
      this.inputTokens = turnTokens;
      return this;
    }

    /** Independent prompts, a {@code share} of them {@code longTokens} long instead of the input length. */
    public Builder mixed(int longTokens, double share) {
      this.longTokens = longTokens;
      this.longShare = share;
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

    /** Sent as {@code Authorization: Bearer <key>} (null: none). */
    public Builder apiKey(String apiKey) {
      this.apiKey = apiKey;
      return this;
    }

    /** Keep the concurrency's requests in flight for this long, cycling through the workload's prompts (0: send them once). */
    public Builder duration(double seconds) {
      this.durationS = seconds;
      return this;
    }

    /**
     * @throws IllegalArgumentException naming what is inconsistent
     */
    public BenchConfig build() {
      return new BenchConfig(url, model, endpoint, concurrency, requestRate, numRequests, inputTokens, outputTokens,
          prefixes, prefixRepeats, prefixTokens, seed, timeout, turns, longTokens, longShare, apiKey, durationS);
    }
  }
}
