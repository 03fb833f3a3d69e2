package dev.tandem.bench;

import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.compute.ComputeBackends;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.ModelConfig;
import dev.tandem.engine.model.ModelWeights;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * Batch-1 decode of the built-in engine and llama.cpp on the same model, each against the memory
 * bandwidth limit probed right before and right after its own run. Rounds alternate the order
 * (Tandem first in odd rounds, llama.cpp first in even ones), each engine in a fresh JVM, so that
 * drift on a shared machine lands on both engines instead of favouring one. Reports every round,
 * the median and the spread, the targets (median ≥ 70% of the limit and ≥ llama.cpp; no round
 * below 60% or 0.9×), and where a Tandem token's time goes (its kernels timed in a second pass:
 * matmul bytes/s by kind and layer, attention, norms, everything outside the kernels).
 *
 * <pre>BatchOneDecode MODEL_DIR MODEL.gguf COMPARE_CLASSPATH OUT_DIR [rounds=3] [threads] [steps=64] [context=128]</pre>
 *
 * <p>Decode follows a prompt of {@code context} tokens in both engines; the bytes a token reads (and
 * so the limit) count the KV of that context beside the weights (in a sliding layer, of its window).
 *
 * <p>{@code -Dquantization=q8_0} runs Tandem with {@code --quantization q8_0} (then MODEL.gguf should
 * hold the same Q8_0 weights: {@code tandem model export-gguf --quantization q8_0}).
 *
 * <p>{@code --tandem MODEL_DIR threads steps context} is the Tandem child: it prints {@code rate},
 * {@code bytes} and {@code breakdown} lines.
 */
public final class BatchOneDecode {
  private static final Pattern RATE = Pattern.compile("(?m)^rate ([0-9.]+)");
  private static final Pattern BYTES = Pattern.compile("(?m)^bytes ([0-9]+)");
  private static final Pattern LLAMA_RATE = Pattern.compile("(?m)^decode batch +1: +([0-9.]+) tokens/s");
  private static final long PROBE_BYTES = 1L << 30;
  private static final String QUANTIZATION = System.getProperty("quantization", "none");

  private BatchOneDecode() {}

  /** One engine's run: its rate and the bandwidth probed before and after it. */
  record Run(double tokensPerSecond, double bandwidthBefore, double bandwidthAfter, long bytesPerToken) {
    double limit() {
      return (bandwidthBefore + bandwidthAfter) / 2 / bytesPerToken;
    }

    double shareOfLimit() {
      return tokensPerSecond / limit();
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("--tandem")) {
      tandemChild(Path.of(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]), Integer.parseInt(args[4]));
      return;
    }
    if (args.length < 4) {
      System.err.println("usage: BatchOneDecode MODEL_DIR MODEL.gguf COMPARE_CLASSPATH OUT_DIR [rounds=3] [threads] [steps=64] [context=128]");
      System.exit(2);
    }
    Path model = Path.of(args[0]);
    Path gguf = Path.of(args[1]);
    String compareClasspath = args[2];
    Path out = Path.of(args[3]);
    int rounds = args.length > 4 ? Integer.parseInt(args[4]) : 3;
    int threads = args.length > 5 ? Integer.parseInt(args[5]) : Runtime.getRuntime().availableProcessors();
    int steps = args.length > 6 ? Integer.parseInt(args[6]) : 64;
    int context = args.length > 7 ? Integer.parseInt(args[7]) : 128;
    Files.createDirectories(out);
    for (Path p : List.of(model.resolve("config.json"), gguf)) {
      if (!Files.exists(p)) {
        System.err.println("BatchOneDecode: " + p + " does not exist (benchmarks/scripts/decode_batch1.sh creates it)");
        System.exit(2);
      }
    }

