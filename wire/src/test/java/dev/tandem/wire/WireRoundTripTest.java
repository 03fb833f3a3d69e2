package dev.tandem.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.FinishReason;
import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.KvEvent;
import dev.tandem.common.KvRegionRef;
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
import dev.tandem.proto.worker.v1.GenerateRequest;
import io.grpc.Status;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** Every record survives the trip to protobuf and back; proto3's zeros mean the defaults. */
class WireRoundTripTest {
  @Test
  void aGenerationRequestRoundTrips() {
    var sampling = new SamplingParams(0.7f, 0.9f, 40, 0.05f, OptionalLong.of(42), 0.1f, 0.2f, 1.1f, 3, java.util.Map.of(7, -100f, 9, 2.5f), 2);
    var request =
        new GenerationRequest("r1", new int[] {1, 2, 3}, sampling, new StopConditions(9, new int[] {7}, true, 4),
            new RemotePrefillTarget("127.0.0.1:9", new WorkerId("p0"), 250, "tcp"),
            new dev.tandem.common.StructuredOutput(dev.tandem.common.StructuredOutput.Kind.JSON_SCHEMA, "{\"type\":\"integer\"}",
                "<tool_call>\n", "\n</tool_call>"), null, 2);
    GenerationRequest back = FromWire.request(ToWire.request(request), "unused");
    assertEquals("r1", back.requestId());
    assertArrayEquals(new int[] {1, 2, 3}, back.promptTokens());
    assertEquals(sampling, back.sampling());
    var budgeted = sampling.withThinkingBudget(new dev.tandem.common.ThinkingBudget(5, new int[] {1}, new int[] {2, 3}, true));
    assertEquals(budgeted, FromWire.request(ToWire.request(new GenerationRequest("r2", new int[] {1}, budgeted,
        new StopConditions(9, new int[0], false))), "x").sampling(), "a thinking budget survives");
    assertEquals(9, back.stop().maxTokens());
    assertArrayEquals(new int[] {7}, back.stop().stopTokenIds());
    assertEquals(true, back.stop().ignoreEos());
    assertEquals(4, back.stop().minTokens(), "min_tokens");
    var overMax = ToWire.request(request).toBuilder().setStop(ToWire.stop(request.stop()).toBuilder().setMinTokens(10)).build();
    assertThrows(IllegalArgumentException.class, () -> FromWire.request(overMax, "x"), "min_tokens past max_tokens");
    assertEquals(request.remotePrefill(), back.remotePrefill());
    assertEquals(request.structuredOutput(), back.structuredOutput());
    assertEquals(2, back.resumedOutputTokens(), "a migrated stream's output so far");
    assertEquals(-7, FromWire.request(ToWire.request(request.withPriority(-7)), "x").priority(), "vLLM's priority");
    assertEquals(-7, request.withPriority(-7).withLora("a").resumedAfter(1).priority(), "kept by every copy");
    assertEquals(0, FromWire.request(ToWire.request(request.resumedAfter(0)), "x").resumedOutputTokens());
    var beyond = ToWire.request(request).toBuilder().setResumedOutputTokens(4).build();
    var e = assertThrows(IllegalArgumentException.class, () -> FromWire.request(beyond, "x"), "more output than prompt");
    assertTrue(e.getMessage().contains("resumes after 4 output tokens but its prompt has 3"), e.getMessage());
    assertEquals(null, FromWire.request(ToWire.request(request.withStructuredOutput(null)), "x").structuredOutput());
    for (var c : List.of(dev.tandem.common.StructuredOutput.regex("[a-z]+"), dev.tandem.common.StructuredOutput.choice("[\"a\",\"b\"]"),
        dev.tandem.common.StructuredOutput.grammar("root ::= \"x\""),
        dev.tandem.common.StructuredOutput.regex("a").withReasoning(new dev.tandem.common.StructuredOutput.Reasoning("<think>", "</think>", false)),
        dev.tandem.common.StructuredOutput.JSON_OBJECT.withReasoning(new dev.tandem.common.StructuredOutput.Reasoning("", "</think>", true)))) {
      assertEquals(c, FromWire.request(ToWire.request(request.withStructuredOutput(c)), "x").structuredOutput(), "each kind survives, with its reasoning");
    }
    assertEquals(null, back.loraName(), "the base model");
    assertEquals("sql", FromWire.request(ToWire.request(request.withLora("sql")), "x").loraName());
    assertEquals(null, back.cacheSalt(), "no cache salt");
    var allowed = request.sampling().withAllowedTokenIds(List.of(3, 1, 4));
    assertEquals(allowed, FromWire.sampling(ToWire.sampling(allowed)), "vLLM's allowed_token_ids, in order");
    var banned = request.sampling().withBadWords(List.of(List.of(7), List.of(8, 9)));
    assertEquals(banned, FromWire.sampling(ToWire.sampling(banned)), "vLLM's bad_words, each as its tokens");
    assertEquals(List.of(), FromWire.sampling(ToWire.sampling(request.sampling())).allowedTokenIds(), "none: any token");
    var salted = FromWire.request(ToWire.request(request.withCacheSalt("tenant-a").withLora("sql")), "x");
    assertEquals("tenant-a", salted.cacheSalt(), "vLLM's cache_salt");
    assertEquals(request.withCacheSalt("tenant-a").withLora("sql").hashSalt(), salted.hashSalt(), "the same block hashes on both sides");
    assertEquals("tenant-a", request.withCacheSalt("tenant-a").withPriority(3).resumedAfter(1).withRemotePrefill(null).cacheSalt(),
        "kept by every copy");
    assertTrue(FromWire.request(ToWire.request(request.withEmbed(true).withLora("sql")), "x").embed(), "asks for the prompt's embedding");
    assertFalse(FromWire.request(ToWire.request(request), "x").embed());
    assertTrue(request.withEmbed(true).withCacheSalt("s").withPriority(2).embed(), "kept by every copy");
  }

