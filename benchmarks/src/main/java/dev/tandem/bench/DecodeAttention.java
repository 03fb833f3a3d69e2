package dev.tandem.bench;

import dev.tandem.engine.compute.AttentionBatch;
import dev.tandem.engine.compute.ScalarBackend;
import dev.tandem.engine.compute.VectorBackend;
import dev.tandem.engine.model.DType;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * The CPU backend's attention for decode rows alone, against the memory bandwidth limit probed in
 * the same run: a paged bf16 KV cache of {@code layers} layers (llama-100m's attention shape by
 * default: 8 query heads, 4 KV heads of 64), {@code rows} sequences at each context, their blocks
 * in order (a fresh pool) and shuffled (a pool after churn, where blocks of one sequence lie
 * anywhere). Reports milliseconds per decode step, the KV read per second, and that as a share of
 * the probe; checks the result against the scalar backend first. Writes a PNG of the share.
 *
 * <pre>DecodeAttention OUT_DIR [contexts=512,2048,8192,32768] [rows=1] [threads] [heads=8] [kvHeads=4] [headDim=64] [layers=8]</pre>
 */
public final class DecodeAttention {
  private static final int BLOCK = 16;
  private static final DType KV = DType.BF16;

  private DecodeAttention() {}

  public static void main(String[] args) throws Exception {
    Path out = Path.of(args.length > 0 ? args[0] : "/tmp/tandem-decode-attention");
    int[] contexts = java.util.Arrays.stream((args.length > 1 ? args[1] : "512,2048,8192,32768").split(","))
        .mapToInt(Integer::parseInt).toArray();
    int rows = args.length > 2 ? Integer.parseInt(args[2]) : 1;
    int threads = args.length > 3 ? Integer.parseInt(args[3]) : Runtime.getRuntime().availableProcessors();
    int heads = args.length > 4 ? Integer.parseInt(args[4]) : 8;
    int kvHeads = args.length > 5 ? Integer.parseInt(args[5]) : 4;
    int headDim = args.length > 6 ? Integer.parseInt(args[6]) : 64;
    int layers = args.length > 7 ? Integer.parseInt(args[7]) : 8;
    Files.createDirectories(out);
    List<String> lines = new ArrayList<>();
    lines.add(String.format(Locale.ROOT, "decode attention, %d row(s), %d threads, %d layers of %d query heads / %d KV heads of %d, KV in bf16, blocks of %d",
        rows, threads, layers, heads, kvHeads, headDim, BLOCK));
    double probe = MachineLimits.readBandwidth(threads, 1L << 30, 5);
    lines.add(String.format(Locale.ROOT, "memory read bandwidth probe: %.1f GB/s", probe / 1e9));
    lines.add(String.format(Locale.ROOT, "%8s %10s %12s %12s %10s", "context", "blocks", "ms a step", "KV GB/s", "of probe"));
    lines.forEach(System.out::println);
    List<Double> x = new ArrayList<>();
    List<Double> inOrder = new ArrayList<>();
    List<Double> shuffled = new ArrayList<>();
    try (VectorBackend backend = new VectorBackend(threads)) {
      for (int context : contexts) {
        for (boolean shuffle : new boolean[] {false, true}) {
          double seconds = step(backend, context, rows, heads, kvHeads, headDim, layers, shuffle);
          long bytes = 2L * layers * rows * context * kvHeads * headDim * KV.bytes();
          double rate = bytes / seconds;
          String line = String.format(Locale.ROOT, "%8d %10s %12.2f %12.1f %9.0f%%", context, shuffle ? "shuffled" : "in order",
              seconds * 1e3, rate / 1e9, 100 * rate / probe);
          System.out.println(line);
          lines.add(line);
          (shuffle ? shuffled : inOrder).add(100 * rate / probe);
        }
        x.add((double) context);
      }
    }
    Files.write(out.resolve("decode-attention.txt"), lines);
    chart(out.resolve("decode-attention.png"), x, inOrder, shuffled, rows);
    System.out.println("wrote " + out.resolve("decode-attention.txt") + " and " + out.resolve("decode-attention.png"));
  }

