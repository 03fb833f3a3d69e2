package dev.tandem.bench;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.model.LoraAdapter;
import dev.tandem.engine.model.ModelConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * What loading a LoRA adapter while serving costs the streams already decoding, against reading
 * it on the engine's own thread (the way an engine that loads adapters between its steps does).
 *
 * <p>One engine decodes {@code streams} greedy sequences without pause on its own thread (each
 * started again when it ends), recording when each step ends. For each rank in {@code ranks} (an
 * adapter on every projection, f32 as the engine keeps it) and each of two ways, alternating their
 * order each round:
 * <ul>
 *   <li><b>beside</b> — Tandem's: another thread calls {@code Engine.loadLoraAdapter}, which reads
 *       the files and publishes the adapter while the engine keeps stepping;
 *   <li><b>between steps</b> — the same call made by the engine thread between two steps, so every
 *       stream waits for the whole read.
 * </ul>
 * For each load: its wall time, and the longest gap between two tokens that overlaps it, beside the
 * median gap over the 1.5 s before it (the streams' own pace). The adapter is unloaded (on the engine
 * thread) before the next load. The bound for reading beside, in the same round: a thread that only
 * computes (no reading, no allocation) for as long as that round's load beside took — what any
 * busy thread costs streams whose engine has as many compute threads as the machine has cores.
 *
 * <pre>LoraLoadWhileServing MODEL_DIR OUT_DIR [threads=all] [rounds=3] [ranks=8,16,64] [streams=1]</pre>
 */
public final class LoraLoadWhileServing {
  private LoraLoadWhileServing() {}

  /** Step end times and commands for the engine thread, shared with the thread that loads. */
  private static final class Stepping implements Runnable {
    final BuiltinEngine engine;
    final int streams;
    final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
    final List<Long> stepEnds = java.util.Collections.synchronizedList(new ArrayList<>());
    volatile boolean running = true;
    private long next;

    Stepping(BuiltinEngine engine, int streams) {
      this.engine = engine;
      this.streams = streams;
    }

    @Override
    public void run() {
      int[] prompt = new int[16];
      Arrays.setAll(prompt, i -> 100 + 7 * i);
      while (running) {
        for (Runnable c; (c = commands.poll()) != null; ) {
          c.run();
        }
        while (engine.load().runningRequests() + engine.load().waitingRequests() < streams) {
          engine.add(new EngineRequest("s" + next++, prompt, SamplingParams.greedy(), new StopConditions(1_000, new int[0], true),
              null, 1_000, null));
        }
        List<RequestOutput> outputs = engine.step();
        if (!outputs.isEmpty()) {
          stepEnds.add(System.nanoTime());
        }
      }
    }

    /** Runs {@code command} on the engine thread between two steps; returns when it has. */
    void between(Runnable command) {
      CompletableFuture<Void> done = new CompletableFuture<>();
      commands.add(() -> {
        try {
          command.run();
          done.complete(null);
        } catch (RuntimeException e) {
          done.completeExceptionally(e);
        }
      });
      done.join();
    }

    /** Waits until a step ends after {@code nanos}. */
    void awaitStepEndingAfter(long nanos) throws InterruptedException {
      while (true) {
        synchronized (stepEnds) {
          if (!stepEnds.isEmpty() && stepEnds.getLast() > nanos) {
            return;
          }
        }
        Thread.sleep(1);
      }
    }

