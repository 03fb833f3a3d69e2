package dev.tandem.engine.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.tandem.engine.model.DType;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The committed PTX is what {@code src/main/cuda/tandem.cu} compiles to, and holds every kernel
 * the host code launches.
 */
@org.junit.jupiter.api.Tag("nvcc") // recompiles the kernels (~9 s): left out of the fast tier
class PtxFreshnessTest {
  private static final Path SCRIPT = Path.of("src/main/cuda/build-ptx.sh");

  @Test
  void committedPtxMatchesTheSource(@TempDir Path out) throws Exception {
    Path nvcc = nvcc();
    assumeTrue(nvcc != null, "nvcc not found (CUDA toolkit not installed): the PTX's freshness is not checked here");
    // Another nvcc writes other PTX from the same source: compare only with the compiler that wrote it.
    String wrote = compilerLine(new String(committed("tandem-sm90.ptx"), StandardCharsets.US_ASCII));
    Process version = new ProcessBuilder(nvcc.toString(), "--version").redirectErrorStream(true).start();
    String here = compilerLine(new String(version.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
    version.waitFor(30, TimeUnit.SECONDS);
    assumeTrue(wrote.equals(here), "the committed PTX was written by '" + wrote + "', this nvcc is '" + here + "'");
    Process p = new ProcessBuilder("bash", SCRIPT.toString(), out.toString())
        .redirectErrorStream(true)
        .start();
    p.getOutputStream().close();
    String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assumeTrue(p.waitFor(120, TimeUnit.SECONDS), "nvcc did not finish in 120 s");
    assertEquals(0, p.exitValue(), "build-ptx.sh failed:\n" + log);
    for (String ptx : new String[] {"tandem-sm90.ptx", "tandem-sm80.ptx"}) {
      assertArrayEquals(
          Files.readAllBytes(out.resolve(ptx)), committed(ptx),
          ptx + " is stale: run engine-adapters/src/main/cuda/build-ptx.sh and commit the result");
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"tandem-sm90.ptx", "tandem-sm80.ptx"})
  void ptxHoldsEveryKernelTheHostLaunches(String ptx) throws IOException {
    Set<String> entries = new TreeSet<>();
    Matcher m = Pattern.compile("\\.entry\\s+(\\w+)\\(").matcher(new String(committed(ptx), StandardCharsets.US_ASCII));
    while (m.find()) {
      entries.add(m.group(1));
    }
    Set<String> launched = new TreeSet<>(Set.of("rms_norm", "add_rms_norm", "rope", "silu_mul", "add", "copy_blocks", "gather_rows", "gemm_tc_bf16", "attention_tiled_tc_bf16", "attention_combine"));
    for (DType dtype : List.of(DType.F32, DType.F16, DType.BF16)) { // Q8_0 weights have no GPU kernels
      for (String base : new String[] {"matvec", "matvecs", "gemm", "attention", "attention_tiled", "embed", "kv_write"}) {
        launched.add(LaunchShapes.kernel(base, dtype));
      }
    }
    assertEquals(launched, entries);
  }

  /** "Cuda compilation tools, release 13.0, V13.0.88" out of nvcc's version text or a PTX header. */
  private static String compilerLine(String text) {
    Matcher m = Pattern.compile("Cuda compilation tools, release [0-9.]+, V[0-9.]+").matcher(text);
    return m.find() ? m.group() : "unknown";
  }

  private static byte[] committed(String name) throws IOException {
    try (InputStream in = CudaDevice.class.getResourceAsStream(name)) {
      return in.readAllBytes();
    }
  }

  private static Path nvcc() {
    for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
      Path candidate = Path.of(dir, "nvcc");
      if (Files.isExecutable(candidate)) {
        return candidate;
      }
    }
    Path fallback = Path.of("/usr/local/bin/nvcc");
    return Files.isExecutable(fallback) ? fallback : null;
  }
}
