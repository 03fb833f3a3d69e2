package dev.tandem.router;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.PrefillCost;
import org.junit.jupiter.api.Test;

/** The per-request split decision in both directions, from the figures a router has. */
class SplitPolicyTest {
  private static final SplitPolicy AUTO = SplitPolicy.defaults();
  /** Qwen3-0.6B with f32 KV: 2 × 28 layers × 1,024 × 4 bytes. */
  private static final long KV_PER_TOKEN = 229_376;
  private static final SplitPolicy.Link FAST = new SplitPolicy.Link(4e9, 700e-6);
  private static final SplitPolicy.Link SLOW = new SplitPolicy.Link(5e6, 700e-6);

  /** 100 prompt tokens per second, no attention term: prefill time is tokens / 100. */
  private static final PrefillCost SPEED_100 = new PrefillCost(0.01, 0);
  private static final PrefillCost SPEED_120 = new PrefillCost(1 / 120.0, 0);
  private static final PrefillCost UNKNOWN = PrefillCost.UNKNOWN;

  private static SplitPolicy.Inputs inputs(int prompt, SplitPolicy.Link link, int active, boolean shared) {
    return new SplitPolicy.Inputs(prompt, prompt, prompt, KV_PER_TOKEN, 28, link, SPEED_100, SPEED_100, 0, 0, active, shared, null);
  }

  @Test
  void splitsToProtectDecodingStreamsOnAFastLink() {
    var d = AUTO.decide(inputs(3500, FAST, 8, false));
    assertTrue(d.split(), d.toString());
    // 3,500 tokens × 229 KB = 803 MB over 4 GB/s: ~0.2 s, all but one layer's share hidden by the 35 s prefill.
    assertEquals(0.2, d.transferSeconds(), 0.01);
    assertTrue(d.remoteSeconds() < 35 + 0.2 / 28 + 0.01, d.toString());
  }

  @Test
  void keepsThePromptLocalWhenNothingIsDecodingThere() {
    // Same speed on both sides and no stream to protect: the transfer can only add time.
    var d = AUTO.decide(inputs(3500, FAST, 0, false));
    assertFalse(d.split(), d.toString());
  }

  @Test
  void declinesWhenPrefillAndDecodeShareCpus() {
    var d = AUTO.decide(inputs(3500, FAST, 8, true));
    assertFalse(d.split(), d.toString());
    assertTrue(d.reason().contains("shares"), d.reason());
    // Even when the prefill worker measured itself faster: on the same CPUs it is not.
    var faster = new SplitPolicy.Inputs(3500, 3500, 3500, KV_PER_TOKEN, 28, FAST, SPEED_100, SPEED_120, 0, 0, 8, true, null);
    assertFalse(AUTO.decide(faster).split(), AUTO.decide(faster).toString());
  }

  @Test
  void declinesOnASlowLinkForAShortStall() {
    // 200 tokens: 2 s of prefill. At 5 MB/s the 46 MB take 9.2 s, 7.3 s of it beyond the prefill:
    // worse than the 2 s stall a local prefill causes one stream. At 4 GB/s the transfer hides.
    var slow = AUTO.decide(inputs(200, SLOW, 1, false));
    assertFalse(slow.split(), slow.toString());
    var fast = AUTO.decide(inputs(200, FAST, 1, false));
    assertTrue(fast.split(), fast.toString());
  }

  @Test
  void aBusyPrefillWorkerLosesToLocalPrefill() {
    var idle = AUTO.decide(inputs(1000, FAST, 2, false));
    assertTrue(idle.split(), idle.toString());
    // 100,000 queued prompt tokens on the prefill worker: 1,000 s of waiting.
    var busy = AUTO.decide(new SplitPolicy.Inputs(1000, 1000, 1000, KV_PER_TOKEN, 28, FAST, SPEED_100, SPEED_100, 0, 100_000, 2, false, null));
    assertFalse(busy.split(), busy.toString());
  }

  @Test
  void aPrefixCachedOnTheDecodeWorkerMakesLocalPrefillCheap() {
    var d = AUTO.decide(new SplitPolicy.Inputs(3500, 16, 3500, KV_PER_TOKEN, 28, FAST, SPEED_100, SPEED_100, 0, 0, 8, false, null));
    assertFalse(d.split(), d.toString());
  }

  @Test
  void unmeasuredFiguresKeepPromptsLocalUntilMeasured() {
    assertFalse(AUTO.decide(inputs(3500, null, 8, false)).split());
    var noRate = new SplitPolicy.Inputs(3500, 3500, 3500, KV_PER_TOKEN, 28, FAST, UNKNOWN, UNKNOWN, 0, 0, 8, false, null);
    assertFalse(AUTO.decide(noRate).split());
    // One side measured stands in for the other (same model).
    var oneRate = new SplitPolicy.Inputs(3500, 3500, 3500, KV_PER_TOKEN, 28, FAST, SPEED_100, UNKNOWN, 0, 0, 8, false, null);
    assertTrue(AUTO.decide(oneRate).split());
  }

