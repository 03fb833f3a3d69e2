package dev.tandem.planner.sim;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.planner.SlaTargets;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The simulation's JSON: the planner run's headline keys at the top ({@code sla_attainment} as a
 * fraction, {@code worker_seconds}, {@code static_peak_worker_seconds}, {@code goodput_per_worker}
 * and the ratios to the static-peak pool), the planner run's {@code timeline} (one sample per
 * chart point: arrivals, ready and held workers per pool, p90 TTFT and ITL, requests finished and
 * within both SLAs), then every run in {@code runs}, and the predictor comparison when one was made.
 */
public final class SimJson {
  private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private SimJson() {}

  public static ObjectNode of(SimulationSuite.Result r, SlaTargets targets, List<PredictorComparison.Row> predictors) {
    ObjectNode root = JSON.createObjectNode();
    SimReport p = r.planner();
    root.put("trace", p.trace());
    root.put("requests", p.requests());
    root.put("duration_s", p.durationSeconds());
    root.putObject("sla").put("ttft_s", targets.ttftSeconds()).put("itl_s", targets.itlSeconds());
    root.put("sla_attainment", p.slaAttainment());
    root.put("sla_attainable", r.attainable());
    root.put("worker_seconds", p.workerSeconds());
    root.put("goodput_per_worker", p.goodputPerWorker());
    if (r.staticPeak() != null) {
      root.put("static_peak_worker_seconds", r.staticPeak().workerSeconds());
      root.put("static_peak_sla_attainment", r.staticPeak().slaAttainment());
      root.put("worker_seconds_vs_static_peak", p.workerSeconds() / r.staticPeak().workerSeconds());
      root.put("goodput_per_worker_vs_static_peak", p.goodputPerWorker() / r.staticPeak().goodputPerWorker());
      root.putObject("static_peak_pool").put("prefill", r.peakPrefill()).put("decode", r.peakDecode());
    }
    if (r.staticMean() != null) {
      root.put("static_mean_worker_seconds", r.staticMean().workerSeconds());
      root.put("goodput_per_worker_vs_static_mean", p.goodputPerWorker() / r.staticMean().goodputPerWorker());
    }
    root.put("simulated_seconds_per_wall_second", p.speedup());
    ArrayNode timeline = root.putArray("timeline"); // the planner run's, as its chart draws it
    for (SimReport.Sample s : p.timeline()) {
      timeline.addObject().put("t_s", s.time()).put("arrival_rps", s.arrivalRate())
          .put("prefill_ready", s.prefillReady()).put("decode_ready", s.decodeReady())
          .put("prefill_held", s.prefillHeld()).put("decode_held", s.decodeHeld())
          .put("ttft_p90_s", s.ttftP90()).put("itl_p90_s", s.itlP90()).put("finished", s.finished()).put("met", s.met());
    }
    ArrayNode runs = root.putArray("runs");
    for (SimReport s : SimulationSuite.all(r)) {
      if (s != null) {
        runs.add(run(s));
      }
    }
    if (predictors != null && !predictors.isEmpty()) {
      ArrayNode a = root.putArray("predictors");
      for (PredictorComparison.Row row : predictors) {
        a.addObject().put("predictor", row.predictor()).put("rate_mape", row.rateMape())
            .put("sla_attainment", row.report().slaAttainment()).put("worker_seconds", row.report().workerSeconds())
            .put("goodput_per_worker", row.report().goodputPerWorker());
      }
    }
    return root;
  }

  private static ObjectNode run(SimReport s) {
    ObjectNode o = JSON.createObjectNode();
    o.put("name", s.name());
    o.put("sla_attainment", s.slaAttainment());
    o.put("completed", s.completed());
    o.put("ttft_p50_s", s.ttftP50()).put("ttft_p90_s", s.ttftP90()).put("ttft_p99_s", s.ttftP99()).put("itl_p90_s", s.itlP90());
    o.put("goodput_rps", s.goodput());
    o.put("worker_seconds", s.workerSeconds());
    o.put("mean_workers", s.meanWorkers());
    o.put("peak_workers", s.peakWorkers());
    o.put("goodput_per_worker", s.goodputPerWorker());
    o.put("scale_events", s.scaleEvents());
    o.put("routing_decisions", s.routingDecisions());
    o.put("wall_s", s.wallSeconds());
    o.put("simulated_seconds_per_wall_second", s.speedup());
    return o;
  }

  public static void write(ObjectNode json, Path file) throws IOException {
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Files.writeString(file, JSON.writeValueAsString(json) + "\n");
  }
}
