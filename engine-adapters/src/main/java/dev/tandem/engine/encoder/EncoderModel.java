package dev.tandem.engine.encoder;

import dev.tandem.engine.compute.AttentionBatch;
import dev.tandem.engine.compute.ComputeBackend;
import dev.tandem.engine.compute.WeightMatrix;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelFormatException;
import dev.tandem.engine.model.ModelWeights;
import dev.tandem.engine.model.PoolingConfig;
import dev.tandem.engine.model.SafetensorsFile;
import dev.tandem.engine.model.Tensor;
import java.lang.foreign.MemorySegment;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A BERT-style encoder's weights and forward pass: token, position and token-type embeddings
 * summed and layer-normed; per layer, bidirectional multi-head attention (q, k, v with biases, every
 * token attending to every token), its output projection added to the input and layer-normed, then
 * a GELU MLP added and layer-normed (post-norm, as BERT and RoBERTa are); then a pooling of the
 * last layer's states. The matrices and the attention run on the compute backend. Weights as Hugging Face saves them ({@code embeddings.*}, {@code
 * encoder.layer.N.*}, with or without a {@code bert.} / {@code roberta.} prefix; layer norms as
 * {@code weight}/{@code bias} or the older {@code gamma}/{@code beta}), in f32, bf16 or f16.
 *
 * <p>Not thread-safe: its engine's thread calls it.
 */
final class EncoderModel implements AutoCloseable {
  private final EncoderConfig config;
  private final ComputeBackend backend;
  private final List<SafetensorsFile> files;
  private final WeightMatrix words;
  private final WeightMatrix positions;
  private final WeightMatrix types;
  private final float[] embedNormW;
  private final float[] embedNormB;
  private final Layer[] layers;

  private record Layer(WeightMatrix[] qkv, float[][] qkvBias, WeightMatrix out, float[] outBias, float[] attnNormW,
      float[] attnNormB, WeightMatrix up, float[] upBias, WeightMatrix down, float[] downBias, float[] normW, float[] normB) {}

  private EncoderModel(EncoderConfig config, ComputeBackend backend, List<SafetensorsFile> files, Map<String, Tensor> tensors, String prefix) {
    this.config = config;
    this.backend = backend;
    this.files = files;
    Weights w = new Weights(config, tensors, prefix);
    int h = config.hidden();
    this.words = w.matrix("embeddings.word_embeddings.weight", config.vocabSize(), h);
    this.positions = w.matrix("embeddings.position_embeddings.weight", config.maxPositions(), h);
    this.types = w.matrix("embeddings.token_type_embeddings.weight", config.typeVocabSize(), h);
    this.embedNormW = w.norm("embeddings.LayerNorm", true);
    this.embedNormB = w.norm("embeddings.LayerNorm", false);
    this.layers = new Layer[config.layers()];
    for (int l = 0; l < layers.length; l++) {
      String p = "encoder.layer." + l + ".";
      String a = p + "attention.";
      layers[l] = new Layer(
          new WeightMatrix[] {w.matrix(a + "self.query.weight", h, h), w.matrix(a + "self.key.weight", h, h), w.matrix(a + "self.value.weight", h, h)},
          new float[][] {w.vector(a + "self.query.bias", h), w.vector(a + "self.key.bias", h), w.vector(a + "self.value.bias", h)},
          w.matrix(a + "output.dense.weight", h, h), w.vector(a + "output.dense.bias", h),
          w.norm(a + "output.LayerNorm", true), w.norm(a + "output.LayerNorm", false),
          w.matrix(p + "intermediate.dense.weight", config.intermediate(), h), w.vector(p + "intermediate.dense.bias", config.intermediate()),
          w.matrix(p + "output.dense.weight", h, config.intermediate()), w.vector(p + "output.dense.bias", h),
          w.norm(p + "output.LayerNorm", true), w.norm(p + "output.LayerNorm", false));
    }
  }

  /**
   * Maps {@code dir}'s weights.
   *
   * @throws ModelFormatException naming the file and tensor that is missing or misshapen
   */
  static EncoderModel load(Path dir, EncoderConfig config, ComputeBackend backend) {
    List<SafetensorsFile> files = new ArrayList<>();
    try {
      Map<String, Tensor> tensors = new HashMap<>();
      for (Path path : ModelWeights.weightFiles(dir)) {
        SafetensorsFile file = SafetensorsFile.open(path);
        files.add(file);
        tensors.putAll(file.tensors());
      }
      String suffix = "embeddings.word_embeddings.weight";
      String prefix = tensors.keySet().stream().filter(k -> k.endsWith(suffix)).map(k -> k.substring(0, k.length() - suffix.length()))
          .min(java.util.Comparator.comparingInt(String::length))
          .orElseThrow(() -> new ModelFormatException(dir + ": no tensor '" + suffix + "' (with or without a prefix) in "
              + ModelWeights.weightFiles(dir)));
      return new EncoderModel(config, backend, List.copyOf(files), tensors, prefix);
    } catch (RuntimeException e) {
      files.forEach(SafetensorsFile::close);
      throw e;
    }
  }

