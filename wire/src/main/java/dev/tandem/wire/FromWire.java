package dev.tandem.wire;

import dev.tandem.common.FinishReason;
import dev.tandem.common.GenerationConfig;
import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.KvEvent;
import dev.tandem.common.KvRegionRef;
import dev.tandem.common.ModelCard;
import dev.tandem.common.PrefillCost;
import dev.tandem.common.RemotePrefillTarget;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.StorageTier;
import dev.tandem.common.TokenChunk;
import dev.tandem.common.TokenLogprob;
import dev.tandem.common.WorkerDescription;
import dev.tandem.common.WorkerId;
import dev.tandem.common.WorkerLoadReport;
import dev.tandem.common.WorkerRole;
import dev.tandem.proto.worker.v1.BlocksRemoved;
import dev.tandem.proto.worker.v1.BlocksStored;
import dev.tandem.proto.worker.v1.GenerateChunk;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.KvRegion;
import dev.tandem.proto.worker.v1.LoadReport;
import dev.tandem.proto.worker.v1.StoredBlock;
import dev.tandem.proto.worker.v1.WorkerRegistration;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalDouble;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * Worker API messages → records of {@code common}. Proto3 sends "unset" as zero; where zero is not a
 * meaningful value (top_p, top_k, repetition_penalty) it means the default. Stateless.
 */
public final class FromWire {
  private FromWire() {}

  /** A generate request; an empty request id is replaced by {@code idIfEmpty}. */
  public static GenerationRequest request(GenerateRequest r, String idIfEmpty) {
    RemotePrefillTarget remote =
        r.hasRemotePrefill()
            ? new RemotePrefillTarget(
                r.getRemotePrefill().getWorkerAddress(), new WorkerId(r.getRemotePrefill().getWorkerId()), r.getRemotePrefill().getTimeoutMs(),
                r.getRemotePrefill().getKvTransferBackend())
            : null;
    dev.tandem.common.StructuredOutput constraint =
        r.hasStructuredOutput()
            ? new dev.tandem.common.StructuredOutput(structuredOutputKind(r.getStructuredOutput().getKind()),
                r.getStructuredOutput().getSpec(), r.getStructuredOutput().getPrefix(), r.getStructuredOutput().getSuffix(),
                reasoning(r.getStructuredOutput()))
            : null;
    return new GenerationRequest(
        r.getRequestId().isEmpty() ? idIfEmpty : r.getRequestId(), tokens(r), sampling(r.getSampling()), stop(r.getStop()), remote,
        constraint, r.getLoraName(), r.getResumedOutputTokens(), r.getPriority(), r.getCacheSalt(), r.getEmbed());
  }

  private static dev.tandem.common.StructuredOutput.Reasoning reasoning(dev.tandem.proto.worker.v1.StructuredOutput so) {
    if (!so.hasReasoning() || so.getReasoning().getClose().isEmpty()) {
      return dev.tandem.common.StructuredOutput.Reasoning.NONE;
    }
    var r = so.getReasoning();
    return new dev.tandem.common.StructuredOutput.Reasoning(r.getOpen(), r.getClose(), r.getOpened());
  }

  private static dev.tandem.common.StructuredOutput.Kind structuredOutputKind(dev.tandem.proto.worker.v1.StructuredOutput.Kind k) {
    return switch (k) {
      case JSON_SCHEMA -> dev.tandem.common.StructuredOutput.Kind.JSON_SCHEMA;
      case REGEX -> dev.tandem.common.StructuredOutput.Kind.REGEX;
      case CHOICE -> dev.tandem.common.StructuredOutput.Kind.CHOICE;
      case GRAMMAR -> dev.tandem.common.StructuredOutput.Kind.GRAMMAR;
      case STRUCTURAL_TAG -> dev.tandem.common.StructuredOutput.Kind.STRUCTURAL_TAG;
      case UNRECOGNIZED -> throw new IllegalArgumentException("structured output: unknown kind " + k.getNumber() + " (a newer sender?)");
    };
  }

