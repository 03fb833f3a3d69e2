package dev.tandem.common;

import java.util.Objects;

/**
 * One generation as the frontend hands it to the router and the router to a worker: the prompt's
 * token ids, sampling and stop rules, an optional {@link StructuredOutput} constraint, and (when
 * the router splits the request) the prefill worker that computes the prompt, and the LoRA adapter
 * it runs with ({@code loraName}, null for the base model). {@code resumedOutputTokens}: the last
 * that many prompt tokens are output already generated (a stream moved to another worker mid-way),
 * which penalties, the output's grammar and a thinking budget count as output. {@code priority}:
 * vLLM's, lower first where the worker schedules by priority (0 by default). {@code cacheSalt}:
 * vLLM's, null for none; only requests with the same one share cached blocks ({@link #hashSalt}). {@code embed}: the
 * worker returns the prompt's embedding (the final norm's output for its last token) on the first
 * chunk, for OpenAI's embeddings endpoint. Immutable; {@code
 * promptTokens} is copied in and must not be changed through the accessor.
 */
public record GenerationRequest(
    String requestId,
    int[] promptTokens,
    SamplingParams sampling,
    StopConditions stop,
    RemotePrefillTarget remotePrefill,
    StructuredOutput structuredOutput,
    String loraName,
    int resumedOutputTokens,
    int priority,
    String cacheSalt,
    boolean embed) {
  public GenerationRequest {
    loraName = loraName == null || loraName.isEmpty() ? null : loraName;
    cacheSalt = cacheSalt == null || cacheSalt.isEmpty() ? null : cacheSalt;
    Objects.requireNonNull(requestId, "requestId");
    promptTokens = promptTokens.clone();
    Objects.requireNonNull(sampling, "sampling");
    Objects.requireNonNull(stop, "stop");
    checkResumed(requestId, resumedOutputTokens, promptTokens.length);
  }

  /**
   * Checks that a request resuming after {@code resumedOutputTokens} output tokens has that many in
   * its prompt of {@code promptLength}.
   *
   * @throws IllegalArgumentException naming the request and both counts
   */
  public static void checkResumed(String requestId, int resumedOutputTokens, int promptLength) {
    if (resumedOutputTokens < 0 || resumedOutputTokens > promptLength) {
      throw new IllegalArgumentException("request " + requestId + " resumes after " + resumedOutputTokens
          + " output tokens but its prompt has " + promptLength);
    }
  }

  public GenerationRequest(
      String requestId, int[] promptTokens, SamplingParams sampling, StopConditions stop, RemotePrefillTarget remotePrefill,
      StructuredOutput structuredOutput, String loraName, int resumedOutputTokens, int priority, String cacheSalt) {
    this(requestId, promptTokens, sampling, stop, remotePrefill, structuredOutput, loraName, resumedOutputTokens, priority, cacheSalt, false);
  }

  public GenerationRequest(
      String requestId, int[] promptTokens, SamplingParams sampling, StopConditions stop, RemotePrefillTarget remotePrefill,
      StructuredOutput structuredOutput, String loraName, int resumedOutputTokens, int priority) {
    this(requestId, promptTokens, sampling, stop, remotePrefill, structuredOutput, loraName, resumedOutputTokens, priority, null);
  }

  public GenerationRequest(
      String requestId, int[] promptTokens, SamplingParams sampling, StopConditions stop, RemotePrefillTarget remotePrefill,
      StructuredOutput structuredOutput, String loraName, int resumedOutputTokens) {
    this(requestId, promptTokens, sampling, stop, remotePrefill, structuredOutput, loraName, resumedOutputTokens, 0);
  }

  public GenerationRequest(
      String requestId, int[] promptTokens, SamplingParams sampling, StopConditions stop, RemotePrefillTarget remotePrefill,
      StructuredOutput structuredOutput, String loraName) {
    this(requestId, promptTokens, sampling, stop, remotePrefill, structuredOutput, loraName, 0);
  }

  public GenerationRequest(String requestId, int[] promptTokens, SamplingParams sampling, StopConditions stop) {
    this(requestId, promptTokens, sampling, stop, null, null, null);
  }

  public GenerationRequest(
      String requestId, int[] promptTokens, SamplingParams sampling, StopConditions stop, RemotePrefillTarget remotePrefill) {
    this(requestId, promptTokens, sampling, stop, remotePrefill, null, null);
  }

  public GenerationRequest(
      String requestId, int[] promptTokens, SamplingParams sampling, StopConditions stop, RemotePrefillTarget remotePrefill,
      StructuredOutput structuredOutput) {
    this(requestId, promptTokens, sampling, stop, remotePrefill, structuredOutput, null);
  }

  /** This request with its prompt prefilled by {@code target}. */
  public GenerationRequest withRemotePrefill(RemotePrefillTarget target) {
    return new GenerationRequest(requestId, promptTokens, sampling, stop, target, structuredOutput, loraName, resumedOutputTokens, priority, cacheSalt, embed);
  }

  /** This request with its output constrained (null: not constrained). */
  public GenerationRequest withStructuredOutput(StructuredOutput constraint) {
    return new GenerationRequest(requestId, promptTokens, sampling, stop, remotePrefill, constraint, loraName, resumedOutputTokens, priority, cacheSalt, embed);
  }

  /** This request run with LoRA adapter {@code name} (null: the base model). */
  public GenerationRequest withLora(String name) {
    return new GenerationRequest(requestId, promptTokens, sampling, stop, remotePrefill, structuredOutput, name, resumedOutputTokens, priority, cacheSalt, embed);
  }

  /**
   * This request resumed after {@code tokens} output tokens already generated, which are the last
   * {@code tokens} of its prompt.
   */
  public GenerationRequest resumedAfter(int tokens) {
    return new GenerationRequest(requestId, promptTokens, sampling, stop, remotePrefill, structuredOutput, loraName, tokens, priority, cacheSalt, embed);
  }

  /** This request at vLLM's {@code priority} {@code value} (lower first where the worker schedules by priority). */
  public GenerationRequest withPriority(int value) {
    return new GenerationRequest(requestId, promptTokens, sampling, stop, remotePrefill, structuredOutput, loraName, resumedOutputTokens,
        value, cacheSalt, embed);
  }

  /** This request with vLLM's {@code cache_salt} {@code salt} (null: none). */
  public GenerationRequest withCacheSalt(String salt) {
    return new GenerationRequest(requestId, promptTokens, sampling, stop, remotePrefill, structuredOutput, loraName, resumedOutputTokens,
        priority, salt, embed);
  }

  /** This request asking for the prompt's embedding ({@code embed}). */
  public GenerationRequest withEmbed(boolean value) {
    return new GenerationRequest(requestId, promptTokens, sampling, stop, remotePrefill, structuredOutput, loraName, resumedOutputTokens,
        priority, cacheSalt, value);
  }

  /** The salt of this request's block hashes ({@link BlockHasher#salt(String, String)}: its adapter's and its cache salt). */
  public long hashSalt() {
    return BlockHasher.salt(loraName, cacheSalt);
  }
}
