package dev.tandem.planner.sim;

import dev.tandem.engine.mocker.MockerConfig;
import dev.tandem.engine.mocker.TimingModel;
import dev.tandem.planner.Profile;
import java.util.ArrayList;
import java.util.List;

/**
 * A profile computed from the mocker's timing model (Dynamo's mocker polynomials, fitted on a GPU)
 * rather than measured: what {@code tandem profile} would find sweeping a mocker worker at speedup
 * 1, without the minutes of sweeping. The simulator's default.
 */
public final class MockerProfile {
  private MockerProfile() {}

  public static Profile of(MockerConfig mocker) {
    long kvTokens = (long) mocker.totalKvBlocks() * mocker.blockSize();
    List<Profile.PrefillPoint> prefill = new ArrayList<>();
    for (int isl = 128; isl <= 32_768; isl *= 2) {
      prefill.add(new Profile.PrefillPoint(isl, TimingModel.prefillMs(isl) / 1000));
    }
    List<Profile.DecodePoint> decode = new ArrayList<>();
    for (int context = 512; context <= 32_768; context *= 2) {
      for (int batch = 1; batch <= mocker.maxNumSeqs(); batch *= 2) {
        double used = Math.min(1, (double) batch * context / kvTokens);
        decode.add(new Profile.DecodePoint(batch, context, TimingModel.decodeMs(used) / 1000));
      }
    }
    return new Profile(mocker.modelName(), "mocker-model", kvTokens, mocker.maxNumSeqs(), prefill, decode);
  }

  public static Profile defaults() {
    return of(MockerConfig.defaults());
  }
}