  @Test
  void attentionMakesLongPromptsSlowerPerToken() {
    // 1 ms per token plus 1 µs per attended token.
    PrefillCost cost = new PrefillCost(1e-3, 1e-6);
    assertEquals(256 * (1e-3 + 128e-6), cost.seconds(256, 0), 1e-9);
    assertEquals(3500 * (1e-3 + 1750e-6), cost.seconds(3500, 0), 1e-9);
    // The tail of a prompt whose 3,000-token prefix is cached attends to all of it.
    assertEquals(500 * (1e-3 + 3250e-6), cost.seconds(500, 3000), 1e-9);
    // The fit recovers both terms from steps of two lengths.
    double[] tokens = {128, 512, 128, 512};
    double[] context = new double[4];
    double[] seconds = new double[4];
    for (int i = 0; i < 4; i++) {
      context[i] = tokens[i] * (tokens[i] - 1) / 2;
      seconds[i] = 1e-3 * tokens[i] + 1e-6 * context[i];
    }
    PrefillCost fitted = PrefillCost.fit(tokens, context, seconds, 4);
    assertEquals(1e-3, fitted.perToken(), 1e-9);
    assertEquals(1e-6, fitted.perContextToken(), 1e-12);
    assertEquals(0, fitted.perStep(), 1e-9);
  }

  /**
   * Steps timed by Dynamo's mocker polynomial (16.5 ms a step + 15.2 µs a token + a square term)
   * fit a per-step part near its 16.5 ms; a per-step part counts once per prefill, and not at all
   * for nothing to prefill.
   */
  @Test
  void theFitFindsAPerStepPartWhereStepsHaveOne() {
    double[] tokens = {100, 2100, 300, 1200, 100, 2100, 700, 1600};
    double[] context = new double[tokens.length];
    double[] seconds = new double[tokens.length];
    for (int i = 0; i < tokens.length; i++) {
      context[i] = tokens[i] * (tokens[i] - 1) / 2;
      seconds[i] = (4.209989e-7 * tokens[i] * tokens[i] + 0.01518344 * tokens[i] + 16.50142) / 1000;
    }
    PrefillCost fitted = PrefillCost.fit(tokens, context, seconds, tokens.length);
    assertEquals(16.50142e-3, fitted.perStep(), 1e-9);
    assertEquals(15.18e-6, fitted.perToken(), 0.01e-6);
    assertEquals(100 * 15.18e-6 + 16.5e-3, fitted.seconds(100, 0), 0.05e-3);
    assertEquals(0, fitted.seconds(0, 5000));
    // Where a per-step part would come out negative it is dropped: pure per-token steps.
    for (int i = 0; i < tokens.length; i++) {
      seconds[i] = 20e-6 * tokens[i] - (i % 2 == 0 ? 1e-4 : 0);
    }
    PrefillCost noStep = PrefillCost.fit(tokens, context, seconds, tokens.length);
    assertEquals(0, noStep.perStep());
    assertTrue(noStep.perToken() > 0);
  }

  @Test
  void alwaysAndNeverOverrideTheModel() {
    assertTrue(new SplitPolicy(SplitPolicy.Mode.ALWAYS, 1).decide(inputs(10, SLOW, 0, true)).split());
    assertFalse(new SplitPolicy(SplitPolicy.Mode.NEVER, 1).decide(inputs(3500, FAST, 64, false)).split());
    assertEquals(SplitPolicy.Mode.ALWAYS, SplitPolicy.Mode.parse("Always"));
    assertThrows(IllegalArgumentException.class, () -> SplitPolicy.Mode.parse("sometimes"));
  }

  private static SplitPolicy.Inputs predicted(int prompt, int active, boolean shared, double local, double remote) {
    return new SplitPolicy.Inputs(prompt, prompt, prompt, KV_PER_TOKEN, 28, FAST, SPEED_100, SPEED_100, 0, 0, active, shared,
        SplitPolicy.Predicted.of(local, remote));
  }

  @Test
  void weighsTheRoutersPredictedSecondsWhenItHasThem() {
    // 100 tokens at 100 tokens/s: 1 s to prefill on either side; one stream decoding.
    // From the speeds alone: local 1 s + 1 s of stall against remote 1 s + a hidden transfer: split.
    assertTrue(AUTO.decide(inputs(100, FAST, 1, false)).split());
    // The router predicts 5 s on the prefill worker (work queued there it tracks) and 1 s locally:
    // 5 s + the transfer's exposed share > 1 s + 1 s of stall: keep it.
    var busyPrefill = AUTO.decide(predicted(100, 1, false, 1.0, 5.0));
    assertFalse(busyPrefill.split(), busyPrefill.toString());
    assertEquals(2.0, busyPrefill.localSeconds(), 1e-9, "the prediction plus the stall");
    // 100 × 229,376 B over 4 GB/s + 700 µs = 6.4 ms, over 28 layers: at least 0.23 ms of it shows.
    double transfer = 700e-6 + 100.0 * KV_PER_TOKEN / 4e9;
    assertEquals(5.0 + Math.max(transfer / 28, transfer - 1.0 * 27 / 28), busyPrefill.remoteSeconds(), 1e-9);
    // Nothing decoding, but the decode worker predicted 3 s (a queue) and the prefill worker 0.5 s: split.
    var busyDecode = AUTO.decide(predicted(100, 0, false, 3.0, 0.5));
    assertTrue(busyDecode.split(), busyDecode.toString());
    assertEquals("remote prefill is faster", busyDecode.reason());
  }

  @Test
  void onSharedCpusTheSpeedsRuleNotThePredictions() {
    // The same CPUs compute both prefills: a lower remote prediction cannot make the split faster.
    var d = AUTO.decide(predicted(100, 0, true, 3.0, 0.5));
    assertFalse(d.split(), d.toString());
    assertEquals(1.0, d.localSeconds(), 1e-9);
  }

  @Test
  void aMissingOrNonFinitePredictionIsNone() {
    assertEquals(null, SplitPolicy.Predicted.of(Double.NaN, 1));
    assertEquals(null, SplitPolicy.Predicted.of(1, Double.POSITIVE_INFINITY));
    assertEquals(null, SplitPolicy.Predicted.of(-1, 1));
  }
}
