package dev.tandem.frontend.http;

import dev.tandem.common.FinishReason;
import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.TokenChunk;
import dev.tandem.common.TokenLogprob;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.openai.GenerationSpec;
import dev.tandem.router.Generation;
import dev.tandem.router.RequestRouter;
import dev.tandem.router.Route;
import dev.tandem.router.TokenListener;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Executor;

/**
 * The beam searches of one request in flight (vLLM's {@code use_beam_search}): a {@link
 * BeamSearch} per prompt, each step a one-token generation per live beam with its likeliest
 * alternatives, on the worker the router picks (the one caching the beam's prefix, usually). A
 * step that fails on its worker is tried again on another, at most {@code migrationLimit} times a
 * search. When every search is over, its {@link GenerationRun} writes the beams found back as the
 * choices ({@link GenerationRun#found}).
 *
 * <p>Threading: the request's event loop ({@code loop}) only; worker callbacks are posted there.
 */
final class BeamRun {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(BeamRun.class);

  /**
   * One prompt's search: the search itself, the calls of its current step and what they reported
   * so far, and what the first step's worker said of the prompt (its tokens, those it had cached,
   * who served it), which the choices' usage and timing show.
   */
  static final class Search {
    final int index;
    final int[] prompt;
    final BeamSearch beams;
    private int step; // the step whose callbacks count; 0 before the first
    private final List<Generation> calls = new ArrayList<>();
    private final List<String> workers = new ArrayList<>();
    private TokenLogprob[] results = new TokenLogprob[0];
    private int pending;
    private int retries;
    int promptTokens;
    int cachedTokens;
    TokenChunk.Origin origin;
    List<BeamSearch.Beam> best; // once the search is over: the sequences found, best first

    Search(int index, int[] prompt, BeamSearch beams) {
      this.index = index;
      this.prompt = prompt;
      this.beams = beams;
      this.promptTokens = prompt.length;
    }
  }

  private final GenerationRun run;
  private final GenerationSpec spec;
  private final RequestRouter router;
  private final FrontendMetrics metrics;
  private final Executor loop;
  private final String runId;
  private final int migrationLimit;
  private final List<Search> searches = new ArrayList<>();

  /** @param endTokens the tokens that end a beam (end-of-sequence unless ignored, the request's stop token ids) */
  BeamRun(GenerationRun run, GenerationSpec spec, int[] endTokens, RequestRouter router, FrontendMetrics metrics, Executor loop,
      String runId, int migrationLimit) {
    this.run = run;
    this.spec = spec;
    this.router = router;
    this.metrics = metrics;
    this.loop = loop;
    this.runId = runId;
    this.migrationLimit = migrationLimit;
    GenerationSpec.Beam beam = spec.beam();
    for (int p = 0; p < spec.prompts().size(); p++) {
      int[] prompt = spec.prompts().get(p);
      searches.add(new Search(p, prompt,
          new BeamSearch(prompt.length, beam.width(), beam.lengthPenalty(), spec.maxTokens(), spec.stop().minTokens(), endTokens)));
    }
  }

  /**
   * Routes and starts every search's first step.
   *
   * @throws ApiException if no worker can take it (nothing is left running then)
   */
  void start() {
    step(searches, true);
  }

  /** Stops every step in flight on the workers. */
  void cancel(String reason) {
    for (Search s : searches) {
      s.calls.forEach(call -> call.cancel(reason));
    }
  }

  /** The next step of each search in {@code which}, routed as one (all or none). */
  private void step(List<Search> which, boolean first) {
    if (run.isDone()) {
      return;
    }
    List<GenerationRequest> requests = new ArrayList<>();
    for (Search s : which) {
      for (int i = 0; i < s.beams.live().size(); i++) {
        requests.add(stepRequest(s, i, s.step + 1));
      }
    }
    List<Route> routes = run.routeAll(requests, () -> step(which, false), first);
    if (routes == null) {
      return;
    }
    run.dispatched();
    int r = 0;
    for (Search s : which) {
      int beams = s.beams.live().size();
      s.step++;
      s.results = new TokenLogprob[beams];
      s.pending = beams;
      s.calls.clear();
      s.workers.clear();
      for (int i = 0; i < beams; i++) {
        Route route = routes.get(r++);
        s.workers.add(route.worker().value());
        s.calls.add(route.start(listener(s, i, s.step)));
      }
    }
  }

