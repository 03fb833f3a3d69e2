package dev.tandem.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.ToDoubleFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * Turns a routing-matrix run ({@code benchmarks/scripts/routing_matrix.sh}) into a Markdown table
 * and a PNG chart: for every workload row and router configuration, the cached-token share (and
 * the most a cache could have served), TTFT mean / p50 / p90 / p99, ITL p99, throughput, and how
 * evenly requests spread over the workers; the chart shows each configuration's mean TTFT as a
 * ratio to round-robin's in the same row (lower is better), and a second one each configuration's
 * cached tokens as a share of the most a cache could have served.
 *
 * <p>Run: {@code java -cp ... dev.tandem.bench.RoutingMatrix OUT_DIR ROW,ROW,... CONFIG,CONFIG,...};
 * reads {@code OUT_DIR/ROW/CONFIG.rK.json} (repeat K) or {@code OUT_DIR/ROW/CONFIG.json} ({@code
 * tandem bench --json}), writes {@code OUT_DIR/matrix.md} and {@code OUT_DIR/matrix.png}. With
 * several repeats every figure is the median of the cell's runs, and the ratio to round-robin is
 * taken within each repeat (the runs closest in time) before the median; its range is shown.
 */
public final class RoutingMatrix {
  private static final ObjectMapper JSON = new ObjectMapper();

  private RoutingMatrix() {}

  public static void main(String[] args) throws IOException {
    if (args.length != 3) {
      System.err.println("usage: RoutingMatrix OUT_DIR ROW,ROW,... CONFIG,CONFIG,...");
      System.exit(2);
    }
    Path out = Path.of(args[0]);
    List<String> rows = List.of(args[1].split(","));
    List<String> configs = List.of(args[2].split(","));
    StringBuilder md = new StringBuilder();
    CategoryChart chart =
        new CategoryChartBuilder().width(1400).height(650).title("Mean TTFT ÷ round-robin's, per workload (lower is better; median over repeats)")
            .xAxisTitle("workload").yAxisTitle("mean TTFT ratio").build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    chart.getStyler().setYAxisMin(0.0);
    chart.getStyler().setAvailableSpaceFill(0.85);
    CategoryChart cachedChart =
        new CategoryChartBuilder().width(1400).height(650).title("Cached prompt tokens ÷ the most a cache could serve, per workload")
            .xAxisTitle("workload").yAxisTitle("share of the possible hits").build();
    cachedChart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    cachedChart.getStyler().setYAxisMin(0.0);
    cachedChart.getStyler().setYAxisMax(1.0);
    cachedChart.getStyler().setAvailableSpaceFill(0.85);
    List<List<Double>> ratios = new ArrayList<>();
    List<List<Double>> cachedShares = new ArrayList<>();
    configs.forEach(c -> {
      ratios.add(new ArrayList<>());
      cachedShares.add(new ArrayList<>());
    });
    List<String> shownRows = new ArrayList<>();
    StringBuilder verdicts = new StringBuilder();
    for (String row : rows) {
      Map<Integer, JsonNode> base = runs(out.resolve(row), "round-robin");
      md.append("\n**").append(row).append("**\n\n");
      md.append("| router | runs | cached (max) | TTFT mean / p50 / p90 / p99 (ms) | mean ÷ round-robin (range) | ITL p99 (ms) | req/s | requests per worker |\n");
      md.append("|---|---|---|---|---|---|---|---|\n");
      boolean any = false;
      for (int i = 0; i < configs.size(); i++) {
        Map<Integer, JsonNode> cell = runs(out.resolve(row), configs.get(i));
        if (cell.isEmpty()) {
          ratios.get(i).add(Double.NaN);
          cachedShares.get(i).add(Double.NaN);
          continue;
        }
        any = true;
        double max = median(cell, r -> r.path("max_hit_rate").asDouble());
        double hit = median(cell, r -> r.path("hit_rate").asDouble());
        cachedShares.get(i).add(max > 0 ? hit / max : Double.NaN);
        List<Double> paired = new ArrayList<>(); // each repeat against round-robin's run of the same repeat
        cell.forEach((repeat, r) -> {
          JsonNode b = base.get(repeat);
          if (b != null) {
            paired.add(r.at("/ttft_ms/mean").asDouble() / b.at("/ttft_ms/mean").asDouble());
          }
        });
        double ratio = median(paired);
        ratios.get(i).add(ratio);
        md.append(String.format(Locale.ROOT, "| %s | %d | %.1f%% (%.1f%%) | %.0f / %.0f / %.0f / %.0f | %.2f (%s) | %.1f | %.1f | %s |%n",
            configs.get(i), cell.size(), 100 * hit, 100 * max,
            median(cell, r -> r.at("/ttft_ms/mean").asDouble()), median(cell, r -> r.at("/ttft_ms/p50").asDouble()),
            median(cell, r -> r.at("/ttft_ms/p90").asDouble()), median(cell, r -> r.at("/ttft_ms/p99").asDouble()),
            ratio, range(paired), median(cell, r -> r.at("/itl_ms/p99").asDouble()),
            median(cell, r -> r.path("request_throughput").asDouble()), share(cell.values().iterator().next().path("worker_share"))));
      }
      if (any) {
        shownRows.add(row);
        verdicts.append(verdict(row, configs, ratios.stream().map(r -> r.getLast()).toList()));
      }
    }
    if (configs.contains(DEFAULT) && !verdicts.isEmpty()) {
      md.append("\n**The default (").append(DEFAULT).append(") against the best other setting, medians of mean TTFT**\n\n");
      md.append("| workload | best other | its ratio to round-robin | default's | default ÷ best |\n|---|---|---|---|---|\n");
      md.append(verdicts);
    }
    for (int i = 0; i < configs.size(); i++) {
      chart.addSeries(configs.get(i), shownRows, shown(rows, shownRows, ratios.get(i)));
      cachedChart.addSeries(configs.get(i), shownRows, shown(rows, shownRows, cachedShares.get(i)));
    }
    Files.writeString(out.resolve("matrix.md"), md.toString());
    BitmapEncoder.saveBitmap(chart, out.resolve("matrix").toString(), BitmapEncoder.BitmapFormat.PNG);
    BitmapEncoder.saveBitmap(cachedChart, out.resolve("matrix-cached").toString(), BitmapEncoder.BitmapFormat.PNG);
    System.out.print(md);
    System.out.println("\nwrote " + out.resolve("matrix.md") + ", " + out.resolve("matrix.png") + " and " + out.resolve("matrix-cached.png"));
  }

