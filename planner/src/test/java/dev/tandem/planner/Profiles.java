package dev.tandem.planner;

import java.util.ArrayList;
import java.util.List;

/** Profiles with round numbers for the planner's tests. */
final class Profiles {
  private Profiles() {}

  /**
   * Prefill at {@code prefillTokensPerSecond} whatever the length; decode ITL = {@code secondsPerSequence}
   * × batch (so a worker generates 1 ÷ that tokens per second at any batch), independent of context.
   */
  static Profile linear(double prefillTokensPerSecond, double secondsPerSequence) {
    List<Profile.PrefillPoint> prefill = List.of(
        new Profile.PrefillPoint(1000, 1000 / prefillTokensPerSecond), new Profile.PrefillPoint(8000, 8000 / prefillTokensPerSecond));
    List<Profile.DecodePoint> decode = new ArrayList<>();
    for (double context : new double[] {1000, 8000}) {
      for (int b : new int[] {1, 8, 64, 256, 1024}) {
        decode.add(new Profile.DecodePoint(b, context, secondsPerSequence * b));
      }
    }
    return new Profile("test-model", "mocker", 100_000_000L, 1024, prefill, decode);
  }
}