  @Test
  void aModelCardRoundTripsWithWhatItsGenerationConfigSetsAndNothingElse() {
    var set = new dev.tandem.common.GenerationConfig(java.util.OptionalDouble.of(0.6), java.util.OptionalDouble.of(0.95),
        java.util.OptionalInt.of(20), java.util.OptionalDouble.empty(), java.util.OptionalDouble.of(1.05), new int[] {151645, 151643});
    var card = new dev.tandem.common.ModelCard("m", new byte[] {1}, new byte[] {2}, 4096, new int[] {151645}, set, "{{ x }}",
        List.of("negative", "positive"));
    assertEquals("{{ x }}", FromWire.modelCard(ToWire.modelCard(card)).chatTemplateJinja());
    assertEquals(List.of("negative", "positive"), FromWire.modelCard(ToWire.modelCard(card)).labels(), "a classifier's class names, in order");
    var back = FromWire.modelCard(ToWire.modelCard(card)).generation();
    assertEquals(set.temperature(), back.temperature());
    assertEquals(set.topP(), back.topP());
    assertEquals(set.topK(), back.topK());
    assertEquals(java.util.OptionalDouble.empty(), back.minP(), "a field the file does not set stays unset");
    assertEquals(set.repetitionPenalty(), back.repetitionPenalty());
    assertArrayEquals(set.eosTokenIds(), back.eosTokenIds());
    var none = FromWire.modelCard(ToWire.modelCard(new dev.tandem.common.ModelCard("m", new byte[0], new byte[0], 1, new int[0],
        dev.tandem.common.GenerationConfig.NONE, "", List.of()))).generation();
    assertEquals(SamplingParams.DEFAULTS, none.samplingDefaults(List.of("temperature", "top_p", "top_k", "min_p", "repetition_penalty")));
  }

