package dev.tandem.planner.sim;

import dev.tandem.common.WorkerId;

/** One trace request as it moves through the simulated cluster; times in simulated seconds. */
final class SimRequest {
  final TraceRequest trace;
  final long[] hashes;
  double firstTokenAt = Double.NaN;
  double doneAt = Double.NaN;
  /** Progress of the decode worker at which this request has emitted its last token. */
  double target;
  int cachedTokens;
  int uncachedTokens;
  boolean split;
  DecodeSim decode;
  PrefillSim prefill;
  WorkerId decodeId;

  SimRequest(TraceRequest trace) {
    this.trace = trace;
    this.hashes = trace.blockIds();
  }

  int isl() {
    return trace.inputTokens();
  }

  int osl() {
    return trace.outputTokens();
  }

  /** KV this request holds on its decode worker: prompt and output. */
  long kvTokens() {
    return (long) trace.inputTokens() + trace.outputTokens();
  }

  double ttft() {
    return firstTokenAt - trace.arrivalSeconds();
  }

  /** Mean seconds between output tokens (0 for a single-token output). */
  double itl() {
    return osl() <= 1 ? 0 : (doneAt - firstTokenAt) / (osl() - 1);
  }
}
