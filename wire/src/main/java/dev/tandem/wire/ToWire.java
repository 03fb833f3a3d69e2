package dev.tandem.wire;

import dev.tandem.common.FinishReason;
import dev.tandem.common.GenerationConfig;
import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.KvEvent;
import dev.tandem.common.KvRegionRef;
import dev.tandem.common.ModelCard;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.StorageTier;
import dev.tandem.common.TokenChunk;
import dev.tandem.common.TokenLogprob;
import dev.tandem.common.WorkerDescription;
import dev.tandem.common.WorkerLoadReport;
import dev.tandem.common.WorkerRole;
import dev.tandem.proto.worker.v1.AllCleared;
import dev.tandem.proto.worker.v1.BlocksRemoved;
import dev.tandem.proto.worker.v1.BlocksStored;
import dev.tandem.proto.worker.v1.GenerateChunk;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.KvRegion;
import dev.tandem.proto.worker.v1.LoadReport;
import dev.tandem.proto.worker.v1.RemotePrefill;
import dev.tandem.proto.worker.v1.StoredBlock;
import dev.tandem.proto.worker.v1.WorkerRegistration;
import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;

/** Records of {@code common} → worker API messages. Stateless. */
public final class ToWire {
  private ToWire() {}

  public static GenerateRequest request(GenerationRequest r) {
    GenerateRequest.Builder b =
        GenerateRequest.newBuilder().setRequestId(r.requestId()).setSampling(sampling(r.sampling())).setStop(stop(r.stop()));
    for (int t : r.promptTokens()) {
      b.addTokenIds(t);
    }
    if (r.remotePrefill() != null) {
      b.setRemotePrefill(
          RemotePrefill.newBuilder()
              .setWorkerAddress(r.remotePrefill().workerAddress())
              .setWorkerId(r.remotePrefill().workerId().value())
              .setTimeoutMs(r.remotePrefill().timeoutMillis())
              .setKvTransferBackend(r.remotePrefill().kvTransferBackend()));
    }
    if (r.structuredOutput() != null) {
      b.setStructuredOutput(
          dev.tandem.proto.worker.v1.StructuredOutput.newBuilder()
              .setKind(dev.tandem.proto.worker.v1.StructuredOutput.Kind.valueOf(r.structuredOutput().kind().name()))
              .setSpec(r.structuredOutput().spec())
              .setPrefix(r.structuredOutput().prefix())
              .setSuffix(r.structuredOutput().suffix()));
      var reasoning = r.structuredOutput().reasoning();
      if (!reasoning.none()) {
        b.getStructuredOutputBuilder().setReasoning(dev.tandem.proto.worker.v1.StructuredOutput.Reasoning.newBuilder()
            .setOpen(reasoning.open()).setClose(reasoning.close()).setOpened(reasoning.opened()));
      }
    }
    if (r.loraName() != null) {
      b.setLoraName(r.loraName());
    }
    b.setResumedOutputTokens(r.resumedOutputTokens());
    b.setPriority(r.priority());
    if (r.cacheSalt() != null) {
      b.setCacheSalt(r.cacheSalt());
    }
    b.setEmbed(r.embed());
    return b.build();
  }

  public static dev.tandem.proto.worker.v1.SamplingParams sampling(SamplingParams s) {
    var b =
        dev.tandem.proto.worker.v1.SamplingParams.newBuilder()
            .setTemperature(s.temperature())
            .setTopP(s.topP())
            .setTopK(s.topK())
            .setMinP(s.minP())
            .setPresencePenalty(s.presencePenalty())
            .setFrequencyPenalty(s.frequencyPenalty())
            .setRepetitionPenalty(s.repetitionPenalty());
    if (s.logprobs() >= 0) {
      b.setLogprobs(s.logprobs());
    }
    if (s.wantsPromptLogprobs()) {
      b.setPromptLogprobs(s.promptLogprobs());
    }
    s.seed().ifPresent(b::setSeed);
    s.logitBias().forEach(b::putLogitBias);
    s.allowedTokenIds().forEach(b::addAllowedTokenIds);
    for (var word : s.badWords()) {
      b.addBadWords(dev.tandem.proto.worker.v1.TokenSequence.newBuilder().addAllTokenIds(word));
    }
    if (s.thinkingBudget() != null) {
      var t = s.thinkingBudget();
      var tb = dev.tandem.proto.worker.v1.ThinkingBudget.newBuilder()
          .setMaxTokens(t.maxTokens()).setOpened(t.opened());
      for (int id : t.openTokens()) {
        tb.addOpenTokenIds(id);
      }
      for (int id : t.closeTokens()) {
        tb.addCloseTokenIds(id);
      }
      b.setThinkingBudget(tb);
    }
    return b.build();
  }

  public static dev.tandem.proto.worker.v1.StopConditions stop(StopConditions s) {
    var b = dev.tandem.proto.worker.v1.StopConditions.newBuilder().setMaxTokens(s.maxTokens()).setIgnoreEos(s.ignoreEos())
        .setMinTokens(s.minTokens());
    for (int t : s.stopTokenIds()) {
      b.addStopTokenIds(t);
    }
    return b.build();
  }