    /** The gaps between consecutive step ends (ms) that overlap [from, to]: a stream waited that long for a token. */
    List<Double> gapsMs(long from, long to) {
      List<Long> ends;
      synchronized (stepEnds) {
        ends = List.copyOf(stepEnds);
      }
      List<Double> gaps = new ArrayList<>();
      for (int i = 1; i < ends.size(); i++) {
        if (ends.get(i) >= from && ends.get(i - 1) <= to) {
          gaps.add((ends.get(i) - ends.get(i - 1)) / 1e6);
        }
      }
      return gaps;
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: LoraLoadWhileServing MODEL_DIR OUT_DIR [threads=all] [rounds=3] [ranks=8,16,64] [streams=1]");
      System.exit(2);
    }
    Path dir = Path.of(args[0]);
    Path out = Path.of(args[1]);
    int threads = args.length > 2 ? Integer.parseInt(args[2]) : Runtime.getRuntime().availableProcessors();
    int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 3;
    int[] ranks = Arrays.stream((args.length > 4 ? args[4] : "8,16,64").split(",")).mapToInt(Integer::parseInt).toArray();
    int streams = args.length > 5 ? Integer.parseInt(args[5]) : 1;
    Files.createDirectories(out);
    ModelConfig config = ModelConfig.read(dir);
    String model = dir.getFileName().toString();
    List<LoraAdapter.Source> sources = new ArrayList<>();
    for (int r : ranks) {
      System.out.printf(Locale.ROOT, "adapter of rank %d on every projection: %.1f MB (f32)%n", r, LoraOverhead.adapterWeights(config, r) * 4 / 1e6);
      sources.add(LoraOverhead.adapter(dir, dir.resolveSibling(model + "-lora"), "r" + r, r, r)); // beside the model, not the results
    }
    int maxRank = Math.max(16, Arrays.stream(ranks).max().orElse(16));
    BuiltinConfig engineConfig = BuiltinConfig.of(dir).withCompute("cpu", threads).withKvCacheBytes(512L << 20)
        .withBatching(Math.max(streams, 1), 512, true).withLora(List.of(), maxRank);
    String[] ways = {"beside", "between steps", "busy thread"};
    double[][][] loadMs = new double[ranks.length][3][rounds];
    double[][][] gapMs = new double[ranks.length][3][rounds];
    double[][][] paceMs = new double[ranks.length][3][rounds];
    try (BuiltinEngine engine = BuiltinEngine.open(engineConfig)) {
      Stepping stepping = new Stepping(engine, streams);
      Thread loop = Thread.ofPlatform().name("engine-loop").start(stepping);
      Thread.sleep(3_000); // warm-up: the JIT, the streams' KV
      for (int round = 0; round < rounds; round++) {
        for (int j = 0; j < ranks.length; j++) {
          for (int k = 0; k < 3; k++) {
            int way = k == 2 ? 2 : (k + round) % 2; // the busy thread last: it runs as long as this round's load beside
            LoraAdapter.Source source = sources.get(j);
            Thread.sleep(2_000); // longer than a load: the window before it holds no other
            long start = System.nanoTime();
            if (way == 0) {
              engine.loadLoraAdapter(source.name(), source.dir());
            } else if (way == 1) {
              stepping.between(() -> engine.loadLoraAdapter(source.name(), source.dir()));
            } else {
              busy(start + (long) (loadMs[j][0][round] * 1e6));
            }
            long end = System.nanoTime();
            stepping.awaitStepEndingAfter(end); // the gap that holds the load's end closes
            loadMs[j][way][round] = (end - start) / 1e6;
            gapMs[j][way][round] = stepping.gapsMs(start, end).stream().mapToDouble(Double::doubleValue).max().orElse(0);
            paceMs[j][way][round] = RoutingMatrix.median(stepping.gapsMs(start - 1_500_000_000L, start - 1));
            if (way != 2) {
              stepping.between(() -> engine.unloadLoraAdapter(source.name()));
            }
            System.out.printf(Locale.ROOT, "round %d, rank %d, %s: load %.0f ms, longest gap between tokens %.1f ms (before: median %.1f ms)%n",
                round + 1, ranks[j], ways[way], loadMs[j][way][round], gapMs[j][way][round], paceMs[j][way][round]);
          }
        }
      }
      stepping.running = false;
      loop.join();
    }
    System.out.printf(Locale.ROOT, "%n%s, %d threads, %d stream(s) decoding, %d rounds (medians)%n", model, threads, streams, rounds);
    System.out.println("| adapter | MB (f32) | load, beside (ms) | longest gap, beside (ms) | load, between steps (ms) | longest gap, between steps (ms) | longest gap, a busy thread as long (ms) | median gap before (ms) |");
    System.out.println("|---|---|---|---|---|---|---|---|");
    List<String> x = new ArrayList<>();
    List<Double> beside = new ArrayList<>();
    List<Double> between = new ArrayList<>();
    List<Double> before = new ArrayList<>();
    List<Double> busy = new ArrayList<>();
    for (int j = 0; j < ranks.length; j++) {
      double pace = BatchOneDecode.median(concat(paceMs[j][0], paceMs[j][1]));
      System.out.printf(Locale.ROOT, "| rank %d | %.1f | %.0f | %.1f | %.0f | %.1f | %.1f | %.1f |%n", ranks[j],
          LoraOverhead.adapterWeights(config, ranks[j]) * 4 / 1e6, BatchOneDecode.median(loadMs[j][0]), BatchOneDecode.median(gapMs[j][0]),
          BatchOneDecode.median(loadMs[j][1]), BatchOneDecode.median(gapMs[j][1]), BatchOneDecode.median(gapMs[j][2]), pace);
      x.add("rank " + ranks[j]);
      beside.add(BatchOneDecode.median(gapMs[j][0]));
      between.add(BatchOneDecode.median(gapMs[j][1]));
      before.add(pace);
      busy.add(BatchOneDecode.median(gapMs[j][2]));
    }
    CategoryChart chart = new CategoryChartBuilder().width(900).height(500)
        .title("Loading a LoRA adapter while " + streams + " stream(s) decode on " + model + ": longest gap between tokens")
        .xAxisTitle("adapter").yAxisTitle("ms").build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
    chart.getStyler().setYAxisMin(0.0);
    chart.addSeries("no load (median gap before)", x, before);
    chart.addSeries("read beside the engine (Tandem)", x, beside);
    chart.addSeries("read between engine steps", x, between);
    chart.addSeries("a busy thread as long (bound)", x, busy);
    BitmapEncoder.saveBitmap(chart, out.resolve("lora-load-gaps.png").toString(), BitmapEncoder.BitmapFormat.PNG);
    System.out.println("chart: " + out.resolve("lora-load-gaps.png"));
  }

  /** Computes on this thread until {@code until} (System.nanoTime), reading and allocating nothing. */
  private static void busy(long until) {
    double x = 1;
    while (System.nanoTime() < until) {
      x = Math.sqrt(x + 1);
    }
    if (x < 0) {
      System.out.println(x); // keeps the loop
    }
  }

  private static double[] concat(double[] a, double[] b) {
    double[] c = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, c, a.length, b.length);
    return c;
  }
}
