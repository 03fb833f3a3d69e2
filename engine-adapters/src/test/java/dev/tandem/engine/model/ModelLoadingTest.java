package dev.tandem.engine.model;

import dev.tandem.engine.modeltools.ModelGenerator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Loading real model directories, and every way one can be broken: errors name file and field. */
class ModelLoadingTest {
  @TempDir Path dir;

  private static ObjectNode tiny() {
    return ModelGenerator.config("Qwen3ForCausalLM", "qwen3", 32, 48, 2, 4, 2, 8, 64, true);
  }

  private Path write(ObjectNode config, long shardBytes) throws Exception {
    Path out = dir.resolve("m" + System.nanoTime());
    ModelGenerator.write(config, DType.BF16, 1, out, shardBytes);
    return out;
  }

  private static String loadError(Path model) {
    return assertThrows(ModelFormatException.class, () -> {
      try (ModelWeights w = ModelWeights.load(model, ModelConfig.read(model))) {
        w.config();
      }
    }).getMessage();
  }

  private static void editConfig(Path model, Consumer<ObjectNode> edit) throws Exception {
    ObjectMapper json = new ObjectMapper();
    ObjectNode c = (ObjectNode) json.readTree(model.resolve("config.json").toFile());
    edit.accept(c);
    json.writeValue(model.resolve("config.json").toFile(), c);
  }

  /** Renames every {@code model.}-prefixed tensor of a single-file checkpoint to its bare name (a base model's, as saved). */
  private static void stripModelPrefix(Path safetensors) throws Exception {
    byte[] raw = java.nio.file.Files.readAllBytes(safetensors);
    long n = java.nio.ByteBuffer.wrap(raw, 0, 8).order(java.nio.ByteOrder.LITTLE_ENDIAN).getLong();
    ObjectMapper json = new ObjectMapper();
    ObjectNode header = (ObjectNode) json.readTree(new String(raw, 8, (int) n, java.nio.charset.StandardCharsets.UTF_8));
    ObjectNode renamed = json.createObjectNode();
    header.properties().forEach(e -> renamed.set(e.getKey().startsWith("model.") ? e.getKey().substring(6) : e.getKey(), e.getValue()));
    byte[] h = json.writeValueAsBytes(renamed);
    try (var out = java.nio.file.Files.newOutputStream(safetensors)) {
      out.write(java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(h.length).array());
      out.write(h);
      out.write(raw, (int) (8 + n), raw.length - (int) (8 + n)); // data offsets are relative to the data: unchanged
    }
  }

  /**
   * A base model's checkpoint, as sentence-transformers saves an embedding model such as
   * Qwen3-Embedding: the tensors without {@code model.}, no LM head of its own. Read as the causal
   * LM's (its head tied to the embedding); where the config does not tie them, as a model without
   * a language-model head ({@link ModelWeights#headless}: gte-Qwen2 and e5-mistral ship so).
   */
  @Test
  void aBaseModelsCheckpointWithoutTheModelPrefixLoads() throws Exception {
    Path causal = write(tiny(), 0);
    Path base = write(tiny(), 0); // the same seed: the same weights
    stripModelPrefix(base.resolve("model.safetensors"));
    try (ModelWeights a = ModelWeights.load(causal, ModelConfig.read(causal));
        ModelWeights b = ModelWeights.load(base, ModelConfig.read(base))) {
      assertEquals(a.embedding().data().asByteBuffer(), b.embedding().data().asByteBuffer(), "read from embed_tokens.weight");
      assertEquals(a.layer(1).down().data().asByteBuffer(), b.layer(1).down().data().asByteBuffer());
      assertTrue(java.util.Arrays.equals(a.finalNorm(), b.finalNorm()));
      assertTrue(b.lmHead() == b.embedding(), "tied");
      assertFalse(b.headless());
    }
    editConfig(base, n -> n.put("tie_word_embeddings", false));
    try (ModelWeights headless = ModelWeights.load(base, ModelConfig.read(base))) {
      assertTrue(headless.headless(), "no lm_head.weight and not tied");
      assertTrue(headless.lmHead() == headless.embedding(), "the embedding stands in, so that a pass has logits to draw from");
    }
  }

