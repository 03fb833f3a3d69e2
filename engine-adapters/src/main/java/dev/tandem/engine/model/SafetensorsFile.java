package dev.tandem.engine.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A {@code .safetensors} file, memory-mapped read-only with the FFM API (files over 2 GB work): an
 * 8-byte little-endian header length, a JSON header mapping tensor names to dtype, shape and byte
 * range, then the data. Every tensor is checked against the file before any is used: a truncated
 * or corrupt file fails here, naming the file and the tensor.
 *
 * <p>Ownership: the tensors' segments live until {@link #close()}, which unmaps the file.
 * Thread-safe once opened (read-only).
 */
public final class SafetensorsFile implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long MAX_HEADER = 100L << 20;

  private final Path path;
  private final Arena arena;
  private final Map<String, Tensor> tensors;

  private SafetensorsFile(Path path, Arena arena, Map<String, Tensor> tensors) {
    this.path = path;
    this.arena = arena;
    this.tensors = Collections.unmodifiableMap(tensors);
  }

  /**
   * Maps and validates a file.
   *
   * @throws ModelFormatException naming the file and what is wrong with it
   */
  public static SafetensorsFile open(Path path) {
    if (!Files.isRegularFile(path)) {
      throw new ModelFormatException(path + ": file does not exist");
    }
    Arena arena = Arena.ofShared();
    try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
      long size = channel.size();
      if (size < 8) {
        throw new ModelFormatException(path + ": truncated (" + size + " bytes, no header length)");
      }
      MemorySegment all = channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
      long headerLength = all.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0);
      if (headerLength <= 0 || headerLength > MAX_HEADER || 8 + headerLength > size) {
        throw new ModelFormatException(
            path + ": corrupt header length " + headerLength + " for a file of " + size + " bytes");
      }
      byte[] headerBytes = all.asSlice(8, headerLength).toArray(ValueLayout.JAVA_BYTE);
      JsonNode header;
      try {
        header = JSON.readTree(new String(headerBytes, StandardCharsets.UTF_8));
      } catch (IOException e) {
        throw new ModelFormatException(path + ": header is not valid JSON: " + e.getMessage());
      }
      if (header == null || !header.isObject()) {
        throw new ModelFormatException(path + ": header is not a JSON object");
      }
      MemorySegment data = all.asSlice(8 + headerLength);
      Map<String, Tensor> tensors = new LinkedHashMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = header.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        if (!e.getKey().equals("__metadata__")) {
          tensors.put(e.getKey(), tensor(path, e.getKey(), e.getValue(), data));
        }
      }
      return new SafetensorsFile(path, arena, tensors);
    } catch (IOException e) {
      arena.close();
      throw new UncheckedIOException("cannot read " + path, e);
    } catch (RuntimeException e) {
      arena.close();
      throw e;
    }
  }

  private static Tensor tensor(Path path, String name, JsonNode node, MemorySegment data) {
    String where = path + ": tensor '" + name + "'";
    String dtypeName = node.path("dtype").asText(null);
    if (dtypeName == null) {
      throw new ModelFormatException(where + " has no dtype");
    }
    DType dtype = DType.fromSafetensors(dtypeName);
    if (dtype == null) {
      throw new ModelFormatException(where + " has dtype " + dtypeName + "; supported: F32, F16, BF16");
    }
    JsonNode shapeNode = node.path("shape");
    JsonNode offsets = node.path("data_offsets");
    if (!shapeNode.isArray() || !offsets.isArray() || offsets.size() != 2) {
      throw new ModelFormatException(where + " needs a shape and two data_offsets");
    }
    long[] shape = new long[shapeNode.size()];
    long count = 1;
    for (int i = 0; i < shape.length; i++) {
      JsonNode dim = shapeNode.get(i);
      shape[i] = dim.isNumber() && !dim.canConvertToLong() ? -1 : dim.asLong(-1);
      if (shape[i] < 0) {
        throw new ModelFormatException(where + " has a dimension that is negative, not a number or past 2^63: " + dim);
      }
      if (shape[i] > 0 && count > Long.MAX_VALUE / dtype.bytes() / shape[i]) {
        throw new ModelFormatException(where + " has shape " + shapeNode + ": more bytes than any file holds");
      }
      count *= shape[i];
    }
    long begin = offsets.get(0).asLong(-1);
    long end = offsets.get(1).asLong(-1);
    if (begin < 0 || end < begin || end > data.byteSize()) {
      throw new ModelFormatException(
          where + " spans bytes [" + begin + ", " + end + ") but the file holds " + data.byteSize()
              + " data bytes (truncated?)");
    }
    if (end - begin != count * dtype.bytes()) {
      throw new ModelFormatException(
          where + " has " + (end - begin) + " bytes; shape " + java.util.Arrays.toString(shape)
              + " in " + dtypeName + " needs " + count * dtype.bytes());
    }
    return new Tensor(name, dtype, shape, data.asSlice(begin, end - begin), path.getFileName().toString());
  }

  public Path path() {
    return path;
  }

  /** Tensors by name, in header order. */
  public Map<String, Tensor> tensors() {
    return tensors;
  }

  @Override
  public void close() {
    arena.close();
  }
}