  /** Beam {@code beam}'s next token: greedy, with the alternatives the search (and the request's logprobs) need, the request's tags. */
  private GenerationRequest stepRequest(Search s, int beam, int step) {
    SamplingParams sampling = SamplingParams.greedy().withLogprobs(Math.max(s.beams.alternatives(), spec.logprobs()));
    int[] sequence = BeamSearch.sequence(s.prompt, s.beams.live().get(beam));
    return run.tagged(new GenerationRequest(runId + "-" + s.index + "-s" + step + "-b" + beam, sequence, sampling,
        StopConditions.maxTokens(1)));
  }

  private TokenListener listener(Search s, int beam, int step) {
    return new TokenListener() {
      @Override
      public void onChunk(TokenChunk chunk) {
        loop.execute(() -> {
          if (s.step == step && !run.isDone()) {
            onChunkInLoop(s, beam, chunk);
          }
        });
      }

      @Override
      public void onError(GenerationException error) {
        loop.execute(() -> {
          if (s.step == step && !run.isDone() && s.results[beam] == null) {
            failed(s, beam, error);
          }
        });
      }

      @Override
      public void onCompleted() {
        loop.execute(() -> {
          if (s.step == step && !run.isDone() && s.results[beam] == null) {
            failed(s, beam, null);
          }
        });
      }
    };
  }

  private void onChunkInLoop(Search s, int beam, TokenChunk chunk) {
    if (chunk.origin() != null) {
      s.workers.set(beam, chunk.origin().workerId());
      if (s.step == 1) {
        s.origin = chunk.origin();
      }
    }
    if (s.step == 1 && chunk.promptTokens() > 0) { // the first step's prompt is the request's own
      s.promptTokens = chunk.promptTokens();
      s.cachedTokens = chunk.cachedTokens();
    }
    if (chunk.logprobCount() > 0) {
      s.results[beam] = chunk.logprobs()[0];
    }
    if (!chunk.finished()) {
      return;
    }
    if (chunk.finishReason() != FinishReason.STOP && chunk.finishReason() != FinishReason.LENGTH) {
      run.fail(GenerationErrors.endedByWorker(chunk.finishReason()));
      return;
    }
    if (s.results[beam] == null) {
      run.fail(new ApiException(500, "Worker " + s.workers.get(beam) + " ended a beam's step without its token's log-probabilities.",
          "server_error", null, null));
      return;
    }
    if (--s.pending > 0) {
      return;
    }
    s.beams.advance(Arrays.asList(s.results));
    if (!s.beams.done()) {
      step(List.of(s), false);
    } else if (searches.stream().allMatch(x -> x.beams.done())) {
      found();
    }
  }

  /** Every search is over: each must have found a sequence per choice, which the run then writes back. */
  private void found() {
    for (Search s : searches) {
      s.best = s.beams.best();
      if (s.best.size() < spec.n()) {
        run.fail(new ApiException(500, "The beam search found " + s.best.size() + " sequences for " + spec.n() + " choices.",
            "server_error", null, null));
        return;
      }
    }
    run.found(searches);
  }

  /** A beam's step failed on its worker: tried again on another where it may, else the request fails. */
  private void failed(Search s, int beam, GenerationException cause) {
    String worker = s.workers.get(beam);
    if (s.retries >= migrationLimit || spec.pinnedWorker() != null
        || (cause != null && cause.kind() == GenerationException.Kind.INVALID_REQUEST)) {
      run.fail(cause == null ? GenerationErrors.streamEndedEarly(worker) : GenerationErrors.worker(worker, cause));
      return;
    }
    Route route;
    try {
      route = router.route(stepRequest(s, beam, s.step), null);
    } catch (RuntimeException e) {
      run.fail(GenerationErrors.routing(e));
      return;
    }
    s.retries++;
    metrics.migration();
    log.info("request {} prompt {}: a beam's step failed on worker {} ({}); trying it on {}", runId, s.index, worker,
        cause == null ? "stream ended" : cause.getMessage(), route.worker());
    s.workers.set(beam, route.worker().value());
    s.calls.set(beam, route.start(listener(s, beam, s.step)));
  }
}
