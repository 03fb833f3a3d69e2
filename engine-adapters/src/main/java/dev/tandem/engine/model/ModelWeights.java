package dev.tandem.engine.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.engine.compute.WeightMatrix;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every weight of a model, checked against its config: {@code model.safetensors}, or the shards
 * named by {@code model.safetensors.index.json}. Matrices point into the mapped files, or, loaded
 * with {@link DType#Q8_0} or {@link DType#Q4_0}, into memory holding their quantized copies.
 *
 * <p>Ownership: owns the mapped files and any quantized copies; {@link #close()} releases both,
 * after which no weight may be read. Thread-safe (read-only).
 */
public final class ModelWeights implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ModelWeights.class);
  private final ModelConfig config;
  private final List<SafetensorsFile> files; // none once every matrix is quantized: the checkpoint is unmapped
  private final Arena quantized; // the quantized copies' memory; null when nothing was quantized
  private final DType quantizeTo; // the layers' matrices' type when quantized at load; null: as stored
  private final WeightMatrix embedding; // (vocab, hidden)
  private final LayerWeights[] layers;
  private final float[] finalNorm; // (hidden)
  private final WeightMatrix lmHead; // (vocab, hidden); the embedding when tied, or stands in for a headless model's
  private final boolean headless; // no lm_head.weight and not tied: pooling only
  private final float[][] scoreHead; // a sequence classifier's score.weight (labels, hidden); null for a causal model

  private ModelWeights(ModelConfig config, List<SafetensorsFile> files, Lookup t, DType quantizeTo, Arena quantized) {
    this.config = config;
    this.quantizeTo = quantizeTo;
    this.quantized = quantized;
    int hidden = config.hiddenSize();
    String m = t.textModelPrefix();
    WeightMatrix embedding = t.matrix(m + "embed_tokens.weight", config.vocabSize(), hidden);
    this.layers = new LayerWeights[config.numLayers()];
    boolean gemma = config.sandwichNorms();
    int qDim = config.qDim();
    int kvDim = config.kvDim();
    int inter = config.intermediateSize();
    for (int l = 0; l < layers.length; l++) {
      String p = m + "layers." + l + ".";
      boolean qkv = config.qkvBias();
      WeightMatrix[] qkvProj; // q, k, v; Phi-3's as rows of its one qkv_proj
      WeightMatrix[] gateUp; // gate, up; Phi-3's as rows of its one gate_up_proj
      if (config.fusedProjections()) {
        String fused = p + "self_attn.qkv_proj.weight";
        int rows = qDim + 2 * kvDim;
        qkvProj = new WeightMatrix[] {
          t.rows(fused, rows, hidden, 0, qDim), t.rows(fused, rows, hidden, qDim, kvDim), t.rows(fused, rows, hidden, qDim + kvDim, kvDim)};
        String mlp = p + "mlp.gate_up_proj.weight";
        gateUp = new WeightMatrix[] {t.rows(mlp, 2 * inter, hidden, 0, inter), t.rows(mlp, 2 * inter, hidden, inter, inter)};
      } else {
        qkvProj = new WeightMatrix[] {
          t.matrix(p + "self_attn.q_proj.weight", qDim, hidden),
          t.matrix(p + "self_attn.k_proj.weight", kvDim, hidden),
          t.matrix(p + "self_attn.v_proj.weight", kvDim, hidden)};
        gateUp = new WeightMatrix[] {t.matrix(p + "mlp.gate_proj.weight", inter, hidden), t.matrix(p + "mlp.up_proj.weight", inter, hidden)};
      }
      layers[l] =
          new LayerWeights(
              t.norm(p + "input_layernorm.weight", hidden),
              qkvProj[0],
              qkvProj[1],
              qkvProj[2],
              qkv ? t.vector(p + "self_attn.q_proj.bias", config.qDim()) : null,
              qkv ? t.vector(p + "self_attn.k_proj.bias", config.kvDim()) : null,
              qkv ? t.vector(p + "self_attn.v_proj.bias", config.kvDim()) : null,
              config.qkNorm() ? t.norm(p + "self_attn.q_norm.weight", config.headDim()) : null,
              config.qkNorm() ? t.norm(p + "self_attn.k_norm.weight", config.headDim()) : null,
              t.matrix(p + "self_attn.o_proj.weight", hidden, config.qDim()),
              config.outputBias() ? t.vector(p + "self_attn.o_proj.bias", hidden) : null,
              gemma ? t.norm(p + "post_attention_layernorm.weight", hidden) : null,
              t.norm(p + (gemma ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight"), hidden),
              gateUp[0],
              gateUp[1],
              t.matrix(p + "mlp.down_proj.weight", hidden, inter),
              gemma ? t.norm(p + "post_feedforward_layernorm.weight", hidden) : null);
    }
    this.finalNorm = t.norm(m + "norm.weight", hidden);
    this.scoreHead = t.has("score.weight") ? t.scoreHead(hidden) : null;
    boolean tied = config.tieWordEmbeddings() && !t.has("lm_head.weight");
    this.headless = !config.tieWordEmbeddings() && !t.has("lm_head.weight");
    if (headless) { // an embedding model saved without its causal head (gte-Qwen2, e5-mistral): the passes still need one
      LOG.info("no lm_head.weight and config.json does not tie the embeddings: no language-model head, so the model serves "
          + "embeddings only (its passes draw from the embedding matrix in the head's place, never returned)");
      tied = true;
    }
    WeightMatrix head = tied ? embedding : t.matrix("lm_head.weight", config.vocabSize(), hidden);
    if (quantized != null) {
      long start = System.nanoTime();
      long before = bytesReadPerToken(layers, head);
      quantizeLayers();
      embedding = quantizeMatrix(embedding, DType.Q8_0);
      head = tied ? embedding : quantizeMatrix(head, DType.Q8_0);
      LOG.info("quantized weights to {} (embedding and LM head q8_0) in {} ms: a token reads {} MB of matrices (was {} MB)",
          quantizeTo.shortName(), (System.nanoTime() - start) / 1_000_000, bytesReadPerToken(layers, head) >> 20, before >> 20);
    }
    this.embedding = embedding;
    this.lmHead = head;
    this.files = quantized != null && everyMatrixQuantized() ? unmapped(files) : files;
  }

  private boolean everyMatrixQuantized() {
    if (!embedding.dtype().quantized() || !lmHead.dtype().quantized()) {
      return false;
    }
    for (LayerWeights l : layers) {
      if (l.matrices().stream().anyMatch(m -> !m.dtype().quantized())) {
        return false;
      }
    }
    return true;
  }

  /**
   * Unmaps the checkpoint once nothing reads it (norms and biases were copied, every matrix
   * quantized): the process then holds the quantized copy alone, not the file's pages beside it.
   */
  private static List<SafetensorsFile> unmapped(List<SafetensorsFile> files) {
    files.forEach(SafetensorsFile::close);
    LOG.info("every matrix quantized: the checkpoint's {} file(s) unmapped", files.size());
    return List.of();
  }

  /** Whether matrices still read the mapped checkpoint (false once every one is quantized). */
  public boolean mapsCheckpoint() {
    return !files.isEmpty();
  }

  /**
   * Every layer's seven matrices quantized to {@link #quantizeTo} into {@link #quantized}, logging
   * progress (it reads the whole checkpoint once: 21 s for 7.8 GB on a 2-core VM). The embedding
   * and LM head follow in Q8_0 whatever the layers' type, as llama.cpp's Q8_0 files hold them and as
   * its Q4_0 files keep the output at more bits (a tied head stays the embedding: rows are looked up
   * in it and dequantized).
   */
  private void quantizeLayers() {
    for (int l = 0; l < layers.length; l++) {
      layers[l] = layers[l].withMatrices(m -> quantizeMatrix(m, quantizeTo));
      if ((l + 1) % Math.max(1, layers.length / 4) == 0 || l + 1 == layers.length) {
        LOG.info("quantizing weights to {}: {}/{} layers", quantizeTo.shortName(), l + 1, layers.length);
      }
    }
  }

  /**
   * {@code w} quantized to {@code to}; a matrix whose rows are not whole interleaves of Q4_0 falls
   * back to Q8_0 where they are of Q8_0, and else stays as stored, with a warning.
   */
  private WeightMatrix quantizeMatrix(WeightMatrix w, DType to) {
    if (!w.quantizable(to)) {
      DType instead = to == DType.Q4_0 && w.quantizable(DType.Q8_0) ? DType.Q8_0 : w.dtype();
      LOG.warn("{}: {} columns are not a multiple of {}; kept as {}", w.name(), w.cols(), WeightMatrix.chunk(to), instead.shortName());
      return instead == w.dtype() ? w : w.quantize(instead, quantized);
    }
    return w.quantize(to, quantized);
  }

  /**
   * Maps and checks the weights in {@code dir}.
   *
   * @throws ModelFormatException naming the file and tensor that is missing, corrupt or misshapen
   */
  public static ModelWeights load(Path dir, ModelConfig config) {
    return load(dir, config, null);
  }

  /**
   * Maps and checks the weights in {@code dir}, then, with {@code quantizeTo} {@link DType#Q8_0} or
   * {@link DType#Q4_0}, quantizes every linear layer to it, the embedding and the LM head to Q8_0
   * (null: as stored).
   *
   * @throws ModelFormatException naming the file and tensor that is missing, corrupt or misshapen
   * @throws IllegalArgumentException for a {@code quantizeTo} other than null, Q8_0 and Q4_0
   */
  public static ModelWeights load(Path dir, ModelConfig config, DType quantizeTo) {
    if (quantizeTo != null && !quantizeTo.quantized()) {
      throw new IllegalArgumentException("weights quantize to q8_0 or q4_0, not " + quantizeTo.shortName());
    }
    List<Path> paths = weightFiles(dir);
    List<SafetensorsFile> files = new ArrayList<>();
    Arena quantized = quantizeTo != null ? Arena.ofShared() : null;
    try {
      Map<String, Tensor> tensors = new HashMap<>();
      for (Path path : paths) {
        SafetensorsFile file = SafetensorsFile.open(path);
        files.add(file);
        tensors.putAll(file.tensors());
      }
      return new ModelWeights(config, List.copyOf(files), new Lookup(dir, paths, tensors, config.unitOffsetNorms() ? 1f : 0f), quantizeTo, quantized);
    } catch (RuntimeException e) {
      files.forEach(SafetensorsFile::close);
      if (quantized != null) {
        quantized.close();
      }
      throw e;
    }
  }

  /** The safetensors files of {@code dir}: {@code model.safetensors}, or the shards its index names. */
  public static List<Path> weightFiles(Path dir) {
    if (!Files.isDirectory(dir)) {
      throw new ModelFormatException(dir + ": model directory does not exist");
    }
    Path index = dir.resolve("model.safetensors.index.json");
    if (Files.isRegularFile(index)) {
      JsonNode map;
      try {
        map = new ObjectMapper().readTree(index.toFile()).path("weight_map");
      } catch (IOException e) {
        throw new ModelFormatException(index + ": not valid JSON: " + e.getMessage());
      }
      if (!map.isObject() || map.isEmpty()) {
        throw new ModelFormatException(index + ": field 'weight_map' is missing or empty");
      }
      Set<Path> shards = new LinkedHashSet<>();
      for (Iterator<JsonNode> it = map.elements(); it.hasNext(); ) {
        shards.add(dir.resolve(it.next().asText()));
      }
      for (Path shard : shards) {
        if (!Files.isRegularFile(shard)) {
          throw new ModelFormatException(index + ": names shard " + shard.getFileName() + ", which does not exist");
        }
      }
      return List.copyOf(shards);
    }
    Path single = dir.resolve("model.safetensors");
    if (!Files.isRegularFile(single)) {
      throw new ModelFormatException(
          dir + ": no model.safetensors and no model.safetensors.index.json (only safetensors weights are supported)");
    }
    return List.of(single);
  }

  public ModelConfig config() {
    return config;
  }

  public WeightMatrix embedding() {
    return embedding;
  }

  public LayerWeights layer(int l) {
    return layers[l];
  }

  public float[] finalNorm() {
    return finalNorm;
  }

  /**
   * Whether the checkpoint has no language-model head ({@code lm_head.weight} absent, the
   * embeddings not tied): it pools (embeddings) and draws nothing a client may see; {@link #lmHead}
   * is the embedding matrix standing in so that a pass has logits to draw its unused token from.
   */
  public boolean headless() {
    return headless;
  }

  /**
   * A sequence classifier's score head ({@code score.weight}: one row of {@code hidden} weights per
   * label, read from the final norm's output at the last token), or null for a causal model.
   */
  public float[][] scoreHead() {
    return scoreHead == null ? null : scoreHead.clone();
  }

  public WeightMatrix lmHead() {
    return lmHead;
  }

  /** Bytes of weights read to decode one token (every matrix once; the embedding row is negligible). */
  public long bytesReadPerToken() {
    return bytesReadPerToken(layers, lmHead);
  }

  /** Weights in the matrices {@link #bytesReadPerToken} counts. */
  public long matrixParameters() {
    long n = (long) lmHead.rows() * lmHead.cols();
    for (LayerWeights l : layers) {
      for (WeightMatrix m : l.matrices()) {
        n += (long) m.rows() * m.cols();
      }
    }
    return n;
  }

  /** The type the layers' matrices are in: the file's, or the type they were quantized to at load. */
  public DType matrixType() {
    return quantizeTo != null ? quantizeTo : layers[0].q().dtype();
  }

  private static long bytesReadPerToken(LayerWeights[] layers, WeightMatrix lmHead) {
    long n = lmHead.byteSize();
    for (LayerWeights l : layers) {
      for (WeightMatrix m : l.matrices()) {
        n += m.byteSize();
      }
    }
    return n;
  }

  @Override
  public void close() {
    files.forEach(SafetensorsFile::close);
    if (quantized != null) {
      quantized.close();
    }
  }

  /** Finds tensors by name and checks their shapes, naming the file on any mismatch. */
  private record Lookup(Path dir, List<Path> files, Map<String, Tensor> tensors, float normOffset) {
    boolean has(String name) {
      return tensors.containsKey(name);
    }

    /**
     * Where the text model's tensors are: {@code model.} in a causal LM's checkpoint; in Gemma 3's
     * multimodal ones {@code language_model.model.} (as published) or {@code model.language_model.}
     * (as recent transformers releases save them), beside a vision tower this engine does not read;
     * at the top level in a base model's (as sentence-transformers saves an embedding model such as
     * Qwen3-Embedding: no {@code model.}, no LM head of its own).
     */
    String textModelPrefix() {
      for (String prefix : List.of("model.", "language_model.model.", "model.language_model.", "")) {
        if (has(prefix + "embed_tokens.weight")) {
          return prefix;
        }
      }
      return "model."; // missing: named as such
    }

    Tensor get(String name, long... shape) {
      Tensor t = tensors.get(name);
      if (t == null) {
        throw new ModelFormatException(
            dir + ": tensor '" + name + "' is missing (looked in "
                + files.stream().map(p -> p.getFileName().toString()).toList() + ")");
      }
      if (!Arrays.equals(t.shape(), shape)) {
        throw new ModelFormatException(
            dir.resolve(t.file()) + ": tensor '" + name + "' has shape " + t.shapeString()
                + "; config.json implies " + Arrays.toString(shape));
      }
      return t;
    }

    /** {@code score.weight}, (labels, hidden) in any float type, as rows of floats. */
    float[][] scoreHead(int hidden) {
      Tensor t = tensors.get("score.weight");
      if (t.shape().length != 2 || t.shape()[1] != hidden || t.shape()[0] < 1) {
        throw new ModelFormatException(dir.resolve(t.file()) + ": tensor 'score.weight' has shape " + t.shapeString()
            + "; a score head is (labels, hidden_size " + hidden + ")");
      }
      WeightMatrix w = matrix("score.weight", (int) t.shape()[0], hidden);
      float[][] rows = new float[w.rows()][hidden];
      for (int r = 0; r < rows.length; r++) {
        for (int c = 0; c < hidden; c++) {
          rows[r][c] = w.get(r, c);
        }
      }
      return rows;
    }

    WeightMatrix matrix(String name, int rows, int cols) {
      Tensor t = get(name, rows, cols);
      return new WeightMatrix(name, t.dtype(), rows, cols, t.data());
    }

    float[] vector(String name, int n) {
      return get(name, n).toFloats();
    }

    /** Rows {@code [from, from + count)} of a fused matrix of {@code totalRows} rows, as a matrix of their own (no copy). */
    WeightMatrix rows(String name, int totalRows, int cols, int from, int count) {
      Tensor t = get(name, totalRows, cols);
      long rowBytes = (long) cols * t.dtype().bytes();
      return new WeightMatrix(name + "[" + from + ":" + (from + count) + "]", t.dtype(), count, cols,
          t.data().asSlice(from * rowBytes, count * rowBytes));
    }

    /** An RMSNorm's weight as the factors the norm multiplies by (Gemma stores them less 1). */
    float[] norm(String name, int n) {
      float[] w = vector(name, n);
      for (int i = 0; i < n; i++) {
        w[i] += normOffset;
      }
      return w;
    }
  }
}