  @Test
  void unsetWireFieldsMeanTheDefaultsOfSamplingParams() {
    var bare = GenerateRequest.newBuilder().addTokenIds(5).setStop(dev.tandem.proto.worker.v1.StopConditions.newBuilder().setMaxTokens(1)).build();
    GenerationRequest r = FromWire.request(bare, "generated-id");
    assertEquals("generated-id", r.requestId(), "an empty id is replaced");
    assertEquals(SamplingParams.DEFAULTS.withTemperature(0f), r.sampling(), "temperature 0 on the wire; every other field its default");
    assertNull(r.remotePrefill());
  }

  @Test
  void aBadStopIsRefusedWithTheReason() {
    var bad = GenerateRequest.newBuilder().addTokenIds(5).build();
    var e = assertThrows(IllegalArgumentException.class, () -> FromWire.request(bad, "x"));
    assertEquals("maxTokens must be positive, was 0", e.getMessage());
  }

  @Test
  void tokenChunksRoundTripWithTheirOriginAndFinish() {
    var origin = new TokenChunk.Origin("w0", 1234, "p0", "", 55, 4096, 7);
    var chunk = new TokenChunk(new int[] {4, 5}, new TokenLogprob[] {
        new TokenLogprob(-0.5f, new int[] {4, 9}, new float[] {-0.5f, -1.5f}),
        new TokenLogprob(-0.1f, new int[0], new float[0])}, FinishReason.LENGTH, 30, 16, origin,
        new TokenLogprob[] {new TokenLogprob(-2f, new int[] {8}, new float[] {-1f}, 3)});
    TokenChunk back = FromWire.chunk(ToWire.chunk(chunk));
    assertEquals(1, back.promptLogprobs().length);
    assertArrayEquals(new int[] {8}, back.promptLogprobs()[0].topTokenIds());
    assertEquals(3, back.promptLogprobs()[0].rank(), "the prompt token's rank (vLLM's prompt_logprobs)");
    assertEquals(0, back.logprobs()[0].rank(), "not known");
    assertArrayEquals(chunk.tokens(), back.tokens());
    assertEquals(2, back.logprobCount());
    assertArrayEquals(new int[] {4, 9}, back.logprobs()[0].topTokenIds());
    assertEquals(FinishReason.LENGTH, back.finishReason());
    assertEquals(30, back.promptTokens());
    assertEquals(16, back.cachedTokens());
    assertEquals(origin, back.origin());
    var middle = FromWire.chunk(ToWire.chunk(new TokenChunk(new int[] {1}, null, null, 0, 0, null)));
    assertNull(middle.finishReason(), "a chunk mid-stream has no finish reason");
    assertNull(middle.origin(), "only the first chunk names its worker");
    assertNull(middle.embedding(), "none unless asked for");
    float[] hidden = {0.25f, -1.5f, 3e-8f};
    var embedded = FromWire.chunk(ToWire.chunk(new TokenChunk(new int[] {1}, null, FinishReason.LENGTH, 3, 0, origin, null, hidden)));
    assertArrayEquals(hidden, embedded.embedding(), "the prompt's embedding, exactly");
  }

