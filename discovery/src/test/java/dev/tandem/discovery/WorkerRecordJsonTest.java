package dev.tandem.discovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class WorkerRecordJsonTest {
  @Test
  void aRecordSurvivesTheRoundTrip() {
    WorkerRecord w = DiscoveryConformanceTest.worker("decode-1", 9000);
    assertEquals(w, WorkerRecordJson.decode(WorkerRecordJson.encode(w)));
    WorkerRecord bare = WorkerRecord.atAddress("10.0.0.1:9000");
    assertEquals(bare, WorkerRecordJson.decode(WorkerRecordJson.encode(bare)));
  }

  @Test
  void badValuesNameWhatIsWrong() {
    assertEquals("field 'grpc' is missing", error("{\"id\":\"a\"}"));
    assertEquals("field 'id' must be a string, not NUMBER", error("{\"id\":3,\"grpc\":\"h:1\"}"));
    assertEquals("unknown worker role 'boss'; expected one of agg, prefill, decode", error("{\"id\":\"a\",\"grpc\":\"h:1\",\"role\":\"boss\"}"));
    assertEquals("not a JSON object", error("[1]"));
    assertEquals("worker id 'a/b' must be non-blank and contain no '/'", error("{\"id\":\"a/b\",\"grpc\":\"h:1\"}"));
  }

  @Test
  void unknownFieldsFromANewerWorkerAreIgnored() {
    WorkerRecord w = WorkerRecordJson.decode("{\"id\":\"a\",\"grpc\":\"h:1\",\"gpu\":\"h200\"}".getBytes(StandardCharsets.UTF_8));
    assertEquals("h:1", w.grpcAddress());
  }

  private static String error(String json) {
    return assertThrows(IllegalArgumentException.class, () -> WorkerRecordJson.decode(json.getBytes(StandardCharsets.UTF_8))).getMessage();
  }
}