  EncoderConfig config() {
    return config;
  }

  /** The pooled vector of the input {@code ids} (its special tokens included, as the tokenizer added them). */
  float[] pooled(int[] ids, PoolingConfig.Mode mode) {
    return pooled(new int[][] {ids}, mode)[0];
  }

  /**
   * The pooled vector of each input, run as one batch: their rows go through each matrix together
   * and each input attends within itself only.
   */
  float[][] pooled(int[][] inputs, PoolingConfig.Mode mode) {
    float[] states = forward(inputs);
    int h = config.hidden();
    float[][] out = new float[inputs.length][h];
    int first = 0;
    for (int s = 0; s < inputs.length; s++) {
      int n = inputs[s].length;
      float[] o = out[s];
      switch (mode) {
        case CLS -> System.arraycopy(states, first * h, o, 0, h);
        case LAST -> System.arraycopy(states, (first + n - 1) * h, o, 0, h);
        case MEAN -> {
          for (int t = first; t < first + n; t++) {
            for (int i = 0; i < h; i++) {
              o[i] += states[t * h + i];
            }
          }
          for (int i = 0; i < h; i++) {
            o[i] /= n;
          }
        }
        case MAX -> {
          System.arraycopy(states, first * h, o, 0, h);
          for (int t = first + 1; t < first + n; t++) {
            for (int i = 0; i < h; i++) {
              o[i] = Math.max(o[i], states[t * h + i]);
            }
          }
        }
      }
      first += n;
    }
    return out;
  }

  /** The last layer's hidden states of one input, {@code ids.length} rows of {@code hidden}. */
  float[] forward(int[] ids) {
    return forward(new int[][] {ids});
  }

  /** The last layer's hidden states of the inputs, their rows one after another. */
  private float[] forward(int[][] inputs) {
    int n = 0;
    for (int[] ids : inputs) {
      n += ids.length;
    }
    int h = config.hidden();
    float[] x = new float[n * h];
    float[] row = new float[h];
    float[] type = new float[h];
    types.row(0, type, 0);
    int t = 0;
    for (int[] ids : inputs) {
      for (int p = 0; p < ids.length; p++, t++) {
        words.row(ids[p], x, t * h);
        positions.row(config.positionOffset() + p, row, 0);
        for (int i = 0; i < h; i++) {
          x[t * h + i] += row[i] + type[i];
        }
      }
    }
    layerNorm(x, n, embedNormW, embedNormB);
    AttentionLayout layout = new AttentionLayout(inputs, n);
    float[] q = new float[n * h];
    float[] k = new float[n * h];
    float[] v = new float[n * h];
    float[] context = new float[n * h];
    float[] y = new float[n * h];
    float[] up = new float[n * config.intermediate()];
    for (Layer layer : layers) {
      backend.matmul(x, n, layer.qkv(), new float[][] {q, k, v});
      addBias(q, layer.qkvBias()[0]);
      addBias(k, layer.qkvBias()[1]);
      addBias(v, layer.qkvBias()[2]);
      backend.attention(new AttentionBatch(q, context, n, layout.positions, layout.tables, MemorySegment.ofArray(k),
          MemorySegment.ofArray(v), 1, config.heads(), config.heads(), h / config.heads(), DType.F32, 0));
      backend.matmul(context, n, layer.out(), y);
      addBias(y, layer.outBias());
      addResidual(y, x);
      layerNorm(y, n, layer.attnNormW(), layer.attnNormB());
      float[] attended = y;
      backend.matmul(attended, n, layer.up(), up);
      addBias(up, layer.upBias());
      gelu(up);
      backend.matmul(up, n, layer.down(), x);
      addBias(x, layer.downBias());
      addResidual(x, attended);
      layerNorm(x, n, layer.normW(), layer.normB());
    }
    return x;
  }

  /**
   * Bidirectional attention as the backend's paged attention computes it: every row's keys and
   * values are one block of one slot (k and v as they are laid out, [row][head][dim]); an input's
   * rows share a block table naming its rows and stand at its last position, so that each sees
   * every position of its own input and nothing of the others'.
   */
  private static final class AttentionLayout {
    final int[] positions;
    final int[][] tables;

    AttentionLayout(int[][] inputs, int rows) {
      positions = new int[rows];
      tables = new int[rows][];
      int first = 0;
      for (int[] ids : inputs) {
        int[] table = new int[ids.length];
        for (int p = 0; p < ids.length; p++) {
          table[p] = first + p;
        }
        java.util.Arrays.fill(positions, first, first + ids.length, ids.length - 1);
        java.util.Arrays.fill(tables, first, first + ids.length, table); // one array: the backend runs the rows together
        first += ids.length;
      }
    }
  }

