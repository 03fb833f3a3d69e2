package dev.tandem.planner.sim;

import dev.tandem.planner.SlaTargets;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The planner run's timeline as one PNG of three panels over simulated minutes: arrivals per
 * second; workers per pool (serving, and held including those starting) beside the static-peak
 * pool; p90 TTFT and ITL of each window against their targets.
 */
public final class SimChart {
  /** Every panel's height: the encoder lays the panels out in cells of the first one's size. */
  static final int PANEL_HEIGHT = 300;

  private SimChart() {}

  public static void write(SimulationSuite.Result r, SlaTargets targets, Path png) throws IOException {
    List<SimReport.Sample> t = r.planner().timeline();
    double[] minutes = t.stream().mapToDouble(s -> s.time() / 60).toArray();
    XYChart load = chart("Load: " + r.planner().trace(), "arrivals / s");
    line(load, "arrivals / s", minutes, t.stream().mapToDouble(SimReport.Sample::arrivalRate).toArray());

    boolean withStatic = r.staticPeak() != null; // --planner-only runs no static pool
    XYChart pools = chart(withStatic ? "Workers (planner) vs the static pool sized for the peak" : "Workers (planner)", "workers");
    line(pools, "prefill serving", minutes, t.stream().mapToDouble(SimReport.Sample::prefillReady).toArray());
    line(pools, "prefill held", minutes, t.stream().mapToDouble(SimReport.Sample::prefillHeld).toArray());
    line(pools, "decode serving", minutes, t.stream().mapToDouble(SimReport.Sample::decodeReady).toArray());
    line(pools, "decode held", minutes, t.stream().mapToDouble(SimReport.Sample::decodeHeld).toArray());
    if (withStatic) {
      flat(pools, "static peak (" + r.peakPrefill() + " + " + r.peakDecode() + ")", minutes, r.peakPrefill() + r.peakDecode());
    }

    XYChart latency = chart(String.format(java.util.Locale.ROOT, "p90 latency per window (planner: %.2f%% of requests within both SLAs)",
        100 * r.planner().slaAttainment()), "seconds (log)");
    latency.getStyler().setYAxisLogarithmic(true);
    line(latency, "TTFT p90", minutes, gapsForLog(t.stream().mapToDouble(SimReport.Sample::ttftP90).toArray()));
    line(latency, "ITL p90", minutes, gapsForLog(t.stream().mapToDouble(SimReport.Sample::itlP90).toArray()));
    flat(latency, "TTFT target", minutes, targets.ttftSeconds());
    flat(latency, "ITL target", minutes, targets.itlSeconds());
    // XChart starts its ticks at the first value (the first window, 0.17 min); an axis from 0 to a
    // multiple of 5 minutes puts them on whole minutes.
    double last = minutes.length == 0 ? 0 : minutes[minutes.length - 1];
    double end = Math.max(5, 5 * Math.ceil(last / 5));
    for (XYChart c : List.of(load, pools, latency)) {
      c.setXAxisTitle("simulated minutes");
      c.getStyler().setXAxisMin(0.0);
      c.getStyler().setXAxisMax(end);
    }

    Path parent = png.toAbsolutePath().getParent();
    if (parent != null) {
      java.nio.file.Files.createDirectories(parent);
    }
    BitmapEncoder.saveBitmap(List.of(load, pools, latency), 3, 1, png.toString().replaceFirst("\\.png$", ""),
        BitmapEncoder.BitmapFormat.PNG);
  }

  private static XYChart chart(String title, String y) {
    XYChart c = new XYChartBuilder().width(1000).height(PANEL_HEIGHT).title(title).yAxisTitle(y).build();
    c.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    c.getStyler().setMarkerSize(0);
    c.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
    c.getStyler().setXAxisDecimalPattern("#0.#");
    return c;
  }

  private static void line(XYChart c, String name, double[] x, double[] y) {
    if (x.length == 0) {
      x = new double[] {0};
      y = new double[] {0};
    }
    XYSeries s = c.addSeries(name, x, y);
    s.setMarker(SeriesMarkers.NONE);
  }

  private static void flat(XYChart c, String name, double[] x, double value) {
    double[] xs = x.length == 0 ? new double[] {0, 1} : new double[] {x[0], x[x.length - 1]};
    XYSeries s = c.addSeries(name, xs, new double[] {value, value});
    s.setMarker(SeriesMarkers.NONE);
    s.setLineStyle(new java.awt.BasicStroke(1.5f, java.awt.BasicStroke.CAP_BUTT, java.awt.BasicStroke.JOIN_MITER, 10, new float[] {6, 4}, 0));
  }

  /**
   * A window in which no request had its first token (or no gap) has no p90: a gap in the line,
   * not a point at the axis's floor, which read as latency falling to nothing while traffic stopped.
   */
  private static double[] gapsForLog(double[] v) {
    double[] out = new double[v.length];
    for (int i = 0; i < v.length; i++) {
      out[i] = Double.isFinite(v[i]) && v[i] > 0 ? v[i] : Double.NaN;
    }
    return out;
  }
}