  public static SamplingParams sampling(dev.tandem.proto.worker.v1.SamplingParams s) {
    return new SamplingParams(
        s.getTemperature(),
        s.getTopP() == 0f ? SamplingParams.NO_TOP_P : s.getTopP(),
        s.getTopK() <= 0 ? SamplingParams.NO_TOP_K : s.getTopK(),
        s.getMinP(),
        s.hasSeed() ? OptionalLong.of(s.getSeed()) : OptionalLong.empty(),
        s.getPresencePenalty(),
        s.getFrequencyPenalty(),
        s.getRepetitionPenalty() == 0f ? SamplingParams.NO_REPETITION_PENALTY : s.getRepetitionPenalty(),
        s.hasLogprobs() ? (int) Math.min(SamplingParams.MAX_LOGPROBS, s.getLogprobs()) : SamplingParams.NO_LOGPROBS,
        s.getLogitBiasMap(),
        s.hasPromptLogprobs() ? (int) Math.min(SamplingParams.MAX_LOGPROBS, s.getPromptLogprobs()) : SamplingParams.NO_LOGPROBS,
        s.hasThinkingBudget() ? thinkingBudget(s.getThinkingBudget()) : null,
        s.getAllowedTokenIdsList(),
        s.getBadWordsList().stream().map(w -> (java.util.List<Integer>) w.getTokenIdsList()).toList());
  }

  private static dev.tandem.common.ThinkingBudget thinkingBudget(dev.tandem.proto.worker.v1.ThinkingBudget t) {
    return new dev.tandem.common.ThinkingBudget(t.getMaxTokens(), ints(t.getOpenTokenIdsList()), ints(t.getCloseTokenIdsList()),
        t.getOpened());
  }

  /**
   * @throws IllegalArgumentException if max_tokens is not positive, or min_tokens is past it
   */
  public static StopConditions stop(dev.tandem.proto.worker.v1.StopConditions s) {
    return new StopConditions(s.getMaxTokens(), ints(s.getStopTokenIdsList()), s.getIgnoreEos(), s.getMinTokens());
  }

