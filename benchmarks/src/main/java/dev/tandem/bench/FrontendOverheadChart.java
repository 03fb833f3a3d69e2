package dev.tandem.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * Charts benchmarks/scripts/frontend_overhead.sh runs side by side: for each run (a label and its
 * output folder) the time Tandem adds to TTFT (client's TTFT minus the worker's own) at p50 and
 * p99, per concurrency.
 *
 * <pre>FrontendOverheadChart OUT_PNG TITLE LABEL=DIR [LABEL=DIR ...]</pre>
 */
public final class FrontendOverheadChart {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int[] CONCURRENCY = {1, 8, 32};

  private FrontendOverheadChart() {}

  public static void main(String[] args) throws Exception {
    CategoryChart chart = new CategoryChartBuilder().width(1100).height(600).title(args[1])
        .xAxisTitle("concurrency").yAxisTitle("TTFT − worker TTFT (ms)").build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
    chart.getStyler().setAvailableSpaceFill(0.85);
    List<String> x = new ArrayList<>();
    for (int c : CONCURRENCY) {
      x.add("c=" + c);
    }
    for (String percentile : new String[] {"p50", "p99"}) {
      for (int i = 2; i < args.length; i++) {
        String[] labelDir = args[i].split("=", 2);
        List<Double> y = new ArrayList<>();
        for (int c : CONCURRENCY) {
          JsonNode run = JSON.readTree(Files.readString(Path.of(labelDir[1], "c" + c + ".json")));
          y.add(run.path("overhead_ms").path(percentile).asDouble());
        }
        chart.addSeries(labelDir[0] + " " + percentile, x, y);
      }
    }
    BitmapEncoder.saveBitmap(chart, args[0], BitmapEncoder.BitmapFormat.PNG);
  }
}
