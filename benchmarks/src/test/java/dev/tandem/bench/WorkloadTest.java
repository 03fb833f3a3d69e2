package dev.tandem.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The load generator's workloads and the most a cache could serve of them. */
class WorkloadTest {
  private static final URI URL = URI.create("http://x");

  @Test
  void multiTurnConversationsExtendTheirLastTurnAndGoOutTurnByTurn() {
    BenchConfig c = BenchConfig.builder(URL, "m").multiTurn(3, 4, 50, 20).seed(5).build();
    List<int[]> prompts = Workload.prompts(c);
    assertEquals(12, prompts.size());
    assertEquals(12, c.totalRequests());
    for (int k = 0; k < 3; k++) {
      for (int turn = 1; turn < 4; turn++) {
        int[] before = prompts.get((turn - 1) * 3 + k);
        int[] now = prompts.get(turn * 3 + k);
        assertEquals(before.length + 20, now.length);
        assertArrayEquals(before, Arrays.copyOf(now, before.length), "turn " + turn + " of conversation " + k + " extends the last");
      }
    }
  }

  @Test
  void theMostACacheCouldServeCountsFullBlocksSeenBefore() {
    int[] a = new int[40];
    Arrays.setAll(a, i -> 1000 + i);
    int[] b = Arrays.copyOf(a, 50); // shares a's first 40 tokens: 2 full blocks of 16
    Arrays.fill(b, 40, 50, 7);
    int[] c = new int[40];
    Arrays.setAll(c, i -> 5000 + i);
    assertEquals(32, Workload.maxCachedTokens(List.of(a, b, c), 16));
    assertEquals(31, Workload.maxCachedTokens(List.of(Arrays.copyOf(a, 32), Arrays.copyOf(a, 32)), 16),
        "the last token is always computed");
  }

  @Test
  void mixedPromptsHaveTheLongShareAndBadMixesAreRefused() {
    BenchConfig c = BenchConfig.builder(URL, "m").numRequests(400).tokens(20, 4).mixed(300, 0.25).seed(9).build();
    long longOnes = Workload.prompts(c).stream().filter(p -> p.length == 300).count();
    assertTrue(longOnes > 70 && longOnes < 130, longOnes + " long prompts of 400 at a share of 0.25");
    assertThrows(IllegalArgumentException.class, () -> BenchConfig.builder(URL, "m").mixed(0, 0.5).build());
  }

  @Test
  void aWorkloadOfNoRequestsIsRefused() {
    var e = assertThrows(IllegalArgumentException.class, () -> BenchConfig.builder(URL, "m").numRequests(-2).build());
    assertTrue(e.getMessage().contains("--num-requests must be at least 1, was -2"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> BenchConfig.builder(URL, "m").numRequests(0).build());
    // A shared-prefix workload counts its own requests (prefixes x repeats): --num-requests does not apply.
    assertEquals(6, BenchConfig.builder(URL, "m").numRequests(0).sharedPrefixes(2, 3, 8).build().totalRequests());
  }
}