  public static GenerateChunk chunk(TokenChunk c) {
    GenerateChunk.Builder b = GenerateChunk.newBuilder();
    for (int t : c.tokens()) {
      b.addTokenIds(t);
    }
    for (int i = 0; i < c.logprobCount(); i++) {
      b.addLogprobs(logprob(c.logprobs()[i]));
    }
    if (c.promptLogprobs() != null) {
      for (TokenLogprob lp : c.promptLogprobs()) {
        b.addPromptLogprobs(logprob(lp));
      }
    }
    if (c.embedding() != null) {
      for (float v : c.embedding()) {
        b.addEmbedding(v);
      }
    }
    b.setPromptTokens(c.promptTokens()).setCachedTokens(c.cachedTokens());
    if (c.finishReason() != null) {
      b.setFinishReason(finishReason(c.finishReason()));
    }
    TokenChunk.Origin o = c.origin();
    if (o != null) {
      b.setWorkerId(o.workerId()).setWorkerTtftUs(o.workerTtftMicros());
      if (o.prefillWorkerId() != null) {
        b.setPrefillWorkerId(o.prefillWorkerId());
      }
      if (o.prefillFallback() != null) {
        b.setPrefillFallback(o.prefillFallback());
      }
      b.setKvTransferUs(o.kvTransferMicros()).setKvTransferBytes(o.kvTransferBytes()).setKvExposedUs(o.kvExposedMicros());
    }
    return b.build();
  }

  public static dev.tandem.proto.worker.v1.TokenLogprob logprob(TokenLogprob lp) {
    var entry = dev.tandem.proto.worker.v1.TokenLogprob.newBuilder().setLogprob(lp.logprob()).setRank(lp.rank());
    for (int k = 0; k < lp.topTokenIds().length; k++) {
      entry.addTopTokenIds(lp.topTokenIds()[k]).addTopLogprobs(lp.topLogprobs()[k]);
    }
    return entry.build();
  }

  public static dev.tandem.proto.worker.v1.FinishReason finishReason(FinishReason reason) {
    return switch (reason) {
      case STOP -> dev.tandem.proto.worker.v1.FinishReason.FINISH_REASON_STOP;
      case LENGTH -> dev.tandem.proto.worker.v1.FinishReason.FINISH_REASON_LENGTH;
      case CANCELLED -> dev.tandem.proto.worker.v1.FinishReason.FINISH_REASON_CANCELLED;
      case ERROR -> dev.tandem.proto.worker.v1.FinishReason.FINISH_REASON_ERROR;
    };
  }

  public static dev.tandem.proto.worker.v1.WorkerRole role(WorkerRole role) {
    return switch (role) {
      case AGGREGATED -> dev.tandem.proto.worker.v1.WorkerRole.WORKER_ROLE_AGGREGATED;
      case PREFILL -> dev.tandem.proto.worker.v1.WorkerRole.WORKER_ROLE_PREFILL;
      case DECODE -> dev.tandem.proto.worker.v1.WorkerRole.WORKER_ROLE_DECODE;
    };
  }

  public static WorkerRegistration registration(WorkerDescription d) {
    var b =
        WorkerRegistration.newBuilder()
            .setWorkerId(d.workerId().value())
            .setRole(role(d.role()))
            .setBlockSize(d.blockSize())
            .setModelName(d.modelName())
            .setMaxContextLength(d.maxContextLength())
            .setVocabSize(d.vocabSize())
            .setKvBytesPerToken(d.kvBytesPerToken())
            .setKvCacheDtype(d.kvCacheDtype())
            .setKvKeyRotation(d.kvKeyRotation())
            .setTotalKvBlocks(d.totalKvBlocks())
            .setEngine(d.engine())
            .addAllSupportedFeatures(d.supportedFeatures())
            .setKvTransferBackend(d.kvTransferBackend())
            .setKvTransferAddress(d.kvTransferAddress())
            .setHost(d.host())
            .setCpus(d.cpus())
            .setComputeDevice(d.computeDevice())
            .setWeightQuantization(d.weightQuantization())
            .setNumLayers(d.numLayers())
            .setMaxNumSeqs(d.maxNumSeqs())
            .setMaxBatchedTokens(d.maxBatchedTokens())
            .addAllLoraAdapters(d.loraAdapters());
    for (int eos : d.eosTokenIds()) {
      b.addEosTokenIds(eos);
    }
    if (d.probeRegion() != null) {
      b.setProbeRegion(region(d.probeRegion()));
    }
    for (WorkerDescription.TransferEndpoint e : d.kvTransferEndpoints()) {
      var endpoint = dev.tandem.proto.worker.v1.KvTransferEndpoint.newBuilder().setBackend(e.backend()).setAddress(e.address());
      if (e.probeRegion() != null) {
        endpoint.setProbeRegion(region(e.probeRegion()));
      }
      b.addKvTransferEndpoints(endpoint);
    }
    return b.build();
  }