    List<Run> tandem = new ArrayList<>();
    List<Run> llama = new ArrayList<>();
    List<String> breakdowns = new ArrayList<>();
    List<String> summary = new ArrayList<>();
    summary.add(String.format(Locale.ROOT, "batch-1 decode after a %d-token prompt, %s%s, %d threads, %d timed tokens a run, %d rounds (order alternates)",
        context, model.getFileName(), QUANTIZATION.equals("none") ? "" : " quantized to " + QUANTIZATION, threads, steps, rounds));
    long bytesPerToken = 0;
    for (int round = 1; round <= rounds; round++) {
      boolean tandemFirst = round % 2 == 1;
      for (int k = 0; k < 2; k++) {
        boolean isTandem = (k == 0) == tandemFirst;
        String name = isTandem ? "tandem" : "llamacpp";
        System.out.printf(Locale.ROOT, "[round %d/%d] probing bandwidth, then %s...%n", round, rounds, name);
        double before = MachineLimits.readBandwidth(threads, PROBE_BYTES, 5);
        String output = isTandem
            ? child(out.resolve("round-" + round + "-tandem.txt"),
                javaCommand(System.getProperty("java.class.path"), BatchOneDecode.class.getName(),
                    "--tandem", model.toString(), String.valueOf(threads), String.valueOf(steps), String.valueOf(context)))
            : child(out.resolve("round-" + round + "-llamacpp.txt"),
                javaCommand(compareClasspath, "dev.tandem.comparison.LlamaCppThroughput",
                    gguf.toString(), String.valueOf(threads), "1", "none", String.valueOf(steps), String.valueOf(context)));
        double after = MachineLimits.readBandwidth(threads, PROBE_BYTES, 5);
        if (isTandem) {
          bytesPerToken = Long.parseLong(find(BYTES, output, name));
          tandem.add(new Run(Double.parseDouble(find(RATE, output, name)), before, after, bytesPerToken));
          breakdowns.add(output.lines().filter(l -> l.startsWith("breakdown ")).map(l -> l.substring(10))
              .reduce("", (a, b) -> a + "  " + b + "\n"));
        } else {
          // The GGUF holds the same bf16 matrices; bytes per token are the built-in engine's count
          // (known after its first run: Tandem runs first in round 1).
          llama.add(new Run(Double.parseDouble(find(LLAMA_RATE, output, name)), before, after, Math.max(1, bytesPerToken)));
        }
      }
      Run t = tandem.get(round - 1);
      Run l = llama.get(round - 1);
      String line = String.format(Locale.ROOT,
          "round %d (%s first): Tandem %.1f tok/s = %.0f%% of %.1f (probe %.1f/%.1f GB/s) | llama.cpp %.1f tok/s = %.0f%% of %.1f (probe %.1f/%.1f GB/s) | Tandem / llama.cpp %.2f×",
          round, tandemFirst ? "Tandem" : "llama.cpp",
          t.tokensPerSecond(), 100 * t.shareOfLimit(), t.limit(), t.bandwidthBefore() / 1e9, t.bandwidthAfter() / 1e9,
          l.tokensPerSecond(), 100 * l.shareOfLimit(), l.limit(), l.bandwidthBefore() / 1e9, l.bandwidthAfter() / 1e9,
          t.tokensPerSecond() / l.tokensPerSecond());
      System.out.println(line);
      summary.add(line);
    }