  private void layerNorm(float[] x, int rows, float[] weight, float[] bias) {
    int h = config.hidden();
    for (int r = 0; r < rows; r++) {
      double mean = 0;
      for (int i = 0; i < h; i++) {
        mean += x[r * h + i];
      }
      mean /= h;
      double var = 0;
      for (int i = 0; i < h; i++) {
        double c = x[r * h + i] - mean;
        var += c * c;
      }
      var /= h;
      double inv = 1 / Math.sqrt(var + config.layerNormEps());
      for (int i = 0; i < h; i++) {
        x[r * h + i] = (float) ((x[r * h + i] - mean) * inv) * weight[i] + bias[i];
      }
    }
  }

  private static void addBias(float[] x, float[] bias) {
    for (int i = 0; i < x.length; i++) {
      x[i] += bias[i % bias.length];
    }
  }

  private static void addResidual(float[] x, float[] residual) {
    for (int i = 0; i < x.length; i++) {
      x[i] += residual[i];
    }
  }

  private static final VectorSpecies<Float> LANES = FloatVector.SPECIES_PREFERRED;

  /** GELU in place: exact (x·Φ(x), erf as {@link #erf} evaluates it) or tanh-approximated, a vector of lanes at a time. */
  private void gelu(float[] x) {
    int i = 0;
    for (int end = LANES.loopBound(x.length); i < end; i += LANES.length()) {
      FloatVector v = FloatVector.fromArray(LANES, x, i);
      FloatVector half = v.mul(0.5f);
      FloatVector inner = config.tanhGelu()
          ? v.fma(v.mul(v).mul(0.044715f), v).mul(0.7978845608f).lanewise(VectorOperators.TANH)
          : erf(v.mul(0.70710678f));
      half.fma(inner, half).intoArray(x, i);
    }
    for (; i < x.length; i++) {
      double v = x[i];
      x[i] = (float) (config.tanhGelu()
          ? 0.5 * v * (1 + Math.tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))
          : 0.5 * v * (1 + erf(v / Math.sqrt(2))));
    }
  }

  /** The erfc fit's coefficients after its highest, for Horner's rule (as {@link #erf(double)} has them). */
  private static final float[] ERFC_POLY = {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f, 0.09678418f,
      0.37409196f, 1.00002368f, -1.26551223f};

  /** {@link #erf(double)} on each lane, in float arithmetic. */
  private static FloatVector erf(FloatVector x) {
    FloatVector z = x.abs();
    FloatVector t = FloatVector.broadcast(LANES, 1f).div(z.fma(0.5f, 1f));
    FloatVector poly = FloatVector.broadcast(LANES, 0.17087277f);
    for (float c : ERFC_POLY) {
      poly = poly.fma(t, FloatVector.broadcast(LANES, c));
    }
    FloatVector erfc = t.mul(z.mul(z).neg().add(poly).lanewise(VectorOperators.EXP));
    FloatVector positive = erfc.neg().add(1f);
    return positive.blend(positive.neg(), x.compare(VectorOperators.LT, 0f));
  }

  /** The error function, to within 1.2e-7 (Numerical Recipes' erfc by Chebyshev fitting). */
  static double erf(double x) {
    double z = Math.abs(x);
    double t = 1 / (1 + 0.5 * z);
    double erfc = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
    return x >= 0 ? 1 - erfc : erfc - 1;
  }

  @Override
  public void close() {
    files.forEach(SafetensorsFile::close);
    backend.close();
  }

  /** Tensors by name under the checkpoint's prefix, checked for shape. */
  private record Weights(EncoderConfig config, Map<String, Tensor> tensors, String prefix) {
    Tensor get(String name, long... shape) {
      Tensor t = tensors.get(prefix + name);
      if (t == null) {
        throw new ModelFormatException(config.file() + ": the weights have no tensor '" + prefix + name + "'");
      }
      if (!java.util.Arrays.equals(t.shape(), shape)) {
        throw new ModelFormatException(t.file() + ": tensor '" + t.name() + "' is " + t.shapeString() + ", expected "
            + java.util.Arrays.toString(shape) + " from " + config.file());
      }
      return t;
    }

    WeightMatrix matrix(String name, int rows, int cols) {
      Tensor t = get(name, rows, cols);
      return new WeightMatrix(t.name(), t.dtype(), rows, cols, t.data());
    }

    float[] vector(String name, int n) {
      return get(name, n).toFloats();
    }

    /** A layer norm's scale ({@code weight}, or {@code gamma}) or shift ({@code bias}, or {@code beta}). */
    float[] norm(String name, boolean scale) {
      String older = name + (scale ? ".gamma" : ".beta");
      return vector(tensors.containsKey(prefix + older) ? older : name + (scale ? ".weight" : ".bias"), config.hidden());
    }
  }
}
