package dev.tandem.discovery;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.common.WorkerRole;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * A {@link WorkerRecord} as the JSON value of its etcd key: {@code {"id", "role", "grpc",
 * "transfer", "model", "block_size", "kv_blocks", "host"}}. Unknown fields are ignored (a newer
 * worker may add some); a missing id or address, or a bad role, is an error naming the field.
 */
final class WorkerRecordJson {
  private static final ObjectMapper json = new ObjectMapper();

  private WorkerRecordJson() {}

  static byte[] encode(WorkerRecord r) {
    ObjectNode n = json.createObjectNode();
    n.put("id", r.workerId());
    if (r.role() != null) {
      n.put("role", r.role().cliName());
    }
    n.put("grpc", r.grpcAddress());
    putIfPresent(n, "transfer", r.transferAddress());
    putIfPresent(n, "model", r.model());
    n.put("block_size", r.blockSize());
    n.put("kv_blocks", r.kvBlocks());
    putIfPresent(n, "host", r.host());
    return n.toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * @throws IllegalArgumentException naming what is wrong with the value
   */
  static WorkerRecord decode(byte[] value) {
    JsonNode n;
    try {
      n = json.readTree(value);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new IllegalArgumentException("not JSON: " + e.getOriginalMessage());
    } catch (IOException e) {
      throw new IllegalArgumentException("unreadable: " + e.getMessage());
    }
    if (n == null || !n.isObject()) {
      throw new IllegalArgumentException("not a JSON object");
    }
    String role = text(n, "role", false);
    return new WorkerRecord(
          text(n, "id", true),
          role == null ? null : WorkerRole.parse(role),
          text(n, "grpc", true),
          text(n, "transfer", false),
          text(n, "model", false),
          n.path("block_size").asInt(0),
          n.path("kv_blocks").asInt(0),
          text(n, "host", false));
  }

  private static String text(JsonNode n, String field, boolean required) {
    JsonNode v = n.get(field);
    if (v == null || v.isNull()) {
      if (required) {
        throw new IllegalArgumentException("field '" + field + "' is missing");
      }
      return null;
    }
    if (!v.isTextual()) {
      throw new IllegalArgumentException("field '" + field + "' must be a string, not " + v.getNodeType());
    }
    return v.asText();
  }

  private static void putIfPresent(ObjectNode n, String field, String value) {
    if (value != null) {
      n.put(field, value);
    }
  }
}
