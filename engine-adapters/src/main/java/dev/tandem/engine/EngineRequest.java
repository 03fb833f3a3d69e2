package dev.tandem.engine;

import dev.tandem.common.BlockHasher;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.StructuredOutput;
import java.util.Objects;

/**
 * One generation request as an engine sees it: token ids in, sampling and stop rules, and an
 * optional constraint on the output ({@code structuredOutput}, null when free) with the tokens
 * the whole output may take ({@code outputBudget}: {@code stop.maxTokens()}, except where an engine
 * runs the first token of a longer output, as a prefill worker does), the LoRA adapter it runs
 * with ({@code loraName}; null: the base model), and how many of the prompt's last tokens are
 * output already generated ({@code resumedOutputTokens}, a stream moved from another worker:
 * penalties count them as output, the grammar starts and a thinking budget counts on after them),
 * its {@code priority} (vLLM's: lower first where the scheduler orders by priority), and vLLM's
 * {@code cacheSalt} (null: none; only requests with the same one share cached blocks), and whether
 * its first output carries the prompt's embedding ({@code embed}).
 */
public record EngineRequest(
    String requestId,
    int[] promptTokens,
    SamplingParams sampling,
    StopConditions stop,
    StructuredOutput structuredOutput,
    int outputBudget,
    String loraName,
    int resumedOutputTokens,
    int priority,
    String cacheSalt,
    boolean embed) {
  public EngineRequest {
    loraName = loraName == null || loraName.isEmpty() ? null : loraName;
    cacheSalt = cacheSalt == null || cacheSalt.isEmpty() ? null : cacheSalt;
    Objects.requireNonNull(requestId, "requestId");
    promptTokens = promptTokens.clone();
    Objects.requireNonNull(sampling, "sampling");
    Objects.requireNonNull(stop, "stop");
    if (promptTokens.length == 0) {
      throw new IllegalArgumentException("request " + requestId + " has an empty prompt");
    }
    dev.tandem.common.GenerationRequest.checkResumed(requestId, resumedOutputTokens, promptTokens.length);
  }

  public EngineRequest(
      String requestId, int[] promptTokens, SamplingParams sampling, StopConditions stop, StructuredOutput structuredOutput,
      int outputBudget, String loraName, int resumedOutputTokens, int priority, String cacheSalt) {
    this(requestId, promptTokens, sampling, stop, structuredOutput, outputBudget, loraName, resumedOutputTokens, priority, cacheSalt, false);
  }

  public EngineRequest(
      String requestId, int[] promptTokens, SamplingParams sampling, StopConditions stop, StructuredOutput structuredOutput,
      int outputBudget, String loraName, int resumedOutputTokens, int priority) {
    this(requestId, promptTokens, sampling, stop, structuredOutput, outputBudget, loraName, resumedOutputTokens, priority, null);
  }

  public EngineRequest(
      String requestId, int[] promptTokens, SamplingParams sampling, StopConditions stop, StructuredOutput structuredOutput,
      int outputBudget, String loraName, int resumedOutputTokens) {
    this(requestId, promptTokens, sampling, stop, structuredOutput, outputBudget, loraName, resumedOutputTokens, 0);
  }

  public EngineRequest(String requestId, int[] promptTokens, SamplingParams sampling, StopConditions stop) {
    this(requestId, promptTokens, sampling, stop, null, stop.maxTokens(), null, 0);
  }

  public EngineRequest(
      String requestId, int[] promptTokens, SamplingParams sampling, StopConditions stop, StructuredOutput structuredOutput,
      int outputBudget) {
    this(requestId, promptTokens, sampling, stop, structuredOutput, outputBudget, null, 0);
  }

  public EngineRequest(
      String requestId, int[] promptTokens, SamplingParams sampling, StopConditions stop, StructuredOutput structuredOutput,
      int outputBudget, String loraName) {
    this(requestId, promptTokens, sampling, stop, structuredOutput, outputBudget, loraName, 0);
  }

  /** This request under other stop conditions, everything else kept (a prefill worker's one-token run of it). */
  public EngineRequest withStop(StopConditions other) {
    return new EngineRequest(requestId, promptTokens, sampling, other, structuredOutput, outputBudget, loraName, resumedOutputTokens,
        priority, cacheSalt, embed);
  }

  /** This request asking for its prompt's embedding on its first output. */
  public EngineRequest withEmbedding() {
    return new EngineRequest(requestId, promptTokens, sampling, stop, structuredOutput, outputBudget, loraName, resumedOutputTokens,
        priority, cacheSalt, true);
  }

  /** The salt of this request's block hashes ({@link BlockHasher#salt(String, String)}: its adapter's and its cache salt). */
  public long hashSalt() {
    return BlockHasher.salt(loraName, cacheSalt);
  }

  /** Its LoRA adapter's salt alone ({@link BlockHasher#salt(String)}), by which an unloaded adapter's blocks are forgotten. */
  public long adapterSalt() {
    return BlockHasher.salt(loraName);
  }

  /**
   * The engine's view of a generation (its remote prefill, if any, is the worker's business).
   *
   * @throws IllegalArgumentException if the prompt is empty
   */
  public static EngineRequest of(GenerationRequest request) {
    return new EngineRequest(
        request.requestId(), request.promptTokens(), request.sampling(), request.stop(), request.structuredOutput(),
        request.stop().maxTokens(), request.loraName(), request.resumedOutputTokens(), request.priority(),
        request.cacheSalt(), request.embed());
  }
}
