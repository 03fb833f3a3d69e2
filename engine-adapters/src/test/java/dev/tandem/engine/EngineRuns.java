package dev.tandem.engine;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Drives an engine in tests. */
public final class EngineRuns {
  private EngineRuns() {}

  /**
   * Steps the engine until idle; returns each request's tokens in order and puts each request's
   * final output into {@code last}.
   */
  public static Map<String, List<Integer>> runToCompletion(Engine engine, Map<String, RequestOutput> last) {
    Map<String, List<Integer>> out = new HashMap<>();
    int steps = 0;
    while (engine.hasWork()) {
      for (RequestOutput o : engine.step()) {
        for (int t : o.newTokens()) {
          out.computeIfAbsent(o.requestId(), k -> new ArrayList<>()).add(t);
        }
        if (o.finished()) {
          last.put(o.requestId(), o);
        }
      }
      assertTrue(++steps < 10_000, "engine did not finish");
    }
    return out;
  }
}
