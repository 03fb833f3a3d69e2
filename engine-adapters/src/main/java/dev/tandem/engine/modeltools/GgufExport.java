package dev.tandem.engine.modeltools;

import dev.tandem.engine.compute.WeightMatrix;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelWeights;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a Llama, Phi-3 or Gemma 3 model directory as a GGUF v3 file that llama.cpp loads, holding
 * the same weights in the same element type: what llama.cpp's own convert_hf_to_gguf.py does for
 * LlamaForCausalLM, including its reordering of q and k rows (llama.cpp rotates adjacent pairs for
 * Llama, Hugging Face rotates halves), for Phi3ForCausalLM (fused qkv and gate/up, halves, no
 * reordering) and for Gemma3ForCausalLM (halves; norm weights as the factors 1 + w), with the
 * byte-level BPE tokenizer from tokenizer.json.
 *
 * <p>Facts from the GGUF specification (ggml's docs/gguf.md): little-endian; magic "GGUF", version
 * 3; metadata key/values; tensor infos with dimensions innermost first; data aligned to 32 bytes.
 */
public final class GgufExport {
  private static final int ALIGNMENT = 32;
  private static final int T_UINT32 = 4;
  private static final int T_INT32 = 5;
  private static final int T_FLOAT32 = 6;
  private static final int T_BOOL = 7;
  private static final int T_STRING = 8;
  private static final int T_ARRAY = 9;

  private GgufExport() {}

  public static void write(Path modelDir, Path out) throws IOException {
    write(modelDir, out, null);
  }

  /**
   * The model as a GGUF file, its matrices quantized first when {@code quantizeTo} is {@link
   * DType#Q8_0} or {@link DType#Q4_0} — exactly as the engine quantizes them at load ({@code
   * --quantization}, the embedding and LM head in Q8_0 either way), so llama.cpp runs the same
   * weights (null: as stored).
   */
  public static void write(Path modelDir, Path out, DType quantizeTo) throws IOException {
    ModelConfig c = ModelConfig.read(modelDir);
    boolean gemma = c.gemma();
    boolean phi3 = c.architecture() == ModelConfig.Architecture.PHI3;
    if ((c.architecture() != ModelConfig.Architecture.LLAMA && !gemma && !phi3) || c.qkvBias()) {
      throw new IllegalArgumentException(modelDir + ": GGUF export supports LlamaForCausalLM without biases, Phi3ForCausalLM,"
          + " Gemma2ForCausalLM and Gemma3ForCausalLM, not " + c.architecture().hfName);
    }
    if (phi3 && c.qDim() != c.hiddenSize()) {
      throw new IllegalArgumentException(modelDir + ": llama.cpp's Phi-3 needs heads × head_dim = hidden_size");
    }
    if (gemma) {
      checkGemmaLayout(modelDir, c);
    }
    try (ModelWeights w = ModelWeights.load(modelDir, c, quantizeTo)) {
      List<TensorOut> tensors = tensors(c, w);
      Metadata meta = metadata(modelDir, c, w);
      try (OutputStream file = Files.newOutputStream(out);
          Le o = new Le(new BufferedOutputStream(file, 1 << 20))) {
        o.bytes("GGUF".getBytes(StandardCharsets.US_ASCII));
        o.u32(3);
        o.u64(tensors.size());
        o.u64(meta.count);
        o.bytes(meta.bytes.toByteArray());
        long offset = 0;
        for (TensorOut t : tensors) {
          o.string(t.name);
          o.u32(t.dims.length);
          for (long d : t.dims) {
            o.u64(d);
          }
          o.u32(t.ggmlType);
          o.u64(offset);
          offset = align(offset + t.bytes());
        }
        o.pad();
        for (TensorOut t : tensors) {
          t.writer.write(o);
          o.pad();
        }
      }
    }
  }

  private static long align(long n) {
    return (n + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
  }

  /** One tensor as GGUF stores it: dims innermost first, its size, and how to write its bytes. */
  private record TensorOut(String name, long[] dims, int ggmlType, long bytes, TensorWriter writer) {}

  @FunctionalInterface
  private interface TensorWriter {
    void write(Le out) throws IOException;
  }

  /**
   * llama.cpp fixes Gemma's layout rather than reading it: Gemma 3's every sixth layer full, the
   * others sliding with RoPE base 10,000; Gemma 2's every other layer sliding from the first;
   * scores scaled by 1/√head_dim, the embedding as the LM head. A model laid out otherwise would
   * load and compute something else (or not load), so it is refused.
   */
  private static void checkGemmaLayout(Path dir, ModelConfig c) {
    if (c.architecture() == ModelConfig.Architecture.GEMMA2) {
      for (int l = 0; l < c.numLayers(); l++) {
        if (c.slides(l) != (l % 2 == 0)) {
          throw new IllegalArgumentException(dir + ": GGUF export writes Gemma 2 with llama.cpp's layout (every other layer sliding,"
              + " from the first), not layer " + l + (c.slides(l) ? " sliding" : " full"));
        }
      }
      if (c.queryPreAttnScalar() != c.headDim()) {
        throw new IllegalArgumentException(dir + ": GGUF export writes Gemma 2 with query_pre_attn_scalar = head_dim (as llama.cpp"
            + " computes 2B and 9B), not " + c.queryPreAttnScalar());
      }
      if (c.attnLogitSoftcap() == 0 || c.finalLogitSoftcap() == 0) {
        throw new IllegalArgumentException(dir + ": GGUF export writes Gemma 2 with both caps (llama.cpp always applies them),"
            + " not attn_logit_softcapping " + c.attnLogitSoftcap() + ", final_logit_softcapping " + c.finalLogitSoftcap());
      }
      return;
    }
    for (int l = 0; l < c.numLayers(); l++) {
      if (c.slides(l) != ((l + 1) % 6 != 0)) {
        throw new IllegalArgumentException(dir + ": GGUF export writes Gemma 3 with llama.cpp's layout (every sixth layer full), not layer " + l
            + (c.slides(l) ? " sliding" : " full"));
      }
    }
    if (c.localRopeTheta() != 10_000 || c.queryPreAttnScalar() != c.headDim() || c.finalLogitSoftcap() != 0 || c.attnLogitSoftcap() != 0) {
      throw new IllegalArgumentException(dir + ": GGUF export writes Gemma 3 with llama.cpp's fixed rope_local_base_freq (10000),"
          + " query_pre_attn_scalar = head_dim and no final_logit_softcapping or attn_logit_softcapping");
    }
  }

  private static List<TensorOut> tensors(ModelConfig c, ModelWeights w) {
    boolean gemma = c.gemma();
    List<TensorOut> t = new ArrayList<>();
    t.add(matrix("token_embd.weight", w.embedding(), null));
    for (int l = 0; l < c.numLayers(); l++) {
      var lw = w.layer(l);
      String p = "blk." + l + ".";
      t.add(vector(p + "attn_norm.weight", lw.inputNorm()));
      if (c.fusedProjections()) { // Phi-3: llama.cpp reads the fused matrices, halves rotated as Hugging Face does
        t.add(rows(p + "attn_qkv.weight", lw.q(), lw.k(), lw.v()));
        t.add(matrix(p + "attn_output.weight", lw.o(), null));
        t.add(vector(p + "ffn_norm.weight", lw.mlpNorm()));
        t.add(rows(p + "ffn_up.weight", lw.gate(), lw.up()));
        t.add(matrix(p + "ffn_down.weight", lw.down(), null));
        continue;
      }
      t.add(matrix(p + "attn_q.weight", lw.q(), gemma ? null : ropeRowOrder(c.numHeads(), c.headDim())));
      t.add(matrix(p + "attn_k.weight", lw.k(), gemma ? null : ropeRowOrder(c.numKvHeads(), c.headDim())));
      t.add(matrix(p + "attn_v.weight", lw.v(), null));
      t.add(matrix(p + "attn_output.weight", lw.o(), null));
      t.add(vector(p + "ffn_norm.weight", lw.mlpNorm()));
      t.add(matrix(p + "ffn_gate.weight", lw.gate(), null));
      t.add(matrix(p + "ffn_up.weight", lw.up(), null));
      t.add(matrix(p + "ffn_down.weight", lw.down(), null));
      if (gemma) { // norms as loaded: the factors 1 + w, as llama.cpp's converter writes them
        if (c.qkNorm()) { // Gemma 3's
          t.add(vector(p + "attn_q_norm.weight", lw.qNorm()));
          t.add(vector(p + "attn_k_norm.weight", lw.kNorm()));
        }
        t.add(vector(p + "post_attention_norm.weight", lw.attentionOutNorm()));
        t.add(vector(p + "post_ffw_norm.weight", lw.mlpOutNorm()));
      }
    }
    t.add(vector("output_norm.weight", w.finalNorm()));
    if (c.ropeScaling().type().equals("longrope")) { // llama.cpp picks one set by its context, as the engine does
      t.add(vector("rope_factors_long.weight", floats(c.ropeScaling().longFactor())));
      t.add(vector("rope_factors_short.weight", floats(c.ropeScaling().shortFactor())));
    }
    if (w.lmHead() != w.embedding()) {
      if (gemma) {
        throw new IllegalArgumentException("GGUF export writes Gemma with its embedding as the LM head (llama.cpp reads no other); this model has lm_head.weight");
      }
      t.add(matrix("output.weight", w.lmHead(), null));
    }
    return t;
  }

  /**
   * llama.cpp's permutation of q/k rows: within each head, row 2j + a of the output is row a·D/2 +
   * j of the input (a ∈ {0, 1}, j < D/2).
   */
  private static int[] ropeRowOrder(int heads, int headDim) {
    int[] order = new int[heads * headDim];
    for (int h = 0; h < heads; h++) {
      for (int j = 0; j < headDim / 2; j++) {
        for (int a = 0; a < 2; a++) {
          order[h * headDim + 2 * j + a] = h * headDim + a * headDim / 2 + j;
        }
      }
    }
    return order;
  }

  private static TensorOut matrix(String name, WeightMatrix m, int[] rowOrder) {
    int type = ggmlType(m.dtype());
    if (m.dtype().quantized()) {
      return new TensorOut(name, new long[] {m.cols(), m.rows()}, type, ggmlBytes(m.dtype(), m.rows(), m.cols()), out -> {
        for (int r = 0; r < m.rows(); r++) {
          int src = rowOrder == null ? r : rowOrder[r];
          out.bytes(m.dtype() == DType.Q8_0 ? q8Blocks(m, src) : q4Blocks(m, src));
        }
      });
    }
    long rowBytes = (long) m.cols() * m.dtype().bytes();
    MemorySegment data = m.data();
    return new TensorOut(name, new long[] {m.cols(), m.rows()}, type, ggmlBytes(m.dtype(), m.rows(), m.cols()), out -> {
      byte[] row = new byte[(int) rowBytes];
      for (int r = 0; r < m.rows(); r++) {
        int src = rowOrder == null ? r : rowOrder[r];
        MemorySegment.copy(data, ValueLayout.JAVA_BYTE, src * rowBytes, row, 0, row.length);
        out.bytes(row);
      }
    });
  }

  /** Row {@code r} of a Q8_0 matrix as ggml's {@code block_q8_0}s: per 32 values, the f16 scale, then the int8s in order. */
  private static byte[] q8Blocks(WeightMatrix m, int r) {
    int groups = m.cols() / DType.QUANT_GROUP;
    byte[] blocks = new byte[groups * (2 + DType.QUANT_GROUP)];
    long rowByte = (long) r * m.cols();
    for (int g = 0, at = 0; g < groups; g++) {
      short scale = m.data().get(ValueLayout.JAVA_SHORT_UNALIGNED, m.scaleByte(r, g));
      blocks[at++] = (byte) scale;
      blocks[at++] = (byte) (scale >> 8);
      for (int c = g * DType.QUANT_GROUP; c < (g + 1) * DType.QUANT_GROUP; c++) {
        blocks[at++] = m.data().get(ValueLayout.JAVA_BYTE, rowByte + WeightMatrix.q8Byte(c));
      }
    }
    return blocks;
  }

  /**
   * Row {@code r} of a Q4_0 matrix as ggml's {@code block_q4_0}s: per 32 values, the f16 scale, then
   * 16 bytes, byte j holding q of value j in its low half and of value 16 + j in its high half (q =
   * the stored q − 8 with its top bit flipped back).
   */
  private static byte[] q4Blocks(WeightMatrix m, int r) {
    int groups = m.cols() / DType.QUANT_GROUP;
    byte[] blocks = new byte[groups * (2 + DType.QUANT_GROUP / 2)];
    long rowByte = (long) r * m.cols() / 2;
    for (int g = 0, at = 0; g < groups; g++) {
      short scale = m.data().get(ValueLayout.JAVA_SHORT_UNALIGNED, m.scaleByte(r, g));
      blocks[at++] = (byte) scale;
      blocks[at++] = (byte) (scale >> 8);
      for (int j = 0; j < DType.QUANT_GROUP / 2; j++) {
        int c = g * DType.QUANT_GROUP + j;
        blocks[at++] = (byte) (q4(m, rowByte, c) | q4(m, rowByte, c + DType.QUANT_GROUP / 2) << 4);
      }
    }
    return blocks;
  }

  /** ggml's q ∈ [0, 15] of column {@code c} of the Q4_0 row at byte {@code rowByte}. */
  private static int q4(WeightMatrix m, long rowByte, int c) {
    int nibble = WeightMatrix.q4Nibble(c);
    int b = m.data().get(ValueLayout.JAVA_BYTE, rowByte + nibble / 2);
    return ((b >> (4 * (nibble & 1))) & 0xf) ^ 8;
  }

  /** Bytes of a rows × cols matrix in ggml's layout (Q8_0: 34-byte blocks of 32; Q4_0: 18-byte blocks of 32). */
  private static long ggmlBytes(DType dtype, long rows, int cols) {
    return switch (dtype) {
      case Q8_0 -> rows * (cols / DType.QUANT_GROUP) * (2 + DType.QUANT_GROUP);
      case Q4_0 -> rows * (cols / DType.QUANT_GROUP) * (2 + DType.QUANT_GROUP / 2);
      default -> rows * cols * dtype.bytes();
    };
  }

  /** ggml's tensor type of a weight dtype. */
  private static int ggmlType(DType dtype) {
    return switch (dtype) {
      case F32 -> 0;
      case F16 -> 1;
      case BF16 -> 30;
      case Q8_0 -> 8;
      case Q4_0 -> 2;
    };
  }

  /** Matrices of one width and element type written as one, their rows one after the other. */
  private static TensorOut rows(String name, WeightMatrix... parts) {
    var first = parts[0];
    long rows = 0;
    for (var m : parts) {
      if (m.cols() != first.cols() || m.dtype() != first.dtype()) {
        throw new IllegalArgumentException(name + ": parts of different widths or types");
      }
      rows += m.rows();
    }
    return new TensorOut(name, new long[] {first.cols(), rows}, ggmlType(first.dtype()), ggmlBytes(first.dtype(), rows, first.cols()), out -> {
      for (var m : parts) {
        matrix(name, m, null).writer().write(out);
      }
    });
  }

  private static float[] floats(double[] v) {
    float[] f = new float[v.length];
    for (int i = 0; i < v.length; i++) {
      f[i] = (float) v[i];
    }
    return f;
  }

  private static TensorOut vector(String name, float[] v) {
    return new TensorOut(name, new long[] {v.length}, 0, 4L * v.length, out -> {
      for (float f : v) {
        out.f32(f);
      }
    });
  }

  private static final class Metadata {
    final java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    final Le out = new Le(bytes);
    long count;

    void u32(String key, long v) throws IOException {
      out.string(key);
      out.u32(T_UINT32);
      out.u32(v);
      count++;
    }

    void f32(String key, float v) throws IOException {
      out.string(key);
      out.u32(T_FLOAT32);
      out.f32(v);
      count++;
    }

    void bool(String key, boolean v) throws IOException {
      out.string(key);
      out.u32(T_BOOL);
      out.bytes(new byte[] {(byte) (v ? 1 : 0)});
      count++;
    }

    void string(String key, String v) throws IOException {
      out.string(key);
      out.u32(T_STRING);
      out.string(v);
      count++;
    }

    void strings(String key, List<String> v) throws IOException {
      out.string(key);
      out.u32(T_ARRAY);
      out.u32(T_STRING);
      out.u64(v.size());
      for (String s : v) {
        out.string(s);
      }
      count++;
    }

    void ints(String key, int[] v) throws IOException {
      out.string(key);
      out.u32(T_ARRAY);
      out.u32(T_INT32);
      out.u64(v.length);
      for (int i : v) {
        out.u32(i);
      }
      count++;
    }
  }

  private static Metadata metadata(Path dir, ModelConfig c, ModelWeights w) throws IOException {
    Metadata m = new Metadata();
    String arch = switch (c.architecture()) {
      case GEMMA3 -> "gemma3";
      case GEMMA2 -> "gemma2";
      case PHI3 -> "phi3";
      default -> "llama";
    };
    m.string("general.architecture", arch);
    m.string("general.name", dir.getFileName().toString());
    m.u32("general.alignment", ALIGNMENT);
    m.u32("general.file_type", switch (w.matrixType()) {
      case F32 -> 0;
      case F16 -> 1;
      case BF16 -> 32;
      case Q8_0 -> 7; // LLAMA_FTYPE_MOSTLY_Q8_0
      case Q4_0 -> 2; // LLAMA_FTYPE_MOSTLY_Q4_0
    });
    m.u32(arch + ".context_length", c.maxPositionEmbeddings());
    m.u32(arch + ".embedding_length", c.hiddenSize());
    m.u32(arch + ".block_count", c.numLayers());
    m.u32(arch + ".feed_forward_length", c.intermediateSize());
    m.u32(arch + ".attention.head_count", c.numHeads());
    m.u32(arch + ".attention.head_count_kv", c.numKvHeads());
    m.u32(arch + ".attention.key_length", c.headDim());
    m.u32(arch + ".attention.value_length", c.headDim());
    m.u32(arch + ".rope.dimension_count", c.rotaryDim());
    m.f32(arch + ".rope.freq_base", (float) c.ropeTheta());
    m.f32(arch + ".attention.layer_norm_rms_epsilon", c.rmsNormEps());
    m.u32(arch + ".vocab_size", c.vocabSize());
    if (c.architecture() == ModelConfig.Architecture.GEMMA2) {
      m.f32(arch + ".attn_logit_softcapping", (float) c.attnLogitSoftcap());
      m.f32(arch + ".final_logit_softcapping", (float) c.finalLogitSoftcap());
    }
    if (c.slidingWindow() > 0) {
      m.u32(arch + ".attention.sliding_window", c.slidingWindow());
    } else if (c.fusedProjections()) { // llama.cpp refuses a Phi-3 without one: a window the length of the context is none
      m.u32(arch + ".attention.sliding_window", c.maxPositionEmbeddings());
    }
    // Phi-3's halves are rotated as Hugging Face does (NEOX in llama.cpp); the others' rows are
    // permuted for llama.cpp's interleaved pairs over the whole head.
    if (c.rotaryDim() != c.headDim() && !c.fusedProjections()) {
      throw new IllegalArgumentException(dir + ": GGUF export writes partial_rotary_factor for Phi3ForCausalLM only");
    }
    if (c.ropeScaling().type().equals("longrope") && c.fusedProjections()) {
      m.u32(arch + ".rope.scaling.original_context_length", c.ropeScaling().originalMaxPositions());
      m.f32(arch + ".rope.scaling.attn_factor", (float) c.ropeScaling().attentionFactor());
    } else if (!c.ropeScaling().type().equals("default")) {
      throw new IllegalArgumentException(dir + ": GGUF export writes rope_scaling only as Phi-3's longrope");
    }
    tokenizer(m, dir, c);
    return m;
  }

  /** The byte-level BPE vocabulary and merges, padded to the model's vocabulary size. */
  private static void tokenizer(Metadata m, Path dir, ModelConfig c) throws IOException {
    JsonNode tok = new ObjectMapper().readTree(dir.resolve("tokenizer.json").toFile());
    JsonNode model = tok.path("model");
    if (!model.path("type").asText().equals("BPE")) {
      throw new IllegalArgumentException(dir + "/tokenizer.json: GGUF export needs a BPE tokenizer");
    }
    String[] tokens = new String[c.vocabSize()];
    int[] types = new int[c.vocabSize()];
    model.path("vocab").fields().forEachRemaining(e -> {
      int id = e.getValue().asInt();
      if (id < tokens.length) {
        tokens[id] = e.getKey();
        types[id] = 1; // normal
      }
    });
    Map<Integer, Boolean> special = new HashMap<>();
    for (JsonNode added : tok.path("added_tokens")) {
      int id = added.path("id").asInt();
      if (id < tokens.length) {
        tokens[id] = added.path("content").asText();
        types[id] = added.path("special").asBoolean() ? 3 : 4; // control : user-defined
        special.put(id, true);
      }
    }
    for (int i = 0; i < tokens.length; i++) {
      if (tokens[i] == null) {
        tokens[i] = "[PAD" + i + "]";
        types[i] = 5; // unused
      }
    }
    List<String> merges = new ArrayList<>();
    for (JsonNode merge : model.path("merges")) {
      merges.add(merge.isArray() ? merge.get(0).asText() + " " + merge.get(1).asText() : merge.asText());
    }
    m.string("tokenizer.ggml.model", "gpt2");
    m.string("tokenizer.ggml.pre", "qwen2");
    m.strings("tokenizer.ggml.tokens", List.of(tokens));
    m.ints("tokenizer.ggml.token_type", types);
    m.strings("tokenizer.ggml.merges", merges);
    int[] eos = c.eosTokenIds();
    if (eos.length > 0) {
      m.u32("tokenizer.ggml.eos_token_id", eos[0]);
    }
    m.bool("tokenizer.ggml.add_bos_token", false);
  }

  /** Little-endian output with GGUF's strings (u64 length, UTF-8) and alignment padding. */
  private static final class Le implements AutoCloseable {
    private final DataOutputStream out;
    private long written;

    Le(OutputStream out) {
      this.out = new DataOutputStream(out);
    }

    void bytes(byte[] b) throws IOException {
      out.write(b);
      written += b.length;
    }

    void u32(long v) throws IOException {
      out.writeInt(Integer.reverseBytes((int) v));
      written += 4;
    }

    void u64(long v) throws IOException {
      out.writeLong(Long.reverseBytes(v));
      written += 8;
    }

    void f32(float v) throws IOException {
      u32(Float.floatToRawIntBits(v));
    }

    void string(String s) throws IOException {
      byte[] b = s.getBytes(StandardCharsets.UTF_8);
      u64(b.length);
      bytes(b);
    }

    void pad() throws IOException {
      while (written % ALIGNMENT != 0) {
        out.write(0);
        written++;
      }
    }

    @Override
    public void close() throws IOException {
      out.close();
    }
  }
}
