package dev.tandem.planner;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.tandem.planner.sim.MooncakeTraces;
import dev.tandem.planner.sim.Trace;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Fuzz targets for the files a user hands the planner: a profile ({@code --profile}) and a
 * Mooncake-format trace ({@code tandem simulate --trace FILE}). Every input is read, or refused
 * with an error that names the file; a profile that is read answers every question SLA mode asks
 * of it with a finite, non-negative figure. Anything else is a finding. Committed inputs run with
 * every test run; {@code .ci/fuzz} fuzzes each target for a bounded time.
 */
class PlannerFilesFuzzTest {
  private static final Path DIR;

  static {
    try {
      DIR = Files.createTempDirectory("tandem-fuzz-planner");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    DIR.toFile().deleteOnExit();
  }

  @FuzzTest(maxDuration = "30s")
  void profileJson(byte[] bytes) throws IOException {
    Path file = DIR.resolve("profile.json");
    Files.write(file, bytes);
    Profile p;
    try {
      p = ProfileJson.read(file, null);
    } catch (ProfileException e) {
      assertTrue(e.getMessage().startsWith(file.toString()), "names the file: " + e.getMessage());
      return;
    }
    for (double isl : new double[] {1, 512, 3000, 1e6}) {
      double s = p.prefillSeconds(isl);
      assertTrue(s >= 0 && Double.isFinite(s), "prefill seconds at " + isl + ": " + s);
    }
    for (double context : new double[] {1, 4096, 1e6}) {
      double itl = p.itl(1, context);
      assertTrue(itl >= 0 && Double.isFinite(itl), "ITL at batch 1, context " + context + ": " + itl);
      double throughput = p.decodeThroughputWithin(context, 0.05);
      assertTrue(throughput >= 0 && Double.isFinite(throughput), "decode throughput at " + context + ": " + throughput);
    }
  }

  @FuzzTest(maxDuration = "30s")
  void mooncakeTrace(byte[] bytes) throws IOException {
    Path file = DIR.resolve("trace.jsonl");
    Files.write(file, bytes);
    Trace t;
    try {
      t = MooncakeTraces.read(file);
    } catch (IOException e) {
      assertTrue(e.getMessage() != null && e.getMessage().startsWith(file.toString()), "names the file: " + e.getMessage());
      return;
    }
    assertTrue(t.durationSeconds() >= 0 && Double.isFinite(t.durationSeconds()), "duration " + t.durationSeconds());
  }
}