  public static KvRegion region(KvRegionRef r) {
    return KvRegion.newBuilder()
        .setAgentAddress(r.agentAddress())
        .setRegionId(r.regionId())
        .setKey(r.key())
        .setOffset(r.offset())
        .setLength(r.length())
        .build();
  }

  public static LoadReport load(WorkerLoadReport r) {
    return LoadReport.newBuilder()
        .setWorkerId(r.workerId().value())
        .setActiveRequests(r.activeRequests())
        .setWaitingRequests(r.waitingRequests())
        .setQueuedPrefillTokens(r.queuedPrefillTokens())
        .setKvBlocksUsed(r.kvBlocksUsed())
        .setKvBlocksTotal(r.kvBlocksTotal())
        .setLastEventId(r.lastEventId())
        .setPrefillTokensPerS(r.prefillTokensPerSecond())
        .setPrefillSPerToken(r.prefillCost().perToken())
        .setPrefillSPerContextToken(r.prefillCost().perContextToken())
        .setPrefillSPerStep(r.prefillCost().perStep())
        .setPrefillAttentionWindow(r.prefillCost().attention().window())
        .setPrefillSlidingLayerShare(r.prefillCost().attention().slidingShare())
        .setRemotePrefillFallbacks(r.remotePrefillFallbacks())
        .setStepS(r.stepSeconds())
        .setDraining(r.draining())
        .setStepRunningS(r.stepRunningSeconds())
        .addAllLoraAdapters(r.loraAdapters())
        .build();
  }

  public static dev.tandem.proto.worker.v1.ModelCard modelCard(ModelCard c) {
    var b =
        dev.tandem.proto.worker.v1.ModelCard.newBuilder()
            .setModelName(c.modelName())
            .setTokenizerJson(ByteString.copyFrom(c.tokenizerJson()))
            .setTokenizerConfigJson(ByteString.copyFrom(c.tokenizerConfigJson()))
            .setMaxContextLength(c.maxContextLength())
            .setGenerationConfig(generationConfig(c.generation()))
            .setChatTemplateJinja(c.chatTemplateJinja())
            .addAllLabels(c.labels());
    for (int eos : c.eosTokenIds()) {
      b.addEosTokenIds(eos);
    }
    return b.build();
  }

  private static dev.tandem.proto.worker.v1.GenerationConfig generationConfig(GenerationConfig g) {
    var b = dev.tandem.proto.worker.v1.GenerationConfig.newBuilder();
    g.temperature().ifPresent(b::setTemperature);
    g.topP().ifPresent(b::setTopP);
    g.topK().ifPresent(b::setTopK);
    g.minP().ifPresent(b::setMinP);
    g.repetitionPenalty().ifPresent(b::setRepetitionPenalty);
    for (int eos : g.eosTokenIds()) {
      b.addEosTokenIds(eos);
    }
    return b.build();
  }

  public static dev.tandem.proto.worker.v1.KvEvent kvEvent(KvEvent event) {
    var b = dev.tandem.proto.worker.v1.KvEvent.newBuilder().setEventId(event.eventId());
    switch (event) {
      case KvEvent.Stored s -> {
        var stored = BlocksStored.newBuilder().setTier(tier(s.tier()));
        s.parentHash().ifPresent(stored::setParentHash);
        for (KvEvent.StoredBlock block : s.blocks()) {
          stored.addBlocks(StoredBlock.newBuilder().setSequenceHash(block.sequenceHash()).setLocalHash(block.localHash()));
        }
        b.setStored(stored);
      }
      case KvEvent.Removed r -> {
        var removed = BlocksRemoved.newBuilder().setTier(tier(r.tier()));
        for (long h : r.sequenceHashes()) {
          removed.addSequenceHashes(h);
        }
        b.setRemoved(removed);
      }
      case KvEvent.Cleared c -> b.setCleared(AllCleared.getDefaultInstance());
    }
    return b.build();
  }

  static dev.tandem.proto.worker.v1.StorageTier tier(StorageTier tier) {
    return switch (tier) {
      case DEVICE -> dev.tandem.proto.worker.v1.StorageTier.STORAGE_TIER_DEVICE;
      case HOST -> dev.tandem.proto.worker.v1.StorageTier.STORAGE_TIER_HOST;
      case DISK -> dev.tandem.proto.worker.v1.StorageTier.STORAGE_TIER_DISK;
    };
  }

  /**
   * A failure as the gRPC status a caller sees: an invalid request is {@code INVALID_ARGUMENT},
   * an unavailable worker {@code UNAVAILABLE}, anything else {@code INTERNAL}.
   */
  public static StatusRuntimeException status(GenerationException.Kind kind, String message) {
    Status status =
        switch (kind) {
          case INVALID_REQUEST -> Status.INVALID_ARGUMENT;
          case UNAVAILABLE -> Status.UNAVAILABLE;
          case INTERNAL -> Status.INTERNAL;
        };
    return status.withDescription(message).asRuntimeException();
  }
}