  @Test
  void descriptionsLoadsAndEventsRoundTrip() {
    var d = new WorkerDescription(new WorkerId("w"), WorkerRole.DECODE, 16, "m", 4096, 1000, 2048, "bf16", "longrope-long", 64, "builtin",
        List.of("logprobs", "seed"), new int[] {2}, "ucx", "127.0.0.1:7", new KvRegionRef("127.0.0.1:7", 3, 0x5eed_cafe_f00dL, 0, 64), "h", "0-3", 2, 256, 8192,
        List.of(new WorkerDescription.TransferEndpoint("ucx", "127.0.0.1:7", new KvRegionRef("127.0.0.1:7", 3, 0x5eed_cafe_f00dL, 0, 64)),
            new WorkerDescription.TransferEndpoint("tcp", "127.0.0.1:8", new KvRegionRef("127.0.0.1:8", 1, -7L, 0, 64))),
        "GPU-0a1b2c3d-0000-1111-2222-333344445555", "q8_0", List.of("sql", "chat"));
    WorkerDescription back = FromWire.description(ToWire.registration(d));
    assertEquals(d.workerId(), back.workerId());
    assertEquals(WorkerRole.DECODE, back.role());
    assertEquals(d.supportedFeatures(), back.supportedFeatures());
    assertEquals(d.probeRegion(), back.probeRegion());
    assertEquals(d.cpus(), back.cpus());
    assertEquals(d.computeDevice(), back.computeDevice());
    assertEquals("bf16", back.kvCacheDtype());
    assertEquals("longrope-long", back.kvKeyRotation());
    assertEquals("q8_0", back.weightQuantization());
    assertEquals(List.of("sql", "chat"), back.loraAdapters());
    assertTrue(back.serves("chat") && back.serves(null) && !back.serves("other"));
    assertEquals(256, back.maxNumSeqs());
    assertEquals(8192, back.maxBatchedTokens());
    assertEquals(d.kvTransferEndpoints(), back.kvTransferEndpoints(), "every agent the worker runs");
    assertEquals("127.0.0.1:8", back.endpoint("tcp").address());
    // A worker that names only its primary agent has that one endpoint.
    var primaryOnly = FromWire.description(ToWire.registration(d).toBuilder().clearKvTransferEndpoints().build());
    assertEquals(List.of(new WorkerDescription.TransferEndpoint("ucx", "127.0.0.1:7", d.probeRegion())), primaryOnly.kvTransferEndpoints());
    var load = new WorkerLoadReport(new WorkerId("w"), 3, 1, 500, 10, 64, 77, new PrefillCost(1e-4, 2e-8), 2, 0.012, true, 3.5, List.of("sql", "chat"));
    assertEquals(load, FromWire.load(ToWire.load(load)));
    var gemma = new WorkerLoadReport(new WorkerId("g"), 0, 0, 0, 0, 64, 0,
        new PrefillCost(1e-4, 2e-8, 1e-3, new PrefillCost.Attention(512, 22.0 / 26)), 0, 0, false, 0, List.of());
    assertEquals(gemma, FromWire.load(ToWire.load(gemma)), "the model's attention travels with its prefill cost");
    var nonsense = ToWire.load(gemma).toBuilder().setPrefillSlidingLayerShare(7).build();
    assertEquals(PrefillCost.Attention.FULL, FromWire.load(nonsense).prefillCost().attention(), "out of range: counted in full");
    var stored = new KvEvent.Stored(5, OptionalLong.of(9), List.of(new KvEvent.StoredBlock(11, 12)), StorageTier.HOST);
    assertEquals(stored, FromWire.kvEvent(ToWire.kvEvent(stored)));
  }

  @Test
  void statusesMapToWhatACallerActsOn() {
    assertEquals(GenerationException.Kind.INVALID_REQUEST,
        FromWire.failure(Status.INVALID_ARGUMENT.withDescription("bad").asRuntimeException()).kind());
    for (Status s : List.of(Status.UNAVAILABLE, Status.CANCELLED, Status.DEADLINE_EXCEEDED)) {
      assertEquals(GenerationException.Kind.UNAVAILABLE, FromWire.failure(s.asRuntimeException()).kind(), s.toString());
    }
    var internal = FromWire.failure(new IllegalStateException("boom"));
    assertEquals(GenerationException.Kind.INTERNAL, internal.kind());
    assertEquals("UNKNOWN", internal.code());
    var roundTrip = FromWire.failure(ToWire.status(GenerationException.Kind.UNAVAILABLE, "gone"));
    assertEquals(GenerationException.Kind.UNAVAILABLE, roundTrip.kind());
    assertEquals("gone", roundTrip.getMessage());
  }
}
