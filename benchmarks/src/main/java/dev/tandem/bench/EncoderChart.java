package dev.tandem.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * Charts benchmarks/scripts/encoder_embed.sh's results: per model shape and input length, how many
 * times faster than PyTorch (its median ms an input ÷ Tandem's) Tandem embeds, one input a step and
 * 16 a step.
 *
 * <pre>EncoderChart RESULTS_TXT OUT_PNG</pre>
 */
public final class EncoderChart {
  private static final Pattern LINE = Pattern.compile("(tandem|pytorch) (\\S+) tokens=(\\d+) threads=\\d+( batch=\\d+)?: .*, ([\\d.]+) ms an input");

  private EncoderChart() {}

  public static void main(String[] args) throws Exception {
    Map<String, Map<String, List<Double>>> runs = new LinkedHashMap<>(); // series -> case -> ms
    List<String> cases = new ArrayList<>();
    for (String line : Files.readAllLines(Path.of(args[0]))) {
      Matcher m = LINE.matcher(line);
      if (!m.matches()) {
        continue;
      }
      String series = m.group(1).equals("pytorch") ? "PyTorch (one a step)" : m.group(4) == null ? "Tandem, one a step" : "Tandem, 16 a step";
      String c = m.group(2) + ", " + m.group(3) + " tokens";
      if (!cases.contains(c)) {
        cases.add(c);
      }
      runs.computeIfAbsent(series, k -> new LinkedHashMap<>()).computeIfAbsent(c, k -> new ArrayList<>()).add(Double.parseDouble(m.group(5)));
    }
    CategoryChart chart = new CategoryChartBuilder().width(1200).height(600)
        .title("Encoder embeddings: PyTorch's ms an input ÷ Tandem's (medians; above 1, Tandem is faster), 2 vCPUs")
        .xAxisTitle("model shape, input length").yAxisTitle("× PyTorch's speed").build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
    Map<String, List<Double>> torch = runs.getOrDefault("PyTorch (one a step)", Map.of());
    for (String series : List.of("Tandem, one a step", "Tandem, 16 a step")) {
      Map<String, List<Double>> byCase = runs.getOrDefault(series, Map.of());
      chart.addSeries(series, cases, cases.stream().map(c -> {
        Double mine = median(byCase.getOrDefault(c, List.of()));
        Double theirs = median(torch.getOrDefault(c, List.of()));
        return mine == null || theirs == null ? 0.0 : theirs / mine; // 0: not run (16 a step at 512 tokens)
      }).toList());
    }
    BitmapEncoder.saveBitmap(chart, args[1], BitmapEncoder.BitmapFormat.PNG);
  }

  /** The median, or null where the series has no run of that case. */
  private static Double median(List<Double> values) {
    if (values.isEmpty()) {
      return null;
    }
    List<Double> sorted = values.stream().sorted().toList();
    return sorted.get(sorted.size() / 2);
  }
}
