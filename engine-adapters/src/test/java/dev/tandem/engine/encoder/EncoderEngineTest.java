package dev.tandem.engine.encoder;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.EngineInfo;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.compute.ScalarBackend;
import dev.tandem.engine.model.ModelFormatException;
import dev.tandem.engine.model.PoolingConfig;
import dev.tandem.engine.modeltools.EncoderGenerator;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The encoder engine: what it serves and refuses, its pooling from the model's files, and how a step takes requests. */
class EncoderEngineTest {
  @TempDir Path dir;

  private static EngineRequest request(String id, int[] ids, boolean embed, int priority, String lora) {
    return new EngineRequest(id, ids, SamplingParams.greedy(), StopConditions.maxTokens(1), null, 1, lora, 0, priority, null, embed);
  }

  private static EngineRequest embed(String id, int... ids) {
    return request(id, ids, true, 0, null);
  }

  private EncoderEngine open(int maxNumSeqs, int maxBatchedTokens) {
    return EncoderEngine.open(dir, "bert", "scalar", 1, maxNumSeqs, maxBatchedTokens);
  }

  @Test
  void eachRequestGetsItsPooledStatesByTheModelsPoolingModule() throws Exception {
    int[] ids = {2, 11, 25, 3};
    for (String pooling : new String[] {null, "pooling_mode_mean_tokens", "pooling_mode_max_tokens"}) {
      EncoderGenerator.write(dir, 7, 32, 2, 4, 64, pooling);
      PoolingConfig.Mode mode = pooling == null ? PoolingConfig.Mode.CLS
          : pooling.contains("mean") ? PoolingConfig.Mode.MEAN : PoolingConfig.Mode.MAX;
      float[] expected;
      try (EncoderModel model = EncoderModel.load(dir, EncoderConfig.read(dir), new ScalarBackend())) {
        expected = model.pooled(ids, mode);
      }
      try (EncoderEngine engine = open(8, 1024)) {
        engine.add(embed("r", ids));
        List<RequestOutput> out = engine.step();
        assertEquals(1, out.size());
        assertArrayEquals(expected, out.get(0).embedding(), 0f, mode + " (pooling " + pooling + ")");
        assertEquals(4, out.get(0).promptTokens());
        assertTrue(out.get(0).finished());
        assertFalse(engine.hasWork());
        EngineInfo info = engine.info();
        assertTrue(info.features().containsAll(List.of(EngineInfo.Feature.EMBEDDINGS, EngineInfo.Feature.POOLING_ONLY)));
        assertEquals(64, info.maxContextLength());
      }
      Files.deleteIfExists(dir.resolve("modules.json"));
    }
  }

  @Test
  void whatAnEncoderCannotServeIsRefusedAndNothingIsQueued() throws Exception {
    EncoderGenerator.write(dir, 7, 32, 2, 4, 64, null);
    try (EncoderEngine engine = open(8, 1024)) {
      assertTrue(assertThrows(IllegalArgumentException.class, () -> engine.add(request("g", new int[] {2, 3}, false, 0, null)))
          .getMessage().contains("encoder"), "generation");
      assertThrows(IllegalArgumentException.class, () -> engine.add(embed("long", new int[65])), "past the 64 positions");
      assertThrows(IllegalArgumentException.class, () -> engine.add(embed("empty")));
      assertThrows(IllegalArgumentException.class, () -> engine.add(embed("oov", 2, 5000, 3)), "outside the vocabulary");
      assertThrows(IllegalArgumentException.class, () -> engine.add(request("l", new int[] {2, 3}, true, 0, "adapter")));
      assertFalse(engine.hasWork());
      engine.add(embed("ok", new int[64]));
      assertEquals(1, engine.step().size(), "64 tokens fill the positions exactly");
    }
  }

  @Test
  void aStepTakesRequestsInOrderWithinItsBudgetsAndAbortedOnesAreGone() throws Exception {
    EncoderGenerator.write(dir, 7, 32, 2, 4, 64, null);
    try (EncoderEngine engine = open(2, 10)) {
      engine.add(embed("a", 2, 10, 11, 12, 13, 3));
      engine.add(embed("b", 2, 10, 11, 12, 13, 3));
      engine.add(embed("c", 2, 3));
      engine.add(embed("d", 2, 3));
      engine.add(embed("e", 2, 3));
      assertEquals(5, engine.load().waitingRequests());
      assertEquals(List.of("a"), ids(engine.step()), "6 + 6 tokens pass the budget of 10: the first alone");
      assertEquals(List.of("b", "c"), ids(engine.step()), "6 + 2 tokens, two requests at most");
      assertTrue(engine.abort("d"));
      assertFalse(engine.abort("d"));
      assertEquals(List.of("e"), ids(engine.step()));
      assertFalse(engine.hasWork());
    }
    try (EncoderEngine engine = open(1, 1024)) {
      engine.scheduleByPriority();
      assertTrue(engine.info().features().contains(EngineInfo.Feature.PRIORITY));
      engine.add(request("later", new int[] {2, 3}, true, 5, null));
      engine.add(request("first", new int[] {2, 3}, true, -1, null));
      engine.add(request("second", new int[] {2, 3}, true, 5, null));
      assertEquals(List.of("first"), ids(engine.step()));
      assertEquals(List.of("later"), ids(engine.step()), "same priority: by arrival");
      assertEquals(List.of("second"), ids(engine.step()));
    }
  }

  @Test
  void aPoolingOrModuleTheEngineCannotApplyIsRefusedNamingTheFile() throws Exception {
    EncoderGenerator.write(dir, 7, 32, 2, 4, 64, "pooling_mode_mean_tokens");
    Files.writeString(dir.resolve("1_Pooling/config.json"), "{\"pooling_mode_mean_tokens\": true, \"pooling_mode_cls_token\": true}");
    String both = assertThrows(ModelFormatException.class, () -> open(8, 1024)).getMessage();
    assertTrue(both.contains("1_Pooling") && both.contains("pooling_mode_cls_token"), both);
    EncoderGenerator.write(dir, 7, 32, 2, 4, 64, "pooling_mode_mean_tokens");
    Files.writeString(dir.resolve("modules.json"), Files.readString(dir.resolve("modules.json")).replace("]",
        ",{\"idx\":3,\"name\":\"3\",\"path\":\"3_Dense\",\"type\":\"sentence_transformers.models.Dense\"}]"));
    String dense = assertThrows(ModelFormatException.class, () -> open(8, 1024)).getMessage();
    assertTrue(dense.contains("modules.json") && dense.contains("Dense"), dense);
    Files.delete(dir.resolve("modules.json"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> EncoderEngine.open(dir, "bert", "cuda", 1, 8, 1024))
        .getMessage().contains("CPU"));
    String config = Files.readString(dir.resolve("config.json"));
    Files.writeString(dir.resolve("config.json"), config.replace("\"BertModel\"", "\"BertForSequenceClassification\""));
    String head = assertThrows(ModelFormatException.class, () -> open(8, 1024)).getMessage();
    assertTrue(head.contains("architectures") && head.contains("BertForSequenceClassification"), "a reranker's head is not ignored: " + head);
    Files.writeString(dir.resolve("config.json"), config.replace("\"gelu\"", "\"swish\""));
    String act = assertThrows(ModelFormatException.class, () -> open(8, 1024)).getMessage();
    assertTrue(act.contains("config.json") && act.contains("hidden_act"), act);
  }

  private static List<String> ids(List<RequestOutput> outputs) {
    return outputs.stream().map(RequestOutput::requestId).toList();
  }
}
