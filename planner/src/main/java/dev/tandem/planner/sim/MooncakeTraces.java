package dev.tandem.planner.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Mooncake's trace format, one JSON object a line: {@code timestamp} (milliseconds from the first
 * request), {@code input_length}, {@code output_length}, {@code hash_ids} (one id per 512-token
 * block; equal ids, equal prefixes).
 */
public final class MooncakeTraces {
  public static final int BLOCK_TOKENS = 512;
  private static final ObjectMapper JSON = new ObjectMapper();

  private MooncakeTraces() {}

  /**
   * Reads {@code file}, sorting by timestamp.
   *
   * @throws IOException naming the file, line and field of anything malformed
   */
  public static Trace read(Path file) throws IOException {
    List<TraceRequest> requests = new ArrayList<>();
    try (BufferedReader in = Files.newBufferedReader(file)) {
      String line;
      int n = 0;
      while ((line = readLine(in, file, n + 1)) != null) {
        n++;
        if (line.isBlank()) {
          continue;
        }
        JsonNode o;
        try {
          o = JSON.readTree(line);
        } catch (IOException e) {
          throw new IOException(file + ":" + n + ": not a JSON object: " + e.getMessage());
        }
        double ts = field(file, n, o, "timestamp");
        int in_ = (int) field(file, n, o, "input_length");
        int out = (int) field(file, n, o, "output_length");
        JsonNode ids = o.get("hash_ids");
        long[] blocks;
        if (ids == null) {
          blocks = new long[0];
        } else if (!ids.isArray()) {
          throw new IOException(file + ":" + n + ": field hash_ids must be an array of integers");
        } else {
          blocks = new long[ids.size()];
          for (int i = 0; i < blocks.length; i++) {
            if (!ids.get(i).canConvertToLong()) {
              throw new IOException(file + ":" + n + ": field hash_ids[" + i + "] must be an integer");
            }
            blocks[i] = ids.get(i).asLong();
          }
        }
        requests.add(new TraceRequest(ts / 1000.0, Math.max(1, in_), Math.max(1, out), blocks));
      }
    }
    requests.sort((a, b) -> Double.compare(a.arrivalSeconds(), b.arrivalSeconds()));
    return new Trace(file.getFileName().toString(), requests, BLOCK_TOKENS);
  }

  private static String readLine(BufferedReader in, Path file, int line) throws IOException {
    try {
      return in.readLine();
    } catch (CharacterCodingException e) {
      // the reader decodes ahead of the line it returns, so the bad bytes are on this line or a later one
      throw new IOException(file + ": not UTF-8 text (at line " + line + " or after)");
    }
  }

  private static double field(Path file, int line, JsonNode o, String name) throws IOException {
    JsonNode v = o.get(name);
    if (v == null || !v.isNumber() || v.asDouble() < 0) {
      throw new IOException(file + ":" + line + ": field " + name + " must be a number >= 0");
    }
    return v.asDouble();
  }

  /** Writes {@code trace} in the format {@link #read} takes. */
  public static void write(Trace trace, Path file) throws IOException {
    try (BufferedWriter out = Files.newBufferedWriter(file)) {
      for (TraceRequest r : trace.requests()) {
        ObjectNode o = JSON.createObjectNode();
        o.put("timestamp", Math.round(r.arrivalSeconds() * 1000));
        o.put("input_length", r.inputTokens());
        o.put("output_length", r.outputTokens());
        ArrayNode ids = o.putArray("hash_ids");
        for (long id : r.blockIds()) {
          ids.add(id);
        }
        out.write(JSON.writeValueAsString(o));
        out.newLine();
      }
    }
  }
}