  /** Seconds for one decode step's attention over every layer (the best of 5 timed rounds, after 2). */
  private static double step(VectorBackend backend, int context, int rows, int heads, int kvHeads, int headDim, int layers, boolean shuffle) {
    int perRow = (context + BLOCK - 1) / BLOCK;
    int blocks = perRow * rows;
    long entries = (long) blocks * BLOCK * kvHeads * headDim;
    Random random = new Random(context);
    try (Arena arena = Arena.ofShared()) {
      MemorySegment[] keys = new MemorySegment[layers];
      MemorySegment[] values = new MemorySegment[layers];
      for (int l = 0; l < layers; l++) {
        keys[l] = arena.allocate(entries * KV.bytes(), 4096); // as PagedKvCache allocates
        values[l] = arena.allocate(entries * KV.bytes(), 4096);
        for (long i = 0; i < entries; i++) {
          keys[l].setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, KV.narrow((float) random.nextGaussian()));
          values[l].setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, KV.narrow((float) random.nextGaussian()));
        }
      }
      List<Integer> ids = new ArrayList<>();
      for (int i = 0; i < blocks; i++) {
        ids.add(i);
      }
      if (shuffle) {
        Collections.shuffle(ids, random);
      }
      int[][] tables = new int[rows][perRow];
      int[] positions = new int[rows];
      for (int t = 0; t < rows; t++) {
        for (int k = 0; k < perRow; k++) {
          tables[t][k] = ids.get(t * perRow + k);
        }
        positions[t] = context - 1;
      }
      float[] q = new float[rows * heads * headDim];
      for (int i = 0; i < q.length; i++) {
        q[i] = (float) random.nextGaussian();
      }
      float[] out = new float[q.length];
      float[] expected = new float[q.length];
      new ScalarBackend().attention(new AttentionBatch(q, expected, rows, positions, tables, keys[0], values[0], BLOCK, heads, kvHeads, headDim, KV, 0));
      backend.attention(new AttentionBatch(q, out, rows, positions, tables, keys[0], values[0], BLOCK, heads, kvHeads, headDim, KV, 0));
      for (int i = 0; i < q.length; i++) {
        if (Math.abs(out[i] - expected[i]) > 1e-4 * (1 + Math.abs(expected[i]))) {
          throw new IllegalStateException("attention disagrees with the scalar backend at " + i + ": " + out[i] + " vs " + expected[i]);
        }
      }
      double best = Double.MAX_VALUE;
      int repeats = Math.max(2, (int) (2e8 / Math.max(1L, 2L * layers * entries * KV.bytes()))); // ~0.2 GB read a round
      for (int round = 0; round < 7; round++) {
        long start = System.nanoTime();
        for (int r = 0; r < repeats; r++) {
          for (int l = 0; l < layers; l++) {
            backend.attention(new AttentionBatch(q, out, rows, positions, tables, keys[l], values[l], BLOCK, heads, kvHeads, headDim, KV, 0));
          }
        }
        double seconds = (System.nanoTime() - start) / 1e9 / repeats;
        if (round >= 2) {
          best = Math.min(best, seconds);
        }
      }
      return best;
    }
  }

  private static void chart(Path png, List<Double> contexts, List<Double> inOrder, List<Double> shuffled, int rows) throws IOException {
    XYChart chart = new XYChartBuilder().width(900).height(500)
        .title("Decode attention (" + rows + " row" + (rows == 1 ? "" : "s") + "): KV read as a share of the bandwidth probe")
        .xAxisTitle("context (tokens)").yAxisTitle("% of the probe").build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
    chart.getStyler().setXAxisLogarithmic(true);
    chart.getStyler().setYAxisMin(0.0);
    chart.addSeries("blocks in order", contexts, inOrder);
    chart.addSeries("blocks shuffled", contexts, shuffled);
    BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
  }
}
