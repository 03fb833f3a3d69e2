package dev.tandem.frontend.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.openai.ResponseJson;
import dev.tandem.router.SplitPolicy;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * One request's timing: time to its first token, gaps between tokens (each recorded in the
 * frontend's metrics too), and the {@code "tandem"} timing object a request asks for with {@code
 * "tandem": {"timing": true}}: workers, when the request was handed to its workers ({@code
 * dispatch_ms}: parsing, tokenizing and routing), worker TTFT, the KV transfer and split decision of
 * split requests, ITL and total time.
 *
 * <p>Threading: the channel's event loop only.
 */
final class RunTiming {
  private final FrontendMetrics metrics;
  private final long startNanos;
  private long dispatchNanos = -1;
  private long firstTokenNanos = -1;
  private long itlCount;
  private long itlSumNanos;
  private long itlMaxNanos;

  RunTiming(FrontendMetrics metrics, long startNanos) {
    this.metrics = metrics;
    this.startNanos = startNanos;
  }

  long startNanos() {
    return startNanos;
  }

  /** The request's generations were handed to their workers' calls at {@code now} (the first time counts). */
  void dispatched(long now) {
    if (dispatchNanos < 0) {
      dispatchNanos = now;
    }
  }

  /** A token arrived at {@code now} for a choice whose previous token came at {@code previous} (-1: none). */
  void token(long now, long previous) {
    if (firstTokenNanos < 0) {
      firstTokenNanos = now;
      metrics.ttft(now - startNanos);
    }
    if (previous >= 0) {
      long gap = now - previous;
      metrics.itl(gap);
      itlCount++;
      itlSumNanos += gap;
      itlMaxNanos = Math.max(itlMaxNanos, gap);
    }
  }

  /** The {@code "tandem"} timing object over the request's choices. */
  ObjectNode json(List<ChoiceStream> choices) {
    ObjectNode t = ResponseJson.JSON.createObjectNode();
    Set<String> workers = new LinkedHashSet<>();
    long workerTtftUs = -1;
    for (ChoiceStream c : choices) {
      if (c.workerId != null) {
        workers.add(c.workerId);
      }
      if (c.workerTtftUs >= 0 && (workerTtftUs < 0 || c.workerTtftUs < workerTtftUs)) {
        workerTtftUs = c.workerTtftUs;
      }
    }
    var ids = t.putArray("worker_ids");
    workers.forEach(ids::add);
    Set<String> prefillers = new LinkedHashSet<>();
    long transferUs = 0;
    long transferBytes = 0;
    long exposedUs = 0;
    String fallback = null;
    for (ChoiceStream c : choices) {
      if (c.prefillWorkerId != null) {
        prefillers.add(c.prefillWorkerId);
        transferUs = Math.max(transferUs, c.kvTransferUs);
        transferBytes += c.kvTransferBytes;
        exposedUs = Math.max(exposedUs, c.kvExposedUs);
      }
      if (c.prefillFallback != null) {
        fallback = c.prefillFallback;
      }
    }
    if (!prefillers.isEmpty()) {
      var p = t.putArray("prefill_worker_ids");
      prefillers.forEach(p::add);
      t.put("kv_transfer_ms", transferUs / 1e3);
      t.put("kv_transfer_bytes", transferBytes);
      t.put("kv_exposed_ms", exposedUs / 1e3);
    }
    if (fallback != null) {
      t.put("prefill_fallback", fallback);
    }
    ChoiceStream first = choices.getFirst();
    if (!first.costName.isEmpty()) {
      ObjectNode r = t.putObject("routing");
      r.put("cost", first.costName).put("predicted_overlap_blocks", first.predictedOverlapBlocks);
      if (first.costName.equals("seconds")) {
        r.put("predicted_ttft_ms", first.predictedCost * 1e3);
      } else {
        r.put("cost_blocks", first.predictedCost);
      }
    }
    SplitPolicy.Decision decision = first.splitDecision;
    if (decision != null) {
      ObjectNode d = t.putObject("split_decision");
      d.put("split", decision.split()).put("reason", decision.reason());
      if (!Double.isNaN(decision.localSeconds())) {
        d.put("local_s", decision.localSeconds()).put("remote_s", decision.remoteSeconds()).put("transfer_s", decision.transferSeconds());
      }
      if (!decision.kvTransferBackend().isEmpty()) {
        d.put("kv_transfer_backend", decision.kvTransferBackend());
      }
    }
    t.put("dispatch_ms", dispatchNanos < 0 ? -1 : (dispatchNanos - startNanos) / 1e6);
    t.put("ttft_ms", firstTokenNanos < 0 ? -1 : (firstTokenNanos - startNanos) / 1e6);
    t.put("worker_ttft_ms", workerTtftUs < 0 ? -1 : workerTtftUs / 1e3);
    t.put("itl_ms_mean", itlCount == 0 ? 0 : itlSumNanos / 1e6 / itlCount);
    t.put("itl_ms_max", itlMaxNanos / 1e6);
    t.put("total_ms", (System.nanoTime() - startNanos) / 1e6);
    return t;
  }
}
