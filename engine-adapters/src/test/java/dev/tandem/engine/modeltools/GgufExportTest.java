package dev.tandem.engine.modeltools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.engine.compute.WeightMatrix;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelWeights;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link GgufExport} with quantized weights, read back by a GGUF reader written here from the
 * format's definition (header, metadata, tensor infos, aligned data) and ggml's block layouts —
 * {@code block_q4_0}: an f16 d, then 16 bytes, byte j holding q of value j (low half) and of value
 * 16 + j (high half), the value (q − 8)·d; {@code block_q8_0}: an f16 d, then 32 int8 — so the file
 * holds exactly the weights the engine runs, without llama.cpp (which the benchmarks cross-check).
 */
class GgufExportTest {

  @Test
  void q4_0BlocksHoldTheEnginesWeights(@TempDir Path dir) throws Exception {
    Path model = dir.resolve("m");
    ModelGenerator.write(ModelGenerator.config("LlamaForCausalLM", "llama", 128, 256, 2, 4, 2, 32, 64, false), DType.BF16, 5, model, 0);
    Path gguf = dir.resolve("m.gguf");
    GgufExport.write(model, gguf, DType.Q4_0);
    Gguf file = Gguf.read(gguf);
    assertEquals(2L, file.metadata.get("general.file_type"), "LLAMA_FTYPE_MOSTLY_Q4_0");
    try (ModelWeights w = ModelWeights.load(model, ModelConfig.read(model), DType.Q4_0)) {
      for (int l = 0; l < 2; l++) {
        assertSame(file, "blk." + l + ".ffn_down.weight", 2, w.layer(l).down());
        assertSame(file, "blk." + l + ".attn_v.weight", 2, w.layer(l).v());
        assertSame(file, "blk." + l + ".ffn_gate.weight", 2, w.layer(l).gate());
      }
      assertSame(file, "token_embd.weight", 8, w.embedding());
      assertSame(file, "output.weight", 8, w.lmHead());
    }
  }

  /** Tensor {@code name} is of ggml type {@code type}, shaped as {@code m}, and dequantizes to {@code m}'s values exactly. */
  private static void assertSame(Gguf file, String name, int type, WeightMatrix m) {
    Gguf.Tensor t = file.tensors.get(name);
    assertEquals(type, t.type, name);
    assertEquals(m.cols(), t.dims[0], name);
    assertEquals(m.rows(), t.dims[1], name);
    int blockBytes = type == 2 ? 18 : 34;
    int blocksPerRow = m.cols() / 32;
    boolean nonZero = false;
    for (int r = 0; r < m.rows(); r++) {
      for (int b = 0; b < blocksPerRow; b++) {
        int at = t.offset + (r * blocksPerRow + b) * blockBytes;
        float d = Float.float16ToFloat(file.data.getShort(at));
        for (int j = 0; j < 32; j++) {
          float v = type == 2
              ? ((j < 16 ? file.data.get(at + 2 + j) & 0xf : (file.data.get(at + 2 + j - 16) >> 4) & 0xf) - 8) * d
              : file.data.get(at + 2 + j) * d;
          assertEquals(m.get(r, 32 * b + j), v, 0f, name + " (" + r + ", " + (32 * b + j) + ")");
          nonZero |= v != 0;
        }
      }
    }
    assertTrue(nonZero, name + " holds weights");
  }

  /** A GGUF v3 file: its metadata (numbers and strings), its tensors' types, shapes and where their bytes start. */
  private record Gguf(Map<String, Object> metadata, Map<String, Tensor> tensors, ByteBuffer data) {
    record Tensor(int type, long[] dims, int offset) {}

    static Gguf read(Path path) throws Exception {
      ByteBuffer in = ByteBuffer.wrap(Files.readAllBytes(path)).order(ByteOrder.LITTLE_ENDIAN);
      byte[] magic = new byte[4];
      in.get(magic);
      assertEquals("GGUF", new String(magic, StandardCharsets.US_ASCII));
      assertEquals(3, in.getInt());
      long tensorCount = in.getLong();
      long kvCount = in.getLong();
      Map<String, Object> metadata = new HashMap<>();
      for (long i = 0; i < kvCount; i++) {
        String key = string(in);
        metadata.put(key, value(in, in.getInt()));
      }
      Map<String, long[]> dims = new HashMap<>();
      Map<String, int[]> typeAndOffset = new HashMap<>();
      for (long i = 0; i < tensorCount; i++) {
        String name = string(in);
        long[] d = new long[in.getInt()];
        for (int k = 0; k < d.length; k++) {
          d[k] = in.getLong();
        }
        dims.put(name, d);
        typeAndOffset.put(name, new int[] {in.getInt(), (int) in.getLong()});
      }
      long alignment = ((Number) metadata.getOrDefault("general.alignment", 32L)).longValue();
      int dataStart = (int) ((in.position() + alignment - 1) / alignment * alignment);
      Map<String, Tensor> tensors = new HashMap<>();
      dims.forEach((name, d) -> tensors.put(name, new Tensor(typeAndOffset.get(name)[0], d, dataStart + typeAndOffset.get(name)[1])));
      return new Gguf(metadata, tensors, in);
    }

    private static String string(ByteBuffer in) {
      byte[] b = new byte[(int) in.getLong()];
      in.get(b);
      return new String(b, StandardCharsets.UTF_8);
    }

    /** A metadata value of GGUF type {@code type}: integers as Long, floats as Double, strings, arrays as Object[]. */
    private static Object value(ByteBuffer in, int type) {
      return switch (type) {
        case 0, 1 -> (long) in.get();
        case 2, 3 -> (long) in.getShort();
        case 4 -> Integer.toUnsignedLong(in.getInt());
        case 5 -> (long) in.getInt();
        case 6 -> (double) in.getFloat();
        case 7 -> in.get() != 0;
        case 8 -> string(in);
        case 9 -> {
          int elementType = in.getInt();
          Object[] items = new Object[(int) in.getLong()];
          for (int i = 0; i < items.length; i++) {
            items[i] = value(in, elementType);
          }
          yield items;
        }
        case 10, 11 -> in.getLong();
        case 12 -> in.getDouble();
        default -> throw new IllegalArgumentException("GGUF value type " + type);
      };
    }
  }
}