  /** The router a user gets without flags: the KV router with the seconds cost. */
  private static final String DEFAULT = "kv-seconds";

  /** One row of the default's comparison: the best other configuration by median ratio, and the default against it. */
  private static String verdict(String row, List<String> configs, List<Double> rowRatios) {
    int self = configs.indexOf(DEFAULT);
    if (self < 0 || Double.isNaN(rowRatios.get(self))) {
      return "";
    }
    int best = -1;
    for (int i = 0; i < configs.size(); i++) {
      if (i != self && !Double.isNaN(rowRatios.get(i)) && (best < 0 || rowRatios.get(i) < rowRatios.get(best))) {
        best = i;
      }
    }
    if (best < 0) {
      return "";
    }
    return String.format(Locale.ROOT, "| %s | %s | %.2f | %.2f | %.2f |%n",
        row, configs.get(best), rowRatios.get(best), rowRatios.get(self), rowRatios.get(self) / rowRatios.get(best));
  }

  /**
   * A cell's runs by repeat: {@code CONFIG.rK.json} from repeated runs, or a single {@code
   * CONFIG.json} (earlier results directories) as repeat 1.
   */
  static Map<Integer, JsonNode> runs(Path rowDir, String config) throws IOException {
    Map<Integer, JsonNode> runs = new TreeMap<>();
    JsonNode single = read(rowDir.resolve(config + ".json"));
    if (single != null) {
      runs.put(1, single);
    }
    if (Files.isDirectory(rowDir)) {
      Pattern name = Pattern.compile(Pattern.quote(config) + "\\.r(\\d+)\\.json");
      try (var files = Files.list(rowDir)) {
        for (Path f : files.toList()) {
          Matcher m = name.matcher(f.getFileName().toString());
          if (m.matches()) {
            runs.put(Integer.parseInt(m.group(1)), read(f));
          }
        }
      }
    }
    return runs;
  }

  private static double median(Map<Integer, JsonNode> cell, ToDoubleFunction<JsonNode> field) {
    return median(cell.values().stream().map(field::applyAsDouble).toList());
  }

  static double median(List<Double> values) {
    if (values.isEmpty()) {
      return Double.NaN;
    }
    List<Double> sorted = values.stream().sorted().toList();
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  /** "min–max" of several values, "one run" of one. */
  private static String range(List<Double> values) {
    if (values.size() < 2) {
      return values.isEmpty() ? "no pair" : "one run";
    }
    return String.format(Locale.ROOT, "%.2f–%.2f", Collections.min(values), Collections.max(values));
  }

  /** The values of the rows that have results, rows without one at 0. */
  private static List<Double> shown(List<String> rows, List<String> shownRows, List<Double> values) {
    List<Double> ys = new ArrayList<>();
    for (int k = 0; k < rows.size(); k++) {
      if (shownRows.contains(rows.get(k))) {
        double v = values.get(k);
        ys.add(Double.isNaN(v) ? 0.0 : v);
      }
    }
    return ys;
  }

  private static JsonNode read(Path file) throws IOException {
    return Files.exists(file) ? JSON.readTree(file.toFile()) : null;
  }

  /** Requests per worker, sorted, as "a / b / c / d". */
  private static String share(JsonNode workers) {
    List<Integer> counts = new ArrayList<>();
    for (Iterator<JsonNode> it = workers.elements(); it.hasNext(); ) {
      counts.add(it.next().asInt());
    }
    counts.sort(null);
    return String.join(" / ", counts.stream().map(String::valueOf).toList());
  }
}
