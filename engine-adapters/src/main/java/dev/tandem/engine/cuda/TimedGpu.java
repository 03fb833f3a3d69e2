package dev.tandem.engine.cuda;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A {@link Gpu} that times every kernel launch with a pair of events around it, for a breakdown of
 * where a step's device time goes (kernel by kernel; the matrix-vector kernels also as weight
 * bytes read per second). Everything else passes through. Not for graphs: a launch recorded into
 * a graph is not timed. Threading: as {@link Gpu}.
 */
public final class TimedGpu implements Gpu {
  private record Timed(String kernel, long weightBytes, Event start, Event end) {}

  /** One kernel's total over the launches since the last {@link #report}. */
  public record KernelTime(String kernel, int launches, double millis, long weightBytes) {
    /** Weight bytes read per second (matrix-vector kernels), or 0. */
    public double bytesPerSecond() {
      return millis > 0 ? weightBytes / (millis / 1e3) : 0;
    }
  }

  private final Gpu gpu;
  private final List<Timed> launches = new ArrayList<>();
  private boolean capturing;

  public TimedGpu(Gpu gpu) {
    this.gpu = gpu;
  }

  @Override
  public void launch(String name, LaunchShapes.Shape shape, Object... args) {
    if (capturing) {
      gpu.launch(name, shape, args);
      return;
    }
    Event start = gpu.record();
    gpu.launch(name, shape, args);
    launches.add(new Timed(name, weightBytes(name, args), start, gpu.record()));
  }

  /**
   * For {@code matvec_*} (x, tokens, w, rows, cols, out) and {@code matvecs_*} (x, tokens, then
   * three (w, rows), cols, ...): the weight bytes it streams.
   */
  private static long weightBytes(String name, Object[] args) {
    int element = name.endsWith("f32") ? 4 : 2;
    if (name.startsWith("matvec_")) {
      return (long) (Integer) args[3] * (Integer) args[4] * element;
    }
    if (name.startsWith("matvecs_")) {
      return ((long) (Integer) args[3] + (Integer) args[5] + (Integer) args[7]) * (Integer) args[8] * element;
    }
    return 0;
  }

  /** Per kernel, slowest first, since the last report (waits for the work); then starts over. */
  public List<KernelTime> report() {
    Map<String, double[]> totals = new LinkedHashMap<>(); // launches, millis, bytes
    for (Timed t : launches) {
      double[] total = totals.computeIfAbsent(t.kernel(), k -> new double[3]);
      total[0]++;
      total[1] += t.end().millisSince(t.start());
      total[2] += t.weightBytes();
      t.start().close();
      t.end().close();
    }
    launches.clear();
    List<KernelTime> out = new ArrayList<>();
    totals.forEach((k, v) -> out.add(new KernelTime(k, (int) v[0], v[1], (long) v[2])));
    out.sort((a, b) -> Double.compare(b.millis(), a.millis()));
    return out;
  }

  /** The report as lines: kernel, launches, ms, share, GB/s where known. */
  public static List<String> lines(List<KernelTime> times) {
    double all = times.stream().mapToDouble(KernelTime::millis).sum();
    List<String> lines = new ArrayList<>();
    for (KernelTime t : times) {
      lines.add(String.format(Locale.ROOT, "%-22s %6d launches %9.3f ms %5.1f%%%s", t.kernel(), t.launches(), t.millis(),
          100 * t.millis() / Math.max(1e-12, all),
          t.weightBytes() > 0 ? String.format(Locale.ROOT, "  %7.1f GB/s", t.bytesPerSecond() / 1e9) : ""));
    }
    return lines;
  }

  @Override
  public void beginCapture() {
    capturing = true;
    gpu.beginCapture();
  }

  @Override
  public Graph endCapture() {
    capturing = false;
    return gpu.endCapture();
  }

  @Override
  public Event record() {
    return gpu.record();
  }

  @Override
  public String id() {
    return gpu.id();
  }

  @Override
  public void makeCurrent() {
    gpu.makeCurrent();
  }

  @Override
  public long allocate(long bytes) {
    return gpu.allocate(bytes);
  }

  @Override
  public void free(long address) {
    gpu.free(address);
  }

  @Override
  public void copyToDevice(long to, MemorySegment host) {
    gpu.copyToDevice(to, host);
  }

  @Override
  public void copyToHost(MemorySegment host, long from) {
    gpu.copyToHost(host, from);
  }

  @Override
  public void zero(long at, long bytes) {
    gpu.zero(at, bytes);
  }

  @Override
  public void synchronize() {
    gpu.synchronize();
  }

  @Override
  public long mapHost(MemorySegment host) {
    return gpu.mapHost(host);
  }

  @Override
  public void unmapHost(MemorySegment host) {
    gpu.unmapHost(host);
  }

  @Override
  public MemorySegment allocatePinned(long bytes) {
    return gpu.allocatePinned(bytes);
  }

  @Override
  public void freePinned(MemorySegment pinned) {
    gpu.freePinned(pinned);
  }

  @Override
  public void close() {
    report().clear();
    gpu.close();
  }
}
