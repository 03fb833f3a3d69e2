package dev.tandem.engine.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.engine.modeltools.LoraGenerator;
import dev.tandem.engine.modeltools.ModelGenerator;
import dev.tandem.engine.modeltools.SafetensorsWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reading PEFT adapters: what it keeps (rank, scaling, which projections; fused ones split) and
 * what it refuses, each refusal naming the file and the field or tensor.
 */
class LoraAdapterTest {
  @TempDir static Path dir;
  static Path model;
  static ModelConfig config;
  static int counter;

  @BeforeAll
  static void create() throws Exception {
    model = dir.resolve("model");
    ModelGenerator.write(ModelGenerator.shape("tiny"), DType.BF16, 1, model, 0);
    config = ModelConfig.read(model);
  }

  private static Path adapter(List<String> targets, int rank) throws Exception {
    Path out = dir.resolve("a" + counter++);
    LoraGenerator.write(model, out, rank, 2 * rank, false, targets, 3, DType.F32);
    return out;
  }

  private static Path withConfig(Consumer<ObjectNode> change) throws Exception {
    Path out = adapter(LoraGenerator.ALL_TARGETS, 4);
    ObjectMapper json = new ObjectMapper();
    ObjectNode c = (ObjectNode) json.readTree(out.resolve("adapter_config.json").toFile());
    change.accept(c);
    json.writeValue(out.resolve("adapter_config.json").toFile(), c);
    return out;
  }

  private static String refusal(Path adapterDir) {
    return assertThrows(ModelFormatException.class, () -> LoraAdapter.load(new LoraAdapter.Source("x", adapterDir), config, 16)).getMessage();
  }

  @Test
  void keepsTheProjectionsItChangesWithPeftsScaling() throws Exception {
    LoraAdapter a = LoraAdapter.load(new LoraAdapter.Source("x", adapter(List.of("q_proj", "down_proj"), 8)), config, 16);
    assertEquals(8, a.rank());
    assertEquals(2.0, a.scaling()); // lora_alpha 16 / r 8
    assertEquals(2 * config.numLayers(), a.deltaCount());
    LoraAdapter.Delta q = a.delta(1, LoraAdapter.Target.Q);
    assertEquals(8, q.rank());
    assertEquals(config.hiddenSize(), q.in());
    assertEquals(config.qDim(), q.out());
    LoraAdapter.Delta down = a.delta(1, LoraAdapter.Target.DOWN);
    assertSame(q.values(), down.values(), "one array for the whole adapter");
    assertEquals((long) config.numLayers() * 8 * (config.hiddenSize() + config.qDim() + config.intermediateSize() + config.hiddenSize()),
        q.values().length, "A and B of both projections in every layer, nothing more");
    assertNull(a.delta(0, LoraAdapter.Target.K), "k_proj was not adapted");

    Path rs = withConfig(c -> c.put("use_rslora", true));
    assertEquals(8 / Math.sqrt(4), LoraAdapter.load(new LoraAdapter.Source("x", rs), config, 16).scaling(), 1e-12);
  }

  @Test
  void refusesWhatItCannotApplyNamingTheFileAndField() throws Exception {
    String rank = assertThrows(ModelFormatException.class,
        () -> LoraAdapter.load(new LoraAdapter.Source("x", adapter(List.of("q_proj"), 32)), config, 16)).getMessage();
    assertTrue(rank.contains("adapter_config.json: field 'r' is 32, above --max-lora-rank 16"), rank);
    assertTrue(refusal(withConfig(c -> c.put("use_dora", true))).contains("field 'use_dora'"));
    assertTrue(refusal(withConfig(c -> c.put("bias", "all"))).contains("field 'bias'"));
    assertTrue(refusal(withConfig(c -> c.putArray("modules_to_save").add("lm_head"))).contains("field 'modules_to_save'"));
    assertTrue(refusal(withConfig(c -> c.putObject("rank_pattern").put("q_proj", 8))).contains("field 'rank_pattern'"));
    assertTrue(refusal(withConfig(c -> c.put("peft_type", "IA3"))).contains("field 'peft_type' is IA3"));
    assertTrue(refusal(withConfig(c -> c.put("r", "eight"))).contains("field 'r' must be an integer"));
    assertTrue(refusal(withConfig(c -> c.put("r", 0))).contains("field 'r' must be a positive integer"));
    assertTrue(refusal(dir.resolve("nowhere")).contains("adapter_config.json: file does not exist"));

    Path noWeights = withConfig(c -> {});
    Files.delete(noWeights.resolve("adapter_model.safetensors"));
    assertTrue(refusal(noWeights).contains("adapter_model.safetensors: file does not exist"));
  }

  @Test
  void refusesTensorsOfAnotherModelOrThatItDoesNotApply() throws Exception {
    int h = config.hiddenSize();
    String p = "base_model.model.model.layers.0.self_attn.q_proj.";
    String shape = refusal(tensors(w -> w.add(p + "lora_A.weight", DType.F32, new long[] {4, h + 1}, () -> 0f)
        .add(p + "lora_B.weight", DType.F32, new long[] {config.qDim(), 4}, () -> 0f)));
    assertTrue(shape.contains(p + "lora_A.weight has shape [4, " + (h + 1) + "], expected [4, " + h + "]"), shape);
    String layer = refusal(tensors(w -> w.add("base_model.model.model.layers.99.self_attn.q_proj.lora_A.weight", DType.F32, new long[] {4, h}, () -> 0f)));
    assertTrue(layer.contains("names layer 99 of a model with " + config.numLayers() + " layers"), layer);
    String head = refusal(tensors(w -> w.add("base_model.model.lm_head.lora_A.weight", DType.F32, new long[] {4, h}, () -> 0f)));
    assertTrue(head.contains("tensor 'base_model.model.lm_head.lora_A.weight' is not a LoRA A or B"), head);
    String alone = refusal(tensors(w -> w.add(p + "lora_A.weight", DType.F32, new long[] {4, h}, () -> 0f)));
    assertTrue(alone.contains("has no lora_B beside it"), alone);
    String twice = refusal(tensors(w -> w
        .add(p + "lora_A.weight", DType.F32, new long[] {4, h}, () -> 0f)
        .add(p + "lora_B.weight", DType.F32, new long[] {config.qDim(), 4}, () -> 0f)
        .add("base_model.model.model.layers.0.self_attn.qkv_proj.lora_A.weight", DType.F32, new long[] {4, h}, () -> 0f)
        .add("base_model.model.model.layers.0.self_attn.qkv_proj.lora_B.weight", DType.F32,
            new long[] {config.qDim() + 2 * config.kvDim(), 4}, () -> 0f)));
    assertTrue(twice.contains("already changes"), twice);
  }

  private static Path tensors(Consumer<SafetensorsWriter> add) throws Exception {
    Path out = withConfig(c -> {});
    SafetensorsWriter w = new SafetensorsWriter();
    add.accept(w);
    w.write(out.resolve("adapter_model.safetensors"));
    return out;
  }
}
