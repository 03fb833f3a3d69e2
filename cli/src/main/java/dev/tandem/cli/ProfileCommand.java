package dev.tandem.cli;

import dev.tandem.bench.BenchConfig;
import dev.tandem.bench.BenchReport;
import dev.tandem.bench.LoadGenerator;
import dev.tandem.common.WorkerDescription;
import dev.tandem.frontend.http.FrontendServer;
import dev.tandem.planner.Profile;
import dev.tandem.planner.ProfileJson;
import dev.tandem.router.grpc.Router;
import java.awt.BasicStroke;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.markers.SeriesMarkers;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(
    name = "profile",
    mixinStandardHelpOptions = true,
    description = {
      "Measures one worker's latencies for the planner's SLA mode and writes them as a profile.",
      "The worker (the builtin engine or the mocker) is started here behind a frontend and measured as it serves: time to first token at each prompt length (one request alone), and inter-token latency at each (batch, context). Writes the profile JSON `tandem planner --profile` and `tandem simulate --profile` read, and a PNG of the curves beside it."
    })
final class ProfileCommand implements Callable<Integer> {
  @Mixin EngineOptions engine;

  @Option(names = "--isl", split = ",", defaultValue = "128,256,512,1024,2048,4096", description = "Prompt lengths of the prefill sweep (default ${DEFAULT-VALUE}).")
  List<Integer> isl;

  @Option(names = "--batch", split = ",", defaultValue = "1,2,4,8,16,32", description = "Batches of the decode sweep (default ${DEFAULT-VALUE}).")
  List<Integer> batch;

  @Option(names = "--context", split = ",", defaultValue = "256,1024,4096", description = "Prompt lengths of the decode sweep (default ${DEFAULT-VALUE}).")
  List<Integer> context;

  @Option(names = "--decode-tokens", defaultValue = "32", description = "Tokens each decode-sweep request generates (default ${DEFAULT-VALUE}).")
  int decodeTokens;

  @Option(names = "--repeats", defaultValue = "3", description = "Requests per prefill point; decode points send 2 × batch (default ${DEFAULT-VALUE}).")
  int repeats;

  @Option(names = "--out", defaultValue = "profile.json", description = "Profile JSON to write (default ${DEFAULT-VALUE}); the chart goes beside it as .png.")
  Path out;

  @Override
  public Integer call() throws Exception {
    for (var sweep : java.util.Map.of("--isl", isl, "--batch", batch, "--context", context).entrySet()) {
      for (int v : sweep.getValue()) {
        Flags.atLeast(sweep.getKey(), v, 1);
      }
    }
    Flags.atLeast("--decode-tokens", decodeTokens, 1);
    Flags.atLeast("--repeats", repeats, 1);
    writable(out);
    EngineOptions.WorkerEngines engines = engine.resolve(false);
    LocalDeployment.Spec spec = new LocalDeployment.Spec(1, engines.factory(), engines.modelFiles(), engines.blockSize(),
        Router.Config.of("round-robin"), new FrontendServer.Config("127.0.0.1", 0, 32 << 20));
    try (LocalDeployment d = LocalDeployment.start(spec)) {
      URI url = URI.create("http://127.0.0.1:" + d.port());
      String model = d.model().name();
      WorkerDescription worker = d.router().pool().all().getFirst().description();
      long kvTokens = (long) worker.totalKvBlocks() * worker.blockSize();
      int maxSeqs = worker.maxNumSeqs() > 0 ? worker.maxNumSeqs() : 64;
      int contextWindow = d.model().maxContextLength() > 0 ? d.model().maxContextLength() : Integer.MAX_VALUE;
      List<int[]> decodePoints = new ArrayList<>();
      for (int c : context) {
        for (int b : batch) {
          if (b <= maxSeqs && (long) b * (c + decodeTokens) <= kvTokens && c + decodeTokens <= contextWindow) {
            decodePoints.add(new int[] {b, c});
          }
        }
      }
      List<Integer> prefillPoints = isl.stream().filter(n -> n + 1 <= contextWindow).toList();
      ProgressBar bar = new ProgressBar("profiling " + model);
      int total = prefillPoints.size() + decodePoints.size();
      int done = 0;
      System.err.printf(Locale.ROOT, "profiling %s (%s engine, %,d KV tokens, %d sequences at most): %d prefill and %d decode points%n",
          model, engine.engine, kvTokens, maxSeqs, prefillPoints.size(), decodePoints.size());
      // A warm-up: the first requests pay for JIT and the worker's own warm-up.
      run(url, model, 1, 4, 64, 4);
      List<Profile.PrefillPoint> prefill = new ArrayList<>();
      for (int n : prefillPoints) {
        bar.update(done++, total, "prefill " + n + " tokens");
        BenchReport r = run(url, model, 1, repeats, n, 1);
        prefill.add(new Profile.PrefillPoint(n, r.ttftMs().p50() / 1000));
      }
      List<Profile.DecodePoint> decode = new ArrayList<>();
      for (int[] p : decodePoints) {
        bar.update(done++, total, "decode batch " + p[0] + " at " + p[1] + " tokens");
        BenchReport r = run(url, model, p[0], 2 * p[0], p[1], decodeTokens);
        decode.add(new Profile.DecodePoint(p[0], p[1], r.itlMs().p50() / 1000));
      }
      bar.update(total, total, "done");
      bar.done();
      Profile profile = new Profile(model, engine.engine, kvTokens, maxSeqs, prefill, decode);
      ProfileJson.write(profile, out);
      Path png = Path.of(out.toString().replaceFirst("\\.json$", "") + ".png");
      chart(profile, png);
      System.out.println("wrote " + out + " and " + png);
      for (Profile.PrefillPoint p : prefill) {
        System.out.printf(Locale.ROOT, "  prefill %6.0f tokens: TTFT %8.1f ms (%,.0f tokens/s)%n", p.isl(), 1000 * p.seconds(), p.isl() / p.seconds());
      }
      for (Profile.DecodePoint p : decode) {
        System.out.printf(Locale.ROOT, "  decode batch %4.0f at %6.0f tokens: ITL %7.2f ms (%,.0f tokens/s)%n", p.batch(), p.context(),
            1000 * p.itlSeconds(), p.batch() / p.itlSeconds());
      }
    }
    return 0;
  }

