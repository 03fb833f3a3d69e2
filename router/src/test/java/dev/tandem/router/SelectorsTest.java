package dev.tandem.router;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.WorkerId;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class SelectorsTest {
  private static final RoutingRequest REQUEST = new RoutingRequest("r", 1, new long[0], 16);
  private static final List<WorkerLoad> THREE = List.of(load("a"), load("b"), load("c"));

  private static WorkerLoad load(String id) {
    return new WorkerLoad(new WorkerId(id), 0, 0, 0, 0, 0, 0, 100);
  }

  @Test
  void roundRobinCyclesThroughCandidates() {
    WorkerSelector s = new RoundRobinSelector();
    List<String> picked = java.util.stream.IntStream.range(0, 6)
        .mapToObj(i -> s.select(REQUEST, THREE).worker().value()).toList();
    assertEquals(List.of("a", "b", "c", "a", "b", "c"), picked);
  }

  @Test
  void randomSpreadsOverAllCandidates() {
    WorkerSelector s = new RandomSelector(new SplittableRandom(7));
    Map<String, Integer> counts = new HashMap<>();
    for (int i = 0; i < 3000; i++) {
      counts.merge(s.select(REQUEST, THREE).worker().value(), 1, Integer::sum);
    }
    assertEquals(3, counts.size());
    counts.values().forEach(n -> assertTrue(n > 800 && n < 1200, "share " + n + " of 3000"));
  }

  @Test
  void byNameKnowsThePoliciesAndRefusesOthersClearly() {
    assertEquals("round-robin", Selectors.byName("round-robin").name());
    assertEquals("random", Selectors.byName("RANDOM").name());
    assertEquals("kv", Selectors.mode("KV"));
    var unknown = assertThrows(IllegalArgumentException.class, () -> Selectors.byName("fastest"));
    assertTrue(unknown.getMessage().contains("known: kv, round-robin, random"));
  }
}
