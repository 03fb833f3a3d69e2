package dev.tandem.engine.modeltools;

import dev.tandem.engine.model.DType;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes a {@code .safetensors} file tensor by tensor, streaming values so that files larger than
 * memory can be written: declare every tensor first, then {@link #write} fills them in order.
 */
public final class SafetensorsWriter {
  /** Produces a tensor's values in row-major order. */
  @FunctionalInterface
  public interface Values {
    float next();
  }

  private record Entry(String name, DType dtype, long[] shape, Values values) {
    long count() {
      long n = 1;
      for (long d : shape) {
        n *= d;
      }
      return n;
    }
  }

  private final List<Entry> entries = new ArrayList<>();

  public SafetensorsWriter add(String name, DType dtype, long[] shape, Values values) {
    entries.add(new Entry(name, dtype, shape.clone(), values));
    return this;
  }

  public void write(Path file) throws IOException {
    ObjectMapper json = new ObjectMapper();
    ObjectNode header = json.createObjectNode();
    header.putObject("__metadata__").put("format", "pt");
    long offset = 0;
    for (Entry e : entries) {
      ObjectNode t = header.putObject(e.name());
      t.put("dtype", e.dtype().name());
      var shape = t.putArray("shape");
      for (long d : e.shape()) {
        shape.add(d);
      }
      long bytes = e.count() * e.dtype().bytes();
      t.putArray("data_offsets").add(offset).add(offset + bytes);
      offset += bytes;
    }
    byte[] headerBytes = json.writeValueAsString(header).getBytes(StandardCharsets.UTF_8);
    int padded = (headerBytes.length + 7) / 8 * 8; // data starts 8-byte aligned
    try (FileChannel out =
        FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
      ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20).order(ByteOrder.LITTLE_ENDIAN);
      buf.putLong(padded);
      buf.put(headerBytes);
      for (int i = headerBytes.length; i < padded; i++) {
        buf.put((byte) ' ');
      }
      for (Entry e : entries) {
        for (long i = 0, n = e.count(); i < n; i++) {
          if (buf.remaining() < 4) {
            drain(buf, out);
          }
          float v = e.values().next();
          switch (e.dtype()) {
            case F32 -> buf.putFloat(v);
            case F16, BF16 -> buf.putShort(e.dtype().narrow(v));
          }
        }
      }
      drain(buf, out);
    }
  }

  private static void drain(ByteBuffer buf, FileChannel out) throws IOException {
    buf.flip();
    while (buf.hasRemaining()) {
      out.write(buf);
    }
    buf.clear();
  }
}
