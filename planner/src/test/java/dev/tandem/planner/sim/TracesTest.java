package dev.tandem.planner.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TracesTest {
  @TempDir Path dir;

  @Test
  void mooncakeFormatRoundTrips() throws IOException {
    Trace t = SyntheticTraces.generate(SyntheticTraces.Spec.of("mooncake", 0).withDuration(120));
    Path file = dir.resolve("trace.jsonl");
    MooncakeTraces.write(t, file);
    Trace back = MooncakeTraces.read(file);
    assertEquals(t.requests().size(), back.requests().size());
    for (int i = 0; i < t.requests().size(); i++) {
      TraceRequest a = t.requests().get(i), b = back.requests().get(i);
      assertEquals(a.arrivalSeconds(), b.arrivalSeconds(), 0.0005); // milliseconds in the file
      assertEquals(a.inputTokens(), b.inputTokens());
      assertArrayEquals(a.blockIds(), b.blockIds());
    }
  }

  @Test
  void mooncakeStatisticsMatchThePublishedOnes() {
    Trace t = SyntheticTraces.generate(SyntheticTraces.Spec.of("mooncake", 0));
    double rate = t.requests().size() / 3600.0;
    double isl = t.requests().stream().mapToInt(TraceRequest::inputTokens).average().orElseThrow();
    double osl = t.requests().stream().mapToInt(TraceRequest::outputTokens).average().orElseThrow();
    assertEquals(6.56, rate, 0.2);
    assertEquals(7590, isl, 7590 * 0.05);
    assertEquals(182, osl, 182 * 0.05);
    double reuse = SimulationSuite.reuse(t);
    assertTrue(reuse > 0.2 && reuse < 0.8, "prefix reuse " + reuse);
  }

  @Test
  void burstyHasItsSpikesAndItsSilence() {
    Trace t = SyntheticTraces.generate(SyntheticTraces.Spec.of("bursty", 10));
    int[] perMinute = t.arrivalsPer(60);
    assertEquals(0, perMinute[50], "no traffic from 78% to 92% of the hour");
    assertTrue(perMinute[10] > 4 * 600 * 0.8, "a ×5 spike at 15%: " + perMinute[10]);
    assertEquals(600, perMinute[5], 120);
  }

  @Test
  void aMalformedLineNamesFileLineAndField() throws IOException {
    Path file = dir.resolve("bad.jsonl");
    Files.writeString(file, "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [1]}\n"
        + "{\"timestamp\": 5, \"output_length\": 5}\n");
    IOException e = assertThrows(IOException.class, () -> MooncakeTraces.read(file));
    assertTrue(e.getMessage().contains("bad.jsonl:2") && e.getMessage().contains("input_length"), e.getMessage());
  }

  /** Bytes that are not UTF-8 are refused naming the file and line (found by fuzzing: the message was "Input length = 1"). */
  @Test
  void bytesThatAreNotUtf8NameFileAndLine() throws IOException {
    Path file = dir.resolve("latin1.jsonl");
    byte[] good = "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5}\n".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    byte[] bad = {'{', '"', 't', (byte) 0xe9, '"', '}', '\n'};
    byte[] both = java.util.Arrays.copyOf(good, good.length + bad.length);
    System.arraycopy(bad, 0, both, good.length, bad.length);
    Files.write(file, both);
    IOException e = assertThrows(IOException.class, () -> MooncakeTraces.read(file));
    assertTrue(e.getMessage().startsWith(file.toString()) && e.getMessage().contains("not UTF-8"), e.getMessage());
  }
}
