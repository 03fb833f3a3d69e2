package dev.tandem.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * Charts {@code benchmarks/scripts/planner_live.sh}'s replicas.csv: desired and serving workers per
 * pool over the run, the load phases named in the title.
 *   PlannerLiveChart replicas.csv replicas.png
 */
public final class PlannerLiveChart {
  private PlannerLiveChart() {}

  public static void main(String[] args) throws Exception {
    List<String> lines = Files.readAllLines(Path.of(args[0]));
    List<double[]> rows = new ArrayList<>();
    List<String> phases = new ArrayList<>();
    StringBuilder title = new StringBuilder("Planner live: ");
    String lastPhase = "";
    for (String line : lines.subList(1, lines.size())) {
      String[] f = line.split(",", -1);
      if (f.length < 8) {
        continue;
      }
      double[] r = new double[7];
      r[0] = parse(f[0]);
      for (int i = 2; i < 8; i++) {
        r[i - 1] = parse(f[i]);
      }
      rows.add(r);
      if (!f[1].equals(lastPhase) && !f[1].equals("-")) {
        title.append(phases.isEmpty() ? "" : " → ").append(f[1]).append(String.format(" @%.0fs", r[0]));
        phases.add(f[1]);
        lastPhase = f[1];
      }
    }
    XYChart chart = new XYChartBuilder().width(1000).height(420).title(title.toString())
        .xAxisTitle("seconds").yAxisTitle("workers").build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    chart.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
    String[] names = {"desired prefill", "desired decode", "serving prefill", "serving decode"};
    for (int s = 0; s < names.length; s++) {
      int col = s + 1;
      chart.addSeries(names[s], rows.stream().mapToDouble(r -> r[0]).toArray(), rows.stream().mapToDouble(r -> r[col]).toArray())
          .setMarker(SeriesMarkers.NONE);
    }
    BitmapEncoder.saveBitmap(chart, args[1].replaceFirst("\\.png$", ""), BitmapEncoder.BitmapFormat.PNG);
  }

  private static double parse(String s) {
    try {
      return s.isBlank() ? Double.NaN : Double.parseDouble(s);
    } catch (NumberFormatException e) {
      return Double.NaN;
    }
  }
}