  @Test
  void singleAndShardedFilesLoadTheSameWeights() throws Exception {
    Path single = write(tiny(), 0);
    Path sharded = write(tiny(), 20_000);
    assertTrue(Files.exists(sharded.resolve("model.safetensors.index.json")));
    try (var files = Files.list(sharded)) {
      assertTrue(files.filter(f -> f.getFileName().toString().matches("model-\\d{5}-of-\\d{5}\\.safetensors")).count() >= 2);
    }
    try (ModelWeights a = ModelWeights.load(single, ModelConfig.read(single));
        ModelWeights b = ModelWeights.load(sharded, ModelConfig.read(sharded))) {
      assertEquals(a.layer(1).down().get(7, 3), b.layer(1).down().get(7, 3));
      assertEquals(a.lmHead(), a.embedding(), "tied embeddings serve as the LM head");
      assertEquals(ModelConfig.Architecture.QWEN3, a.config().architecture());
    }
  }

  /**
   * {@code --quantization q8_0}: every linear layer's matrix and the tied embedding (its LM head)
   * become Q8_0, holding the weights to within half a quantization step, and a token reads about
   * 17/32 of the bf16 bytes; a matrix whose rows are not whole 64-value interleaves stays as stored.
   */
  @Test
  void q8_0QuantizesEveryMatrixWhoseRowsItCanHold() throws Exception {
    Path model = write(ModelGenerator.config("Qwen3ForCausalLM", "qwen3", 64, 96, 2, 4, 2, 16, 256, true), 0);
    try (ModelWeights plain = ModelWeights.load(model, ModelConfig.read(model));
        ModelWeights q = ModelWeights.load(model, ModelConfig.read(model), DType.Q8_0)) {
      assertEquals(DType.Q8_0, q.matrixType());
      for (int l = 0; l < 2; l++) {
        var layer = q.layer(l);
        for (var m : java.util.List.of(layer.q(), layer.k(), layer.v(), layer.o(), layer.gate(), layer.up())) {
          assertEquals(DType.Q8_0, m.dtype(), m.name());
        }
        assertEquals(DType.BF16, layer.down().dtype(), "96 columns: kept as stored");
        assertEquals(plain.layer(l).down().get(5, 7), layer.down().get(5, 7));
        float original = plain.layer(l).gate().get(3, 40);
        assertTrue(Math.abs(layer.gate().get(3, 40) - original) <= (0.5 + 127.0 / 2048) * layer.gate().scale(3, 1) + 1e-6,
            "within half a step: " + layer.gate().get(3, 40) + " vs " + original);
      }
      assertEquals(DType.Q8_0, q.embedding().dtype());
      assertEquals(q.embedding(), q.lmHead(), "a tied LM head stays the embedding");
      double ratio = (double) q.bytesReadPerToken() / plain.bytesReadPerToken();
      assertTrue(ratio > 0.5 && ratio < 0.7, "bytes a token reads: " + ratio + " of bf16's");
      assertTrue(q.mapsCheckpoint(), "the down projections still read the file");
    }
    Path whole = write(ModelGenerator.config("Qwen3ForCausalLM", "qwen3", 64, 128, 2, 4, 2, 16, 256, true), 0);
    try (ModelWeights q = ModelWeights.load(whole, ModelConfig.read(whole), DType.Q8_0)) {
      assertFalse(q.mapsCheckpoint(), "every matrix quantized: the checkpoint is unmapped");
      assertEquals(DType.Q8_0, q.layer(1).down().dtype());
      assertTrue(Float.isFinite(q.layer(1).down().get(3, 100)) && q.finalNorm().length == 64, "the weights still read");
    }
    assertThrows(IllegalArgumentException.class, () -> ModelWeights.load(model, ModelConfig.read(model), DType.BF16));
  }

