package dev.tandem.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
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
 * reads {@code OUT_DIR/ROW/CONFIG.json} ({@code tandem bench --json}), writes {@code
 * OUT_DIR/matrix.md} and {@code OUT_DIR/matrix.png}.
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
        new CategoryChartBuilder().width(1400).height(650).title("Mean TTFT ÷ round-robin's, per workload (lower is better)")
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
    for (String row : rows) {
      JsonNode base = read(out.resolve(row).resolve("round-robin.json"));
      md.append("\n**").append(row).append("**\n\n");
      md.append("| router | cached (max) | TTFT mean / p50 / p90 / p99 (ms) | mean ÷ round-robin | ITL p99 (ms) | req/s | requests per worker |\n");
      md.append("|---|---|---|---|---|---|---|\n");
      boolean any = false;
      for (int i = 0; i < configs.size(); i++) {
        JsonNode r = read(out.resolve(row).resolve(configs.get(i) + ".json"));
        if (r == null) {
          ratios.get(i).add(Double.NaN);
          cachedShares.get(i).add(Double.NaN);
          continue;
        }
        double max = r.path("max_hit_rate").asDouble();
        cachedShares.get(i).add(max > 0 ? r.path("hit_rate").asDouble() / max : Double.NaN);
        any = true;
        double ratio = base == null ? Double.NaN : r.at("/ttft_ms/mean").asDouble() / base.at("/ttft_ms/mean").asDouble();
        ratios.get(i).add(ratio);
        md.append(String.format(Locale.ROOT, "| %s | %.1f%% (%.1f%%) | %.0f / %.0f / %.0f / %.0f | %.2f | %.1f | %.1f | %s |%n",
            configs.get(i), 100 * r.path("hit_rate").asDouble(), 100 * r.path("max_hit_rate").asDouble(),
            r.at("/ttft_ms/mean").asDouble(), r.at("/ttft_ms/p50").asDouble(), r.at("/ttft_ms/p90").asDouble(),
            r.at("/ttft_ms/p99").asDouble(), ratio, r.at("/itl_ms/p99").asDouble(), r.path("request_throughput").asDouble(),
            share(r.path("worker_share"))));
      }
      if (any) {
        shownRows.add(row);
      }
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
