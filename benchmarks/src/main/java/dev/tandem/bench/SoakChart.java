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
 * Charts {@code benchmarks/scripts/soak.sh}'s samples.csv: each process's RSS (MB) and open file
 * descriptors over the run, and the KV blocks in use, one panel above the other in one PNG.
 *   SoakChart samples.csv soak.png
 */
public final class SoakChart {
  private SoakChart() {}

  public static void main(String[] args) throws Exception {
    List<String> lines = Files.readAllLines(Path.of(args[0]));
    String[] header = lines.getFirst().split(",");
    List<String[]> rows = new ArrayList<>();
    for (String line : lines.subList(1, lines.size())) {
      String[] f = line.split(",", -1);
      if (f.length == header.length) {
        rows.add(f);
      }
    }
    double t0 = Double.parseDouble(rows.getFirst()[0]);
    double[] t = rows.stream().mapToDouble(r -> Double.parseDouble(r[0]) - t0).toArray();
    XYChart rss = chart("RSS per process (MB)", "MB");
    XYChart fds = chart("Open file descriptors per process", "fds");
    XYChart kv = chart("KV blocks in use (all workers) and open router reservations", "count");
    for (int c = 2; c < header.length; c++) {
      int col = c;
      double[] v = rows.stream().mapToDouble(r -> Double.parseDouble(r[col])).toArray();
      String name = header[c];
      if (name.endsWith("_rss_kb")) {
        for (int i = 0; i < v.length; i++) {
          v[i] /= 1024;
        }
        rss.addSeries(name.replace("_rss_kb", ""), t, v).setMarker(SeriesMarkers.CIRCLE);
      } else if (name.endsWith("_fds")) {
        fds.addSeries(name.replace("_fds", ""), t, v).setMarker(SeriesMarkers.CIRCLE);
      } else {
        kv.addSeries(name, t, v).setMarker(SeriesMarkers.CIRCLE);
      }
    }
    var images = new java.awt.image.BufferedImage[] {
        BitmapEncoder.getBufferedImage(rss), BitmapEncoder.getBufferedImage(fds), BitmapEncoder.getBufferedImage(kv)};
    int height = 0;
    for (var i : images) {
      height += i.getHeight();
    }
    var all = new java.awt.image.BufferedImage(images[0].getWidth(), height, java.awt.image.BufferedImage.TYPE_INT_RGB);
    var g = all.createGraphics();
    int y = 0;
    for (var i : images) {
      g.drawImage(i, 0, y, null);
      y += i.getHeight();
    }
    g.dispose();
    javax.imageio.ImageIO.write(all, "png", Path.of(args[1]).toFile());
  }

  private static XYChart chart(String title, String y) {
    XYChart c = new XYChartBuilder().width(1000).height(300).title(title).xAxisTitle("seconds since start").yAxisTitle(y).build();
    c.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    c.getStyler().setChartBackgroundColor(java.awt.Color.WHITE);
    return c;
  }
}