  /**
   * {@code --quantization q4_0}: the layers' matrices whose rows are whole 128-value interleaves
   * become Q4_0 (within half a step of the weights), one of whole 64-value interleaves Q8_0, the
   * tied embedding (its LM head) Q8_0; a token reads well under Q8_0's bytes, and once every matrix
   * is quantized the checkpoint is unmapped.
   */
  @Test
  void q4_0QuantizesTheLayersAndKeepsTheEmbeddingAtQ8_0() throws Exception {
    Path model = write(ModelGenerator.config("Qwen3ForCausalLM", "qwen3", 128, 192, 2, 4, 2, 32, 256, true), 0);
    try (ModelWeights plain = ModelWeights.load(model, ModelConfig.read(model));
        ModelWeights q8 = ModelWeights.load(model, ModelConfig.read(model), DType.Q8_0);
        ModelWeights q = ModelWeights.load(model, ModelConfig.read(model), DType.Q4_0)) {
      assertEquals(DType.Q4_0, q.matrixType());
      for (int l = 0; l < 2; l++) {
        var layer = q.layer(l);
        for (var m : java.util.List.of(layer.q(), layer.k(), layer.v(), layer.o(), layer.gate(), layer.up())) {
          assertEquals(DType.Q4_0, m.dtype(), m.name());
        }
        assertEquals(DType.Q8_0, layer.down().dtype(), "192 columns: whole Q8_0 interleaves, not Q4_0's");
        float original = plain.layer(l).gate().get(3, 40);
        assertTrue(Math.abs(layer.gate().get(3, 40) - original) <= (0.5 + 8.0 / 2048) * Math.abs(layer.gate().scale(3, 1)) + 1e-6,
            "within half a step: " + layer.gate().get(3, 40) + " vs " + original);
      }
      assertEquals(DType.Q8_0, q.embedding().dtype());
      assertEquals(q.embedding(), q.lmHead(), "a tied LM head stays the embedding");
      assertTrue(q.bytesReadPerToken() < q8.bytesReadPerToken(), q.bytesReadPerToken() + " vs " + q8.bytesReadPerToken());
      assertFalse(q.mapsCheckpoint(), "every matrix quantized, the down projections to Q8_0: the checkpoint is unmapped");
    }
    Path whole = write(ModelGenerator.config("LlamaForCausalLM", "llama", 128, 256, 2, 4, 2, 32, 64, false), 0);
    try (ModelWeights plain = ModelWeights.load(whole, ModelConfig.read(whole));
        ModelWeights q = ModelWeights.load(whole, ModelConfig.read(whole), DType.Q4_0)) {
      assertEquals(DType.Q4_0, q.layer(1).down().dtype());
      assertEquals(DType.Q8_0, q.lmHead().dtype());
      long layers = plain.bytesReadPerToken() - plain.lmHead().byteSize();
      long quantizedLayers = q.bytesReadPerToken() - q.lmHead().byteSize();
      assertEquals(4.5 / 16, (double) quantizedLayers / layers, 1e-9, "Q4_0: 4.5 bits a weight against bf16's 16");
    }
  }

