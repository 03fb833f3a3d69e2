package dev.tandem.planner.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.planner.PlannerConfig;
import dev.tandem.planner.PoolLimits;
import dev.tandem.planner.Profile;
import dev.tandem.planner.SlaTargets;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SimChartTest {
  private static final Profile PROFILE = MockerProfile.defaults();

  /**
   * The chart holds all three panels whole: the encoder lays them out in cells of the first
   * panel's size, so panels of different heights came out cropped (the latency panel lost its
   * minutes axis). A trace with a silent third (no p90 there) draws too.
   */
  @Test
  void threeWholePanelsForARunWithASilentStretch(@TempDir Path dir) throws Exception {
    Trace t = SyntheticTraces.generate(SyntheticTraces.Spec.of("zero", 5).withDuration(600));
    PlannerConfig planner = PlannerConfig.builder().mode(PlannerConfig.Mode.SLA).profile(PROFILE).intervalSeconds(10)
        .lookaheadIntervals(3).prefillLimits(new PoolLimits(0, 10)).decodeLimits(new PoolLimits(0, 10)).build();
    SimulationSuite.Result result = SimulationSuite.plannerOnly(t, SimConfig.fixed("base", PROFILE, SlaTargets.DEFAULTS, 1, 1),
        planner, null);
    assertTrue(result.planner().timeline().stream().anyMatch(s -> !(s.ttftP90() > 0)), "some window has no TTFT p90");
    Path png = dir.resolve("sim.png");
    SimChart.write(result, SlaTargets.DEFAULTS, png);
    BufferedImage image = ImageIO.read(Files.newInputStream(png));
    assertEquals(1000, image.getWidth());
    assertEquals(3 * SimChart.PANEL_HEIGHT, image.getHeight());
  }
}