  private static BenchReport run(URI url, String model, int concurrency, int requests, int input, int output) throws Exception {
    BenchConfig c = BenchConfig.builder(url, model).concurrency(concurrency).numRequests(requests).tokens(input, output)
        .timeout(Duration.ofMinutes(10)).build();
    BenchReport r = new LoadGenerator(c).run();
    if (r.failures() > 0) {
      throw new IllegalStateException("profiling request failed (" + r.failures() + " of " + r.requests() + "): " + r.sampleErrors());
    }
    return r;
  }

  private static void chart(Profile p, Path png) throws IOException {
    XYChart prefill = new XYChartBuilder().width(900).height(320).title("Prefill: time to first token, one request alone")
        .xAxisTitle("prompt tokens").yAxisTitle("TTFT (ms)").build();
    prefill.addSeries("TTFT", p.prefill().stream().mapToDouble(Profile.PrefillPoint::isl).toArray(),
        p.prefill().stream().mapToDouble(x -> 1000 * x.seconds()).toArray());
    XYChart decode = new XYChartBuilder().width(900).height(320).title("Decode: inter-token latency by batch and context")
        .xAxisTitle("sequences decoding").yAxisTitle("ITL (ms)").build();
    p.decode().stream().mapToDouble(Profile.DecodePoint::context).distinct().sorted().forEach(c -> {
      List<Profile.DecodePoint> pts = p.decode().stream().filter(x -> x.context() == c).toList();
      decode.addSeries((int) c + " tokens", pts.stream().mapToDouble(Profile.DecodePoint::batch).toArray(),
          pts.stream().mapToDouble(x -> 1000 * x.itlSeconds()).toArray()).setMarker(SeriesMarkers.CIRCLE);
    });
    for (XYChart c : List.of(prefill, decode)) {
      c.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
    }
    prefill.getSeriesMap().values().forEach(s -> s.setLineStyle(new BasicStroke(2f)));
    BitmapEncoder.saveBitmap(List.of(prefill, decode), 2, 1, png.toString().replaceFirst("\\.png$", ""), BitmapEncoder.BitmapFormat.PNG);
  }

  /** Checks before profiling (minutes) that the profile can be written where asked: its folder is made if missing. */
  static void writable(Path out) {
    Path folder = out.toAbsolutePath().getParent();
    try {
      Files.createDirectories(folder);
    } catch (IOException e) {
      throw new IllegalArgumentException("--out " + out + ": cannot make its folder " + folder + " (" + e + ")");
    }
    if (!Files.isWritable(folder) || Files.isDirectory(out)) {
      throw new IllegalArgumentException("--out " + out + ": cannot write a file there");
    }
  }
}