    double[] tandemShare = tandem.stream().mapToDouble(Run::shareOfLimit).toArray();
    double[] llamaShare = llama.stream().mapToDouble(Run::shareOfLimit).toArray();
    double[] ratio = new double[rounds];
    for (int i = 0; i < rounds; i++) {
      ratio[i] = tandem.get(i).tokensPerSecond() / llama.get(i).tokensPerSecond();
    }
    summary.add(String.format(Locale.ROOT, "Tandem, share of the limit: median %.0f%%, min %.0f%%, max %.0f%% (tok/s median %.1f, %.1f to %.1f)",
        100 * median(tandemShare), 100 * min(tandemShare), 100 * max(tandemShare),
        median(rates(tandem)), min(rates(tandem)), max(rates(tandem))));
    summary.add(String.format(Locale.ROOT, "llama.cpp, share of the limit: median %.0f%%, min %.0f%%, max %.0f%% (tok/s median %.1f, %.1f to %.1f)",
        100 * median(llamaShare), 100 * min(llamaShare), 100 * max(llamaShare),
        median(rates(llama)), min(rates(llama)), max(rates(llama))));
    summary.add(String.format(Locale.ROOT, "Tandem / llama.cpp per round: median %.2f×, min %.2f×, max %.2f×",
        median(ratio), min(ratio), max(ratio)));
    boolean met = median(tandemShare) >= 0.70 && median(ratio) >= 1.0 && min(tandemShare) >= 0.60 && min(ratio) >= 0.9;
    summary.add("target (median ≥ 70% of the limit and ≥ 1.0× llama.cpp; no round below 60% or 0.9×): " + (met ? "met" : "not met"));
    int medianRound = medianIndex(tandemShare);
    summary.add("where a Tandem token's time goes (round " + (medianRound + 1) + ", the median round; kernels timed in a second pass):");
    summary.add(breakdowns.get(medianRound).stripTrailing());
    System.out.println();
    summary.forEach(System.out::println);
    Files.write(out.resolve("summary.txt"), summary);
    chart(out.resolve("batch1-decode.png"), model.getFileName().toString(), tandemShare, llamaShare);
    System.out.println("wrote " + out.resolve("summary.txt") + " and " + out.resolve("batch1-decode.png"));
  }

  /** The Tandem side: the plain engine's rate, then the same decode with every kernel timed. */
  private static void tandemChild(Path dir, int threads, int steps, int context) throws Exception {
    DType quantization = DType.fromQuantizationName(QUANTIZATION);
    BuiltinConfig config = BuiltinConfig.of(dir).withCompute("cpu", threads).withKvCacheBytes(1L << 30)
        .withBatching(1, 4096, true).withQuantization(quantization);
    double rate;
    try (BuiltinEngine engine = BuiltinEngine.open(config)) {
      // The weights, and the KV attention reads at the middle of the timed tokens (a sliding layer's
      // no further back than its window).
      ModelConfig shape = engine.modelConfig();
      long kvPerLayer = engine.info().kvBytesPerToken() / shape.numLayers();
      long kv = 0;
      for (int l = 0; l < shape.numLayers(); l++) {
        int window = shape.windowOf(l);
        kv += kvPerLayer * (window > 0 ? Math.min(window, context + steps / 2) : context + steps / 2);
      }
      System.out.println("bytes " + (engine.bytesReadPerToken() + kv));
      rate = EngineThroughput.decode(engine, 1, context, steps);
      System.out.printf(Locale.ROOT, "rate %.3f%n", rate);
    }
    TimedBackend timed = new TimedBackend(ComputeBackends.create("cpu", threads));
    ModelConfig model = ModelConfig.read(dir);
    try (BuiltinEngine engine = new BuiltinEngine(ModelWeights.load(dir, model, quantization), timed, config)) {
      double timedRate = EngineThroughput.decode(engine, 1, context, steps, timed::start, timed::stop);
      long stepNanos = (long) (steps / timedRate * 1e9);
      System.out.printf(Locale.ROOT, "breakdown timed pass: %.1f tok/s (plain pass %.1f), %.2f ms a token%n",
          timedRate, rate, stepNanos / 1e6 / steps);
      for (String line : timed.report(stepNanos, steps)) {
        System.out.println("breakdown " + line);
      }
    }
  }

  private static List<String> javaCommand(String classpath, String mainClass, String... args) {
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", "-Xmx8g",
        "-Dquantization=" + QUANTIZATION, "-cp", classpath, mainClass));
    cmd.addAll(Arrays.asList(args));
    return cmd;
  }

  /** Runs a child JVM, its stdout to {@code log} (stderr discarded); returns its stdout. */
  private static String child(Path log, List<String> command) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(command).redirectOutput(log.toFile())
        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    int rc = p.waitFor();
    String output = Files.readString(log);
    if (rc != 0) {
      throw new IllegalStateException("the run logged in " + log + " exited with " + rc);
    }
    return output;
  }

  private static String find(Pattern pattern, String output, String who) {
    Matcher m = pattern.matcher(output);
    if (!m.find()) {
      throw new IllegalStateException(who + " printed no " + pattern.pattern() + "; output:\n" + output);
    }
    return m.group(1);
  }

  private static double[] rates(List<Run> runs) {
    return runs.stream().mapToDouble(Run::tokensPerSecond).toArray();
  }

  static double median(double[] values) {
    double[] s = values.clone();
    Arrays.sort(s);
    int n = s.length;
    return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  }

  /** The round whose value is the median (the lower middle one for an even count). */
  private static int medianIndex(double[] values) {
    Integer[] order = new Integer[values.length];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, (a, b) -> Double.compare(values[a], values[b]));
    return order[(values.length - 1) / 2];
  }

  private static double min(double[] v) {
    return Arrays.stream(v).min().orElse(0);
  }

  private static double max(double[] v) {
    return Arrays.stream(v).max().orElse(0);
  }

  private static void chart(Path png, String model, double[] tandem, double[] llama) throws IOException {
    CategoryChart chart = new CategoryChartBuilder().width(900).height(500)
        .title("Batch-1 decode on " + model + ": share of the bandwidth limit probed beside each run")
        .xAxisTitle("round").yAxisTitle("% of the limit").build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
    chart.getStyler().setYAxisMin(0.0);
    chart.getStyler().setYAxisMax(100.0);
    List<String> x = new ArrayList<>();
    for (int i = 1; i <= tandem.length; i++) {
      x.add("round " + i);
    }
    x.add("median");
    chart.addSeries("Tandem", x, percent(tandem));
    chart.addSeries("llama.cpp", x, percent(llama));
    List<Double> target = new ArrayList<>();
    for (int i = 0; i < x.size(); i++) {
      target.add(70.0);
    }
    chart.addSeries("target 70%", x, target);
    BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
  }

  private static List<Double> percent(double[] shares) {
    List<Double> y = new ArrayList<>();
    for (double s : shares) {
      y.add(100 * s);
    }
    y.add(100 * median(shares));
    return y;
  }
}