  @Test
  void aPreQuantizedCheckpointIsRefusedNamingTheFieldAndTheFlag() throws Exception {
    Path model = write(tiny(), 0);
    editConfig(model, c -> c.putObject("quantization_config").put("quant_method", "gptq").put("bits", 4));
    var e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(model));
    assertTrue(e.getMessage().contains("config.json: field 'quantization_config' (quant_method gptq)")
        && e.getMessage().contains("--quantization q8_0 or q4_0"), e.getMessage());
  }

  @Test
  void configErrorsNameTheFileAndField() throws Exception {
    Path m = write(tiny(), 0);
    editConfig(m, c -> c.remove("hidden_size"));
    String e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(m)).getMessage();
    assertTrue(e.contains("config.json") && e.contains("'hidden_size' is missing"), e);

    editConfig(m, c -> c.putArray("architectures").add("GPTNeoXForCausalLM"));
    e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(m)).getMessage();
    assertTrue(e.contains("GPTNeoXForCausalLM") && e.contains("MistralForCausalLM") && e.contains("Gemma2ForCausalLM"), e);

    Path m2 = write(tiny(), 0);
    editConfig(m2, c -> c.putObject("rope_scaling").put("rope_type", "yarn").put("factor", 4.0));
    e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(m2)).getMessage();
    assertTrue(e.contains("rope_scaling.rope_type") && e.contains("yarn"), e);

    Path m3 = write(tiny(), 0);
    editConfig(m3, c -> c.put("num_key_value_heads", 3));
    e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(m3)).getMessage();
    assertTrue(e.contains("num_key_value_heads"), e);

    // Per-layer tables follow from the count: an absurd one is refused, not allocated.
    editConfig(m3, c -> c.put("num_key_value_heads", 2).put("num_hidden_layers", 2_000_000_000));
    e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(m3)).getMessage();
    assertTrue(e.contains("'num_hidden_layers' is 2000000000; at most 4096"), e);

    e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(dir.resolve("nope"))).getMessage();
    assertTrue(e.contains("nope") && e.contains("does not exist"), e);
  }

  @Test
  void mistralsSlidingWindowIsReadAndOtherArchitecturesIgnoreIt() throws Exception {
    ObjectNode mistral = tiny().put("model_type", "mistral").put("max_position_embeddings", 32768);
    mistral.putArray("architectures").add("MistralForCausalLM");
    Path v1 = write(mistral.deepCopy().put("sliding_window", 4096), 0); // Mistral-7B-v0.1: every layer slides
    assertEquals(ModelConfig.Architecture.MISTRAL, ModelConfig.read(v1).architecture());
    assertEquals(4096, ModelConfig.read(v1).slidingWindow());
    assertEquals(4096, ModelConfig.read(v1).windowOf(0));
    assertTrue(ModelConfig.read(v1).everyLayerSlides());
    assertEquals(32768, ModelConfig.read(v1).maxPositionEmbeddings());
    Path v3 = write(mistral.deepCopy().putNull("sliding_window"), 0); // v0.2 on, Nemo
    assertEquals(0, ModelConfig.read(v3).slidingWindow());
    assertEquals(0, ModelConfig.read(v3).windowOf(1));
    // Qwen2 and Qwen3 name a window they do not use unless use_sliding_window says so.
    Path qwen = write(tiny().put("sliding_window", 4096).put("max_position_embeddings", 40960), 0);
    assertEquals(0, ModelConfig.read(qwen).slidingWindow());

    editConfig(v1, c -> c.put("sliding_window", "4k"));
    String e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(v1)).getMessage();
    assertTrue(e.contains("config.json") && e.contains("'sliding_window' must be a positive integer or null"), e);
    editConfig(v3, c -> c.put("eos_token_id", "</s>"));
    e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(v3)).getMessage();
    assertTrue(e.contains("config.json") && e.contains("'eos_token_id' must be a token id"), e);
  }

  /** Hugging Face's rule: with use_sliding_window, layers from max_window_layers (default 28) on slide; layer_types, where given, lists them. */
  @Test
  void qwensSlidingLayersFollowMaxWindowLayersOrLayerTypes() throws Exception {
    Path q = write(tiny().put("use_sliding_window", true).put("sliding_window", 64).put("max_window_layers", 1), 0);
    ModelConfig c = ModelConfig.read(q);
    assertEquals(0, c.windowOf(0));
    assertEquals(64, c.windowOf(1));
    assertFalse(c.everyLayerSlides());
    editConfig(q, n -> n.remove("max_window_layers")); // default 28: none of the 2 layers slides
    assertEquals(0, ModelConfig.read(q).slidingWindow());
    editConfig(q, n -> n.putArray("layer_types").add("sliding_attention").add("sliding_attention"));
    assertTrue(ModelConfig.read(q).everyLayerSlides());

    editConfig(q, n -> n.putArray("layer_types").add("sliding_attention").add("full_attention"));
    assertEquals(64, ModelConfig.read(q).windowOf(0)); // any layout, as listed
    assertEquals(0, ModelConfig.read(q).windowOf(1));
    editConfig(q, n -> n.putArray("layer_types").add("full_attention"));
    String e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(q)).getMessage();
    assertTrue(e.contains("'layer_types' must list one type per layer (2)"), e);
    editConfig(q, n -> n.putArray("layer_types").add("full_attention").add("chunked_attention"));
    e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(q)).getMessage();
    assertTrue(e.contains("'layer_types[1]'") && e.contains("chunked_attention"), e);
    editConfig(q, n -> {
      n.remove("layer_types");
      n.putNull("sliding_window");
    });
    e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(q)).getMessage();
    assertTrue(e.contains("'sliding_window' must be a positive integer when use_sliding_window is true"), e);
    editConfig(q, n -> n.put("sliding_window", 64).put("max_window_layers", -1));
    e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(q)).getMessage();
    assertTrue(e.contains("'max_window_layers' must be a non-negative integer"), e);
  }

  /** Phi-3 and Phi-4 hold q, k, v in one matrix and gate, up in another: read as row ranges of them. */
  @Test
  void phi3sFusedProjectionsAreReadAsRowsAndItsOddsAndEndsChecked() throws Exception {
    ObjectNode phi = ModelGenerator.config("Phi3ForCausalLM", "phi3", 32, 48, 2, 4, 2, 8, 64, false).put("sliding_window", 2047);
    Path p = write(phi, 0);
    ModelConfig c = ModelConfig.read(p);
    assertEquals(ModelConfig.Architecture.PHI3, c.architecture());
    assertTrue(c.everyLayerSlides() && c.windowOf(1) == 2047, "Phi-3-mini-4k's window, in every layer");
    try (ModelWeights w = ModelWeights.load(p, c)) {
      LayerWeights l = w.layer(1);
      assertEquals(32, l.q().rows());
      assertEquals(16, l.k().rows());
      assertEquals(16, l.v().rows());
      assertEquals(48, l.gate().rows());
      assertEquals(48, l.up().rows());
      // k and v follow q in the fused matrix, up follows gate: views of its rows, not copies.
      assertTrue(l.v().data().address() - l.q().data().address() == (32L + 16) * 32 * DType.BF16.bytes(), "rows in place, after q and k");
      assertTrue(l.up().data().address() - l.gate().data().address() == 48L * 32 * DType.BF16.bytes());
    }
    editConfig(p, n -> n.put("num_key_value_heads", 4)); // qkv_proj now 64 rows short
    String e = loadError(p);
    assertTrue(e.contains("model.safetensors") && e.contains("self_attn.qkv_proj.weight") && e.contains("[64, 32]"), e);
  }

  /**
   * Phi-4-mini's RoPE (`tandem model create --shape phi4-mini`: its published config.json's fields,
   * factors made up, of the published count): the first 96 of 128 dimensions rotate, LongRoPE over
   * an original context of 4,096 with the attention factor √(1 + ln 32 ÷ ln 4096); the long
   * factors where the served context is longer than that, the short ones within it.
   */
  @Test
  void phi4MinisPartialRotationAndLongRopeAreRead() {
    ObjectNode phi = ModelGenerator.shape("phi4-mini");
    ObjectNode rope = (ObjectNode) phi.get("rope_scaling");
    ModelConfig c = ModelConfig.parse("config.json", phi);
    assertEquals(128, c.headDim());
    assertEquals(96, c.rotaryDim());
    ModelConfig.RopeScaling s = c.ropeScaling();
    assertEquals("longrope", s.type());
    assertEquals(4096, s.originalMaxPositions());
    assertEquals(Math.sqrt(1 + Math.log(32) / Math.log(4096)), s.attentionFactor(), 1e-12);
    assertEquals(48.0, s.factorsFor(131_072)[47]);
    assertEquals(48.0, s.factorsFor(4097)[47]);
    assertEquals(1.47, s.factorsFor(4096)[47], 1e-12);
    rope.put("type", "su"); // Phi-3-mini-128k's first config.json named it so, as transformers still reads
    assertEquals("longrope", ModelConfig.parse("config.json", phi).ropeScaling().type());
    rope.put("attention_factor", 1.0); // given, it wins over the formula
    assertEquals(1.0, ModelConfig.parse("config.json", phi).ropeScaling().attentionFactor());

    rope.withArray("long_factor").remove(47);
    String e = assertThrows(ModelFormatException.class, () -> ModelConfig.parse("config.json", phi)).getMessage();
    assertTrue(e.contains("config.json") && e.contains("'rope_scaling.long_factor' must list 48 numbers") && e.contains("47 of them"), e);
    rope.withArray("long_factor").add(-1);
    e = assertThrows(ModelFormatException.class, () -> ModelConfig.parse("config.json", phi)).getMessage();
    assertTrue(e.contains("'rope_scaling.long_factor[47]' must be a positive number, was -1"), e);
    rope.withArray("long_factor").remove(47);
    rope.withArray("long_factor").add(48);
    phi.put("partial_rotary_factor", 1.5);
    e = assertThrows(ModelFormatException.class, () -> ModelConfig.parse("config.json", phi)).getMessage();
    assertTrue(e.contains("'partial_rotary_factor' must be a number in (0, 1], was 1.5"), e);
    phi.put("partial_rotary_factor", 0.01); // 1.28 dimensions
    e = assertThrows(ModelFormatException.class, () -> ModelConfig.parse("config.json", phi)).getMessage();
    assertTrue(e.contains("'partial_rotary_factor' (0.01) rotates 1 of head_dim 128"), e);
  }

  /** google/gemma-3-1b-it's config.json as published (its tokenizer's special ids aside). */
  @Test
  void gemma3IsReadWithItsSlidingLayersRopeBasesAndDefaults() throws Exception {
    ObjectNode published = ModelGenerator.shape("gemma3-1b");
    ModelConfig c = ModelConfig.parse("config.json", published);
    assertEquals(ModelConfig.Architecture.GEMMA3, c.architecture());
    assertEquals(ModelConfig.Activation.GELU_TANH, c.activation());
    assertEquals(512, c.slidingWindow());
    for (int l = 0; l < 26; l++) { // every sixth layer attends in full
      assertEquals((l + 1) % 6 == 0 ? 0 : 512, c.windowOf(l), "layer " + l);
    }
    assertFalse(c.everyLayerSlides());
    assertEquals(10_000, c.localRopeTheta());
    assertEquals(1_000_000, c.ropeTheta());
    assertEquals(256, c.queryPreAttnScalar());
    assertEquals(0, c.finalLogitSoftcap());
    assertEquals(0, c.attnLogitSoftcap(), "null: uncapped scores");
    assertEquals(20, ModelConfig.parse("config.json", published.deepCopy().put("attn_logit_softcapping", 20.0)).attnLogitSoftcap(),
        "a cap a Gemma 3 config sets is applied, as transformers applies it");
    assertTrue(c.qkNorm() && c.unitOffsetNorms() && c.sandwichNorms());
    assertEquals(34f, c.embeddingScale()); // √1152 = 33.94, rounded to bf16 as Hugging Face does
    // Tied unless told otherwise (Gemma's default), and its norms' offsets read as the factors 1 + w
    // (the same config, narrower, for weights of a test's size).
    ObjectNode small = published.deepCopy().put("hidden_size", 32).put("intermediate_size", 48).put("head_dim", 8).put("vocab_size", 64);
    small.remove("tie_word_embeddings");
    Path g = write(small, 0);
    try (ModelWeights w = ModelWeights.load(g, ModelConfig.read(g))) {
      assertTrue(w.lmHead() == w.embedding());
      float[] norm = w.layer(0).mlpNorm();
      double mean = 0;
      for (float v : norm) {
        mean += v / norm.length;
      }
      assertEquals(1.0, mean, 0.02, "pre_feedforward_layernorm's offsets, near 0, become factors near 1");
      assertTrue(w.layer(0).attentionOutNorm() != null && w.layer(0).mlpOutNorm() != null);
    }
    editConfig(g, n -> n.putArray("layer_types").add("full_attention").addAll(
        java.util.Collections.nCopies(25, new com.fasterxml.jackson.databind.node.TextNode("sliding_attention"))));
    assertEquals(0, ModelConfig.read(g).windowOf(0));
    assertEquals(512, ModelConfig.read(g).windowOf(5));
    editConfig(g, n -> {
      n.remove("layer_types");
      n.remove(java.util.List.of("sliding_window", "sliding_window_pattern"));
    });
    assertEquals(4096, ModelConfig.read(g).windowOf(0)); // Gemma3TextConfig's defaults: 4,096, pattern 6
    assertEquals(0, ModelConfig.read(g).windowOf(5));
  }

  /** google/gemma-2-2b-it's config.json as published (its tokenizer's special ids aside). */
  @Test
  void gemma2IsReadWithAlternatingSlidingLayersAndCappedScores() throws Exception {
    ObjectNode published = ModelGenerator.shape("gemma2-2b");
    ModelConfig c = ModelConfig.parse("config.json", published);
    assertEquals(ModelConfig.Architecture.GEMMA2, c.architecture());
    assertEquals(ModelConfig.Activation.GELU_TANH, c.activation());
    for (int l = 0; l < 26; l++) { // sliding from the first layer, every other one
      assertEquals(l % 2 == 0 ? 4096 : 0, c.windowOf(l), "layer " + l);
    }
    assertEquals(0, c.localRopeTheta(), "one RoPE base for every layer");
    assertEquals(256, c.queryPreAttnScalar());
    assertEquals(50, c.attnLogitSoftcap());
    assertEquals(30, c.finalLogitSoftcap());
    assertFalse(c.qkNorm(), "no q/k norm, unlike Gemma 3");
    assertTrue(c.unitOffsetNorms() && c.sandwichNorms());
    assertEquals(48f, c.embeddingScale()); // √2304
    ObjectNode unset = published.deepCopy();
    unset.remove(java.util.List.of("attn_logit_softcapping", "final_logit_softcapping"));
    assertEquals(50, ModelConfig.parse("config.json", unset).attnLogitSoftcap(), "Gemma2Config's defaults where the fields are missing");
    assertEquals(30, ModelConfig.parse("config.json", unset).finalLogitSoftcap());
    ObjectNode off = published.deepCopy().putNull("attn_logit_softcapping");
    assertEquals(0, ModelConfig.parse("config.json", off).attnLogitSoftcap(), "null turns the cap off");
    ObjectNode bad = published.deepCopy().put("attn_logit_softcapping", -1);
    String e = assertThrows(ModelFormatException.class, () -> ModelConfig.parse("config.json", bad)).getMessage();
    assertTrue(e.contains("'attn_logit_softcapping' must be a positive number"), e);
    ObjectNode small = published.deepCopy().put("hidden_size", 32).put("intermediate_size", 48).put("head_dim", 8).put("vocab_size", 64);
    Path g = write(small, 0);
    try (ModelWeights w = ModelWeights.load(g, ModelConfig.read(g))) {
      assertTrue(w.layer(0).qNorm() == null && w.layer(0).attentionOutNorm() != null && w.layer(0).mlpOutNorm() != null);
    }
  }

  /**
   * Gemma 3 from 4B up is published as Gemma3ForConditionalGeneration: the text model's config in
   * text_config, naming only what differs from Gemma3TextConfig's defaults (as 4B's does), its
   * tensors under language_model. beside a vision tower. Served as the causal LM it contains.
   */
  @Test
  void gemma3sMultimodalCheckpointServesItsTextModel() throws Exception {
    ObjectMapper json = new ObjectMapper();
    ObjectNode text = json.createObjectNode().put("model_type", "gemma3_text").put("hidden_size", 64).put("intermediate_size", 96)
        .put("num_hidden_layers", 3).put("sliding_window", 8).put("sliding_window_pattern", 2).put("vocab_size", 512);
    text.putObject("rope_scaling").put("rope_type", "linear").put("factor", 8.0);
    ObjectNode multimodal = json.createObjectNode();
    multimodal.putArray("architectures").add("Gemma3ForConditionalGeneration");
    multimodal.put("model_type", "gemma3").set("text_config", text);
    multimodal.putObject("vision_config").put("model_type", "siglip_vision_model");
    multimodal.putArray("eos_token_id").add(1).add(106);
    Path mm = write(multimodal, 0);
    ModelConfig c = ModelConfig.read(mm);
    assertEquals(ModelConfig.Architecture.GEMMA3, c.architecture());
    assertEquals(8, c.numHeads()); // Gemma3TextConfig's defaults where text_config is silent
    assertEquals(4, c.numKvHeads());
    assertEquals(256, c.headDim());
    assertEquals(1_000_000, c.ropeTheta());
    assertEquals(10_000, c.localRopeTheta());
    assertEquals(256, c.queryPreAttnScalar());
    assertEquals(131_072, c.maxPositionEmbeddings());
    assertEquals(8, c.windowOf(0));
    assertEquals(0, c.windowOf(1));
    assertEquals("linear", c.ropeScaling().type());
    assertTrue(java.util.Arrays.stream(c.eosTokenIds()).boxed().toList().containsAll(java.util.List.of(1, 106)), "the top level's end tokens");
    assertEquals(DType.BF16, c.torchDtype());

    ObjectNode causal = text.deepCopy().put("torch_dtype", "bfloat16");
    causal.putArray("architectures").add("Gemma3ForCausalLM");
    Path lm = write(causal, 0);
    try (ModelWeights a = ModelWeights.load(mm, c); ModelWeights b = ModelWeights.load(lm, ModelConfig.read(lm))) {
      assertEquals(a.embedding().data().asByteBuffer(), b.embedding().data().asByteBuffer(), "read from language_model.model.embed_tokens");
      assertEquals(a.layer(2).down().data().asByteBuffer(), b.layer(2).down().data().asByteBuffer());
      assertTrue(java.util.Arrays.equals(a.finalNorm(), b.finalNorm()));
      assertTrue(a.lmHead() == a.embedding());
    }
    editConfig(mm, n -> n.remove("text_config"));
    String e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(mm)).getMessage();
    assertTrue(e.contains("config.json") && e.contains("'text_config' is missing"), e);
    editConfig(mm, n -> n.set("text_config", text.deepCopy().put("hidden_size", -1)));
    e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(mm)).getMessage();
    assertTrue(e.contains("config.json (text_config): field 'hidden_size' must be a positive integer"), e);
  }

  @Test
  void gemmaVariantsThisEngineDoesNotComputeAreRefusedNamingTheField() throws Exception {
    Path g = write(ModelGenerator.config("Gemma3ForCausalLM", "gemma3_text", 32, 48, 2, 4, 2, 8, 64, true)
        .put("hidden_activation", "gelu_pytorch_tanh"), 0);
    assertEquals(ModelConfig.Activation.GELU_TANH, ModelConfig.read(g).activation()); // hidden_activation over hidden_act
    String[][] cases = {
      {"use_bidirectional_attention", "true", "'use_bidirectional_attention' is true"},
      {"rope_parameters", "{\"full_attention\": {}}", "'rope_parameters' is not supported"},
      {"hidden_activation", "\"gelu\"", "'hidden_activation' is gelu; supported: silu, gelu_pytorch_tanh"},
      {"sliding_window", "null", "'sliding_window' must be a positive integer"},
      {"sliding_window_pattern", "0", "'sliding_window_pattern' must be a positive integer"},
    };
    ObjectMapper json = new ObjectMapper();
    for (String[] c : cases) {
      editConfig(g, n -> n.set(c[0], readTree(json, c[1])));
      String e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(g), c[0]).getMessage();
      assertTrue(e.contains("config.json") && e.contains(c[2]), e);
      editConfig(g, n -> n.remove(c[0]));
    }
    editConfig(g, n -> {
      n.remove("hidden_activation");
      n.put("hidden_act", "relu");
    });
    String e = assertThrows(ModelFormatException.class, () -> ModelConfig.read(g)).getMessage();
    assertTrue(e.contains("'hidden_act' is relu"), e);
    ModelConfig.read(write(tiny(), 0)); // and the others still read
  }

  private static com.fasterxml.jackson.databind.JsonNode readTree(ObjectMapper json, String text) {
    try {
      return json.readTree(text);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @Test
  void truncatedOrCorruptWeightsAreRefusedAtLoad() throws Exception {
    Path m = write(tiny(), 0);
    Path file = m.resolve("model.safetensors");
    long size = Files.size(file);
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
      raf.setLength(size - 100);
    }
    String e = loadError(m);
    assertTrue(e.contains("model.safetensors") && e.contains("truncated"), e);

    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
      raf.seek(0);
      raf.write(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0, 0, 0, 0});
    }
    e = loadError(m);
    assertTrue(e.contains("model.safetensors") && e.contains("corrupt header length"), e);
  }

  @Test
  void missingTensorsWrongShapesAndUnsupportedTypesAreNamed() throws Exception {
    Path m = write(tiny(), 0);
    editConfig(m, c -> c.put("intermediate_size", 40));
    String e = loadError(m);
    assertTrue(e.contains("model.safetensors") && e.contains("mlp.gate_proj.weight") && e.contains("[48, 32]"), e);

    Path m2 = write(tiny(), 0);
    editConfig(m2, c -> c.put("num_hidden_layers", 3));
    e = loadError(m2);
    assertTrue(e.contains("model.layers.2.") && e.contains("missing"), e);

    Path m3 = dir.resolve("int8");
    Files.createDirectories(m3);
    new ObjectMapper().writeValue(m3.resolve("config.json").toFile(), tiny());
    writeRaw(m3.resolve("model.safetensors"), "{\"w\":{\"dtype\":\"I8\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4);
    e = loadError(m3);
    assertTrue(e.contains("'w'") && e.contains("I8"), e);

    Path empty = dir.resolve("empty");
    Files.createDirectories(empty);
    new ObjectMapper().writeValue(empty.resolve("config.json").toFile(), tiny());
    e = loadError(empty);
    assertTrue(e.contains("no model.safetensors"), e);
  }

  /**
   * A shape whose bytes pass 2^63 (found by fuzzing: it escaped as an ArithmeticException) and a
   * dimension past a long are refused naming the file and tensor.
   */
  @Test
  void shapesPastALongAreRefusedNamingTheTensor() throws Exception {
    Path file = dir.resolve("huge.safetensors");
    writeRaw(file, "{\"w\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,16]}}", 16);
    String e = assertThrows(ModelFormatException.class, () -> SafetensorsFile.open(file)).getMessage();
    assertTrue(e.startsWith(file.toString()) && e.contains("'w'") && e.contains("more bytes than any file holds"), e);
    writeRaw(file, "{\"w\":{\"dtype\":\"F32\",\"shape\":[66666666666666666666666],\"data_offsets\":[0,16]}}", 16);
    e = assertThrows(ModelFormatException.class, () -> SafetensorsFile.open(file)).getMessage();
    assertTrue(e.contains("'w'") && e.contains("past 2^63"), e);
  }

  /** A tensor past 2 GB into a (sparse) file is read correctly: offsets are longs throughout. */
  @Test
  void filesOverTwoGigabytesMap() throws Exception {
    long offset = 3L << 30;
    String header = "{\"pad\":{\"dtype\":\"BF16\",\"shape\":[" + offset / 2 + "],\"data_offsets\":[0," + offset
        + "]},\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[" + offset + "," + (offset + 8) + "]}}";
    Path file = dir.resolve("big.safetensors");
    writeRaw(file, header, offset + 8);
    byte[] h = header.getBytes(StandardCharsets.UTF_8);
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
      raf.seek(8 + h.length + offset);
      ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putFloat(1.5f).putFloat(-2.25f);
      raf.write(b.array());
    }
    try (SafetensorsFile f = SafetensorsFile.open(file)) {
      Tensor x = f.tensors().get("x");
      assertEquals(1.5f, x.get(0));
      assertEquals(-2.25f, x.get(1));
    }
  }

  /** A safetensors file with the given header and a sparse data section of {@code dataBytes}. */
  private static void writeRaw(Path file, String header, long dataBytes) throws Exception {
    byte[] h = header.getBytes(StandardCharsets.UTF_8);
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
      raf.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(h.length).array());
      raf.write(h);
      raf.setLength(8 + h.length + dataBytes);
    }
  }
}
