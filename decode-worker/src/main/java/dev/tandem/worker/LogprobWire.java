package dev.tandem.worker;

import dev.tandem.engine.RequestOutput;
import dev.tandem.proto.worker.v1.TokenLogprob;

/** A token's log-probabilities between the engine's record and the wire message, both ways. */
public final class LogprobWire {
  private LogprobWire() {}

  public static TokenLogprob toProto(RequestOutput.TokenLogprob lp) {
    var entry = TokenLogprob.newBuilder().setLogprob(lp.logprob());
    for (int k = 0; k < lp.topTokenIds().length; k++) {
      entry.addTopTokenIds(lp.topTokenIds()[k]).addTopLogprobs(lp.topLogprobs()[k]);
    }
    return entry.build();
  }

  public static RequestOutput.TokenLogprob fromProto(TokenLogprob lp) {
    int[] ids = new int[lp.getTopTokenIdsCount()];
    float[] values = new float[lp.getTopLogprobsCount()];
    for (int k = 0; k < ids.length; k++) {
      ids[k] = lp.getTopTokenIds(k);
    }
    for (int k = 0; k < values.length; k++) {
      values[k] = lp.getTopLogprobs(k);
    }
    return new RequestOutput.TokenLogprob(lp.getLogprob(), ids, values);
  }
}
