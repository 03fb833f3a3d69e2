package dev.tandem.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * Charts benchmarks/scripts/netns_disagg.sh's results: per backend, the long prompt's TTFT and the
 * decoding stream's largest gap for each --disagg mode at each shaped rate, side by side, so that
 * what auto chose can be read against what each forced choice cost.
 *
 * <pre>NetnsChart RESULTS_TXT OUT_PNG</pre>
 */
public final class NetnsChart {
  private static final Pattern FIELD = Pattern.compile("(\\w+)=(\\S+)");

  private NetnsChart() {}

  public static void main(String[] args) throws Exception {
    Map<String, Map<String, Double>> ttft = new LinkedHashMap<>(); // "backend mode" -> rate -> s
    Map<String, Map<String, Double>> gap = new LinkedHashMap<>();
    Set<String> rates = new LinkedHashSet<>();
    for (String line : Files.readAllLines(Path.of(args[0]))) {
      if (!line.contains("long_ttft_ms=")) {
        continue;
      }
      Map<String, String> f = new LinkedHashMap<>();
      Matcher m = FIELD.matcher(line);
      while (m.find()) {
        f.putIfAbsent(m.group(1), m.group(2));
      }
      String series = f.get("backend") + " " + f.get("mode");
      rates.add(f.get("rate"));
      ttft.computeIfAbsent(series, k -> new LinkedHashMap<>()).put(f.get("rate"), Double.parseDouble(f.get("long_ttft_ms")) / 1e3);
      gap.computeIfAbsent(series, k -> new LinkedHashMap<>()).put(f.get("rate"), Double.parseDouble(f.get("max_itl_during_ms")) / 1e3);
    }
    CategoryChart chart = new CategoryChartBuilder().width(1400).height(700)
        .title("Long prompt TTFT and the decoding stream's largest gap, per shaped link and --disagg mode")
        .xAxisTitle("prefill host's link (tc tbf)").yAxisTitle("seconds").build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    chart.getStyler().setAvailableSpaceFill(0.85);
    List<String> x = new ArrayList<>(rates);
    for (var e : ttft.entrySet()) {
      chart.addSeries("TTFT " + e.getKey(), x, x.stream().map(r -> e.getValue().getOrDefault(r, 0.0)).toList());
    }
    for (var e : gap.entrySet()) {
      chart.addSeries("max gap " + e.getKey(), x, x.stream().map(r -> e.getValue().getOrDefault(r, 0.0)).toList());
    }
    BitmapEncoder.saveBitmap(chart, args[1], BitmapEncoder.BitmapFormat.PNG);
  }
}
