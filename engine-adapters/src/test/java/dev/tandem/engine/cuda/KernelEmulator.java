package dev.tandem.engine.cuda;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * {@code tandem.cu}'s kernels compiled for the CPU (g++ with {@code src/test/cuda/emulator.h},
 * which gives CUDA's built-ins: a fiber per CUDA thread, barriers for {@code __syncthreads} and
 * warp shuffles) and called through the FFM API with host memory standing in for device memory.
 * The same source and launch shapes as on a GPU, so tests here catch indexing, reduction and
 * rounding mistakes before a GPU sees the kernels. Compiled once per test JVM.
 */
final class KernelEmulator {
  private static final Path SOURCES = Path.of("src/test/cuda");
  private static final Path KERNELS = Path.of("src/main/cuda");
  private static KernelEmulator instance;
  private static String unavailable;

  private final SymbolLookup library;
  private final Linker linker = Linker.nativeLinker();
  private final Map<String, MethodHandle> handles = new ConcurrentHashMap<>(); // by kernel and argument layouts

  private KernelEmulator(SymbolLookup library) {
    this.library = library;
  }

  /** The emulator, or null with {@link #unavailableReason()} saying what is missing (g++, CUDA's headers). */
  static synchronized KernelEmulator get() {
    if (instance == null && unavailable == null) {
      try {
        instance = new KernelEmulator(SymbolLookup.libraryLookup(compile(), Arena.global()));
      } catch (IOException | InterruptedException | IllegalStateException e) {
        unavailable = e.getMessage();
      }
    }
    return instance;
  }

  static synchronized String unavailableReason() {
    return unavailable;
  }

  private static Path compile() throws IOException, InterruptedException {
    if (!Files.exists(SOURCES.resolve("emulated.cpp"))) {
      throw new IllegalStateException("the emulator's sources are not at " + SOURCES.toAbsolutePath() + " (tests run from engine-adapters)");
    }
    Path include = cudaInclude();
    if (include == null) {
      throw new IllegalStateException("CUDA's headers (cuda_fp16.h) not found: the kernels' emulation needs the CUDA toolkit's include folder");
    }
    Path dir = Files.createTempDirectory("tandem-kernel-emulator");
    Path out = dir.resolve("libtandem-emulated.so");
    dir.toFile().deleteOnExit(); // after the library (deleted in reverse order); a loaded library may go while mapped
    out.toFile().deleteOnExit();
    List<String> command = List.of("g++", "-std=c++20", "-O1", "-pthread", "-shared", "-fPIC", "-w",
        "-I" + include, "-I" + SOURCES.toAbsolutePath(), "-I" + KERNELS.toAbsolutePath(), "-x", "c++",
        SOURCES.resolve("emulated.cpp").toAbsolutePath().toString(), "-o", out.toString());
    Process p;
    try {
      p = new ProcessBuilder(command).redirectErrorStream(true).start();
    } catch (IOException e) {
      throw new IllegalStateException("g++ not found (apt-get install g++): the kernels' emulation compiles tandem.cu with it");
    }
    p.getOutputStream().close();
    String log = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(180, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new AssertionError("tandem.cu does not compile for the emulator:\n" + log);
    }
    return out;
  }

  private static Path cudaInclude() {
    for (String dir : new String[] {System.getenv("CUDA_HOME"), "/usr/local/cuda", "/usr/local/cuda-13.0", "/usr/local/cuda-12"}) {
      if (dir != null && Files.exists(Path.of(dir, "include", "cuda_fp16.h"))) {
        return Path.of(dir, "include");
      }
    }
    return null;
  }

  /**
   * Runs kernel {@code name} over {@code shape}; arguments are pointers (MemorySegment), ints,
   * longs (C's long long) or floats, in the kernel's order.
   */
  void launch(String name, LaunchShapes.Shape shape, Object... args) {
    List<MemoryLayout> layouts = new ArrayList<>(List.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
    Object[] values = new Object[args.length + 3];
    values[0] = shape.gridX();
    values[1] = shape.gridY();
    values[2] = shape.block();
    for (int i = 0; i < args.length; i++) {
      layouts.add(switch (args[i]) {
        case MemorySegment s -> ValueLayout.ADDRESS;
        case Integer v -> ValueLayout.JAVA_INT;
        case Long v -> ValueLayout.JAVA_LONG;
        case Float v -> ValueLayout.JAVA_FLOAT;
        default -> throw new IllegalArgumentException("no kernel argument of type " + args[i].getClass());
      });
      values[i + 3] = args[i];
    }
    FunctionDescriptor descriptor = FunctionDescriptor.ofVoid(layouts.toArray(MemoryLayout[]::new));
    MethodHandle handle = handles.computeIfAbsent(name + descriptor, k -> linker.downcallHandle(
        library.find("emu_" + name).orElseThrow(() -> new AssertionError("tandem.cu has no kernel " + name + " in the emulator's exports")),
        descriptor));
    try {
      handle.invokeWithArguments(values);
    } catch (Throwable e) {
      throw new AssertionError("emulated launch of " + name + " failed", e);
    }
  }
}