  public static TokenChunk chunk(GenerateChunk c) {
    TokenLogprob[] logprobs = null;
    if (c.getLogprobsCount() > 0) {
      logprobs = new TokenLogprob[c.getLogprobsCount()];
      for (int i = 0; i < logprobs.length; i++) {
        logprobs[i] = logprob(c.getLogprobs(i));
      }
    }
    TokenChunk.Origin origin =
        c.getWorkerId().isEmpty()
            ? null
            : new TokenChunk.Origin(
                c.getWorkerId(),
                c.getWorkerTtftUs(),
                c.getPrefillWorkerId(),
                c.getPrefillFallback(),
                c.getKvTransferUs(),
                c.getKvTransferBytes(),
                c.getKvExposedUs());
    int[] tokens = new int[c.getTokenIdsCount()];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = c.getTokenIds(i);
    }
    return new TokenChunk(
        tokens, logprobs, finishReason(c.getFinishReason()), c.getPromptTokens(), c.getCachedTokens(), origin,
        c.getPromptLogprobsCount() == 0 ? null : c.getPromptLogprobsList().stream().map(FromWire::logprob).toArray(TokenLogprob[]::new),
        embedding(c));
  }

  private static float[] embedding(GenerateChunk c) {
    if (c.getEmbeddingCount() == 0) {
      return null;
    }
    float[] e = new float[c.getEmbeddingCount()];
    for (int i = 0; i < e.length; i++) {
      e[i] = c.getEmbedding(i);
    }
    return e;
  }

  public static TokenLogprob logprob(dev.tandem.proto.worker.v1.TokenLogprob lp) {
    int[] ids = new int[lp.getTopTokenIdsCount()];
    float[] values = new float[lp.getTopLogprobsCount()];
    for (int k = 0; k < ids.length; k++) {
      ids[k] = lp.getTopTokenIds(k);
    }
    for (int k = 0; k < values.length; k++) {
      values[k] = lp.getTopLogprobs(k);
    }
    return new TokenLogprob(lp.getLogprob(), ids, values, lp.getRank());
  }

  /** Null while the stream goes on (UNSPECIFIED). */
  public static FinishReason finishReason(dev.tandem.proto.worker.v1.FinishReason reason) {
    return switch (reason) {
      case FINISH_REASON_STOP -> FinishReason.STOP;
      case FINISH_REASON_LENGTH -> FinishReason.LENGTH;
      case FINISH_REASON_CANCELLED -> FinishReason.CANCELLED;
      case FINISH_REASON_ERROR, UNRECOGNIZED -> FinishReason.ERROR;
      case FINISH_REASON_UNSPECIFIED -> null;
    };
  }

  /** An unset role is an aggregated worker's (the first workers sent none). */
  public static WorkerRole role(dev.tandem.proto.worker.v1.WorkerRole role) {
    return switch (role) {
      case WORKER_ROLE_PREFILL -> WorkerRole.PREFILL;
      case WORKER_ROLE_DECODE -> WorkerRole.DECODE;
      default -> WorkerRole.AGGREGATED;
    };
  }

  public static WorkerDescription description(WorkerRegistration r) {
    return new WorkerDescription(
        new WorkerId(r.getWorkerId()),
        role(r.getRole()),
        r.getBlockSize(),
        r.getModelName(),
        r.getMaxContextLength(),
        r.getVocabSize(),
        r.getKvBytesPerToken(),
        r.getKvCacheDtype(),
        r.getKvKeyRotation(),
        r.getTotalKvBlocks(),
        r.getEngine(),
        r.getSupportedFeaturesList(),
        ints(r.getEosTokenIdsList()),
        r.getKvTransferBackend(),
        r.getKvTransferAddress(),
        r.hasProbeRegion() ? region(r.getProbeRegion()) : null,
        r.getHost(),
        r.getCpus(),
        r.getNumLayers(),
        r.getMaxNumSeqs(),
        r.getMaxBatchedTokens(),
        r.getKvTransferEndpointsList().stream()
            .map(e -> new WorkerDescription.TransferEndpoint(e.getBackend(), e.getAddress(), e.hasProbeRegion() ? region(e.getProbeRegion()) : null))
            .toList(),
        r.getComputeDevice(),
        r.getWeightQuantization(),
        r.getLoraAdaptersList());
  }

  public static KvRegionRef region(KvRegion r) {
    return new KvRegionRef(r.getAgentAddress(), r.getRegionId(), r.getKey(), r.getOffset(), r.getLength());
  }

  public static WorkerLoadReport load(LoadReport r) {
    return new WorkerLoadReport(
        new WorkerId(r.getWorkerId()),
        r.getActiveRequests(),
        r.getWaitingRequests(),
        r.getQueuedPrefillTokens(),
        r.getKvBlocksUsed(),
        r.getKvBlocksTotal(),
        r.getLastEventId(),
        new PrefillCost(r.getPrefillSPerToken(), r.getPrefillSPerContextToken(), r.getPrefillSPerStep(),
            attention(r.getPrefillAttentionWindow(), r.getPrefillSlidingLayerShare())),
        r.getRemotePrefillFallbacks(),
        r.getStepS(),
        r.getDraining(),
        r.getStepRunningS(),
        r.getLoraAdaptersList());
  }

  /** A worker's attention as reported; out of range (a window past an int, a share outside [0, 1]): every layer in full. */
  private static PrefillCost.Attention attention(int window, double share) {
    return window > 0 && share >= 0 && share <= 1 ? new PrefillCost.Attention(window, share) : PrefillCost.Attention.FULL;
  }

  public static ModelCard modelCard(dev.tandem.proto.worker.v1.ModelCard c) {
    return new ModelCard(
        c.getModelName(),
        c.getTokenizerJson().toByteArray(),
        c.getTokenizerConfigJson().toByteArray(),
        c.getMaxContextLength(),
        ints(c.getEosTokenIdsList()),
        generationConfig(c.getGenerationConfig()),
        c.getChatTemplateJinja(),
        c.getLabelsList());
  }

  private static GenerationConfig generationConfig(dev.tandem.proto.worker.v1.GenerationConfig g) {
    return new GenerationConfig(
        g.hasTemperature() ? OptionalDouble.of(g.getTemperature()) : OptionalDouble.empty(),
        g.hasTopP() ? OptionalDouble.of(g.getTopP()) : OptionalDouble.empty(),
        g.hasTopK() ? OptionalInt.of(g.getTopK()) : OptionalInt.empty(),
        g.hasMinP() ? OptionalDouble.of(g.getMinP()) : OptionalDouble.empty(),
        g.hasRepetitionPenalty() ? OptionalDouble.of(g.getRepetitionPenalty()) : OptionalDouble.empty(),
        ints(g.getEosTokenIdsList()));
  }

  public static KvEvent kvEvent(dev.tandem.proto.worker.v1.KvEvent event) {
    long id = event.getEventId();
    return switch (event.getKindCase()) {
      case STORED -> {
        BlocksStored s = event.getStored();
        List<KvEvent.StoredBlock> blocks = new ArrayList<>(s.getBlocksCount());
        for (StoredBlock block : s.getBlocksList()) {
          blocks.add(new KvEvent.StoredBlock(block.getSequenceHash(), block.getLocalHash()));
        }
        OptionalLong parent = s.hasParentHash() ? OptionalLong.of(s.getParentHash()) : OptionalLong.empty();
        yield new KvEvent.Stored(id, parent, blocks, tier(s.getTier()));
      }
      case REMOVED -> {
        BlocksRemoved r = event.getRemoved();
        long[] hashes = new long[r.getSequenceHashesCount()];
        for (int i = 0; i < hashes.length; i++) {
          hashes[i] = r.getSequenceHashes(i);
        }
        yield new KvEvent.Removed(id, hashes, tier(r.getTier()));
      }
      case CLEARED -> new KvEvent.Cleared(id);
      case KIND_NOT_SET -> throw new IllegalArgumentException("KV event " + id + " has no kind");
    };
  }

  static StorageTier tier(dev.tandem.proto.worker.v1.StorageTier tier) {
    return switch (tier) {
      case STORAGE_TIER_HOST -> StorageTier.HOST;
      case STORAGE_TIER_DISK -> StorageTier.DISK;
      default -> StorageTier.DEVICE;
    };
  }

  /**
   * A failed call as a {@link GenerationException}: {@code INVALID_ARGUMENT} is the request's
   * fault; {@code UNAVAILABLE}, {@code CANCELLED} and {@code DEADLINE_EXCEEDED} mean the worker
   * could not serve it; anything else is internal. The message is the status description.
   */
  public static GenerationException failure(Throwable error) {
    Status status = Status.fromThrowable(error);
    GenerationException.Kind kind =
        switch (status.getCode()) {
          case INVALID_ARGUMENT -> GenerationException.Kind.INVALID_REQUEST;
          case UNAVAILABLE, CANCELLED, DEADLINE_EXCEEDED -> GenerationException.Kind.UNAVAILABLE;
          default -> GenerationException.Kind.INTERNAL;
        };
    String description = status.getDescription() == null ? "" : status.getDescription();
    return new GenerationException(kind, status.getCode().name(), description, error);
  }

  /** The prompt's token ids, read without boxing (prompts run to thousands of tokens). */
  private static int[] tokens(GenerateRequest r) {
    int[] out = new int[r.getTokenIdsCount()];
    for (int i = 0; i < out.length; i++) {
      out[i] = r.getTokenIds(i);
    }
    return out;
  }

  static int[] ints(List<Integer> list) {
    int[] out = new int[list.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = list.get(i);
    }
    return out;
  }
}
