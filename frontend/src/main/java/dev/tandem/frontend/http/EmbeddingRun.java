package dev.tandem.frontend.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.TokenChunk;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.openai.EmbeddingSpec;
import dev.tandem.router.Generation;
import dev.tandem.router.RequestRouter;
import dev.tandem.router.Route;
import dev.tandem.router.TokenListener;
import io.netty.channel.ChannelHandlerContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * One embeddings request in flight: per input, a one-token generation that asks its worker for the
 * input's embedding ({@link GenerationRequest#embed}: the final norm's output for its last token),
 * routed like any generation — all inputs or none, the KV router sending each to the worker that
 * caches its prefix — and tried again on another worker when its worker fails, at most {@code
 * migrationLimit} times a request. The vectors, each cut to {@code dimensions} and normalized as the
 * request asks ({@link #pooled}), are written back as its {@link Reply} says: OpenAI's list of
 * embeddings, the scores of a score or rerank request computed from them (or from a cross-encoder's
 * logits), or a classification request's class probabilities.
 *
 * <p>Threading: every method runs on the channel's event loop; worker callbacks are posted there.
 */
final class EmbeddingRun {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(EmbeddingRun.class);
  private final ChannelHandlerContext ctx;
  private final EmbeddingSpec spec;
  private final Reply reply;
  private final RequestRouter router;
  private final FrontendMetrics metrics;
  private final RunRouting routing;
  private final boolean keepAlive;
  private final long startNanos;
  private final int migrationLimit;
  private final Runnable onDone;
  private final String id; // the response's
  private final String runId; // its generations' on the workers
  private final float[][] vectors;
  private final int[] promptTokens;
  private final int[] cachedTokens;
  private final Generation[] calls;
  private final String[] workers;
  private final int[] attempts; // per input: which of its generations' callbacks count
  private int pending;
  private int retries;
  private boolean done;

  /** A finished run's body, from the pooled vectors (in input order), the response's id and the prompt tokens they took. */
  @FunctionalInterface
  interface Body {
    ObjectNode write(String id, List<float[]> pooled, long promptTokens);
  }

  /** What a run answers: through {@code endpoint} (the metrics' label), an id starting with {@code idPrefix}, the {@code body}. */
  record Reply(String endpoint, String idPrefix, Body body) {}

  EmbeddingRun(ChannelHandlerContext ctx, EmbeddingSpec spec, Reply reply, RequestRouter router, FrontendMetrics metrics,
      boolean keepAlive, long startNanos, Duration workerWait, int migrationLimit, Runnable onDone) {
    this.ctx = ctx;
    this.spec = spec;
    this.reply = reply;
    this.router = router;
    this.metrics = metrics;
    this.routing = new RunRouting(ctx, router, metrics, workerWait, spec.pinnedWorker());
    this.keepAlive = keepAlive;
    this.startNanos = startNanos;
    this.migrationLimit = migrationLimit;
    this.onDone = onDone;
    String random = UUID.randomUUID().toString().replace("-", "");
    this.id = reply.idPrefix() + (spec.requestId() != null ? spec.requestId() : random);
    this.runId = "embd-" + random;
    int n = spec.inputs().size();
    this.vectors = new float[n][];
    this.promptTokens = new int[n];
    this.cachedTokens = new int[n];
    this.calls = new Generation[n];
    this.workers = new String[n];
    this.attempts = new int[n];
  }

  /**
   * Routes and starts every input's generation.
   *
   * @throws ApiException if no worker can take them (nothing is left running then)
   */
  void start() {
    metrics.inflightChange(1);
    if (spec.lora() != null) {
      metrics.loraRequest(spec.lora());
    }
    attempt(true);
  }

  private void attempt(boolean first) {
    if (done) {
      return; // the client went away while waiting
    }
    List<GenerationRequest> requests = new ArrayList<>();
    for (int i = 0; i < vectors.length; i++) {
      requests.add(request(i));
    }
    List<Route> routes;
    try {
      routes = routing.routeAll(requests, () -> attempt(false));
    } catch (ApiException e) {
      if (first) {
        done = true;
        metrics.inflightChange(-1);
        throw e;
      }
      fail(e);
      return;
    }
    if (routes == null) {
      return;
    }
    pending = vectors.length;
    for (int i = 0; i < vectors.length; i++) {
      workers[i] = routes.get(i).worker().value();
      calls[i] = routes.get(i).start(listener(i, attempts[i]));
    }
  }

  /** Input {@code i}'s generation: greedy, one token (never returned), the embedding asked for, the request's adapter and priority. */
  private GenerationRequest request(int i) {
    String suffix = attempts[i] == 0 ? "" : "-m" + attempts[i];
    return new GenerationRequest(runId + "-" + i + suffix, spec.inputs().get(i), SamplingParams.greedy(), StopConditions.maxTokens(1))
        .withLora(spec.lora())
        .withPriority(spec.priority())
        .withEmbed(true);
  }

  private TokenListener listener(int i, int attempt) {
    return new TokenListener() {
      @Override
      public void onChunk(TokenChunk chunk) {
        ctx.executor().execute(() -> {
          if (attempts[i] == attempt && !done) {
            onChunkInLoop(i, chunk);
          }
        });
      }

      @Override
      public void onError(GenerationException error) {
        ctx.executor().execute(() -> {
          if (attempts[i] == attempt && !done && vectors[i] == null) {
            failed(i, error);
          }
        });
      }

      @Override
      public void onCompleted() {
        ctx.executor().execute(() -> {
          if (attempts[i] == attempt && !done && vectors[i] == null) {
            failed(i, null);
          }
        });
      }
    };
  }

  private void onChunkInLoop(int i, TokenChunk chunk) {
    if (chunk.origin() != null) {
      workers[i] = chunk.origin().workerId();
    }
    if (chunk.embedding() != null && vectors[i] == null) {
      vectors[i] = chunk.embedding();
      promptTokens[i] = chunk.promptTokens();
      cachedTokens[i] = chunk.cachedTokens();
    }
    if (!chunk.finished()) {
      return;
    }
    if (vectors[i] == null) {
      fail(new ApiException(500, "Worker " + workers[i] + " ended input " + i + "'s generation ("
          + chunk.finishReason().name().toLowerCase(java.util.Locale.ROOT) + ") without its embedding.", "server_error", null, null));
      return;
    }
    calls[i] = null;
    if (--pending == 0) {
      complete();
    }
  }

  /** Input {@code i}'s worker failed it: tried again on another where it may, else the request fails. */
  private void failed(int i, GenerationException cause) {
    String worker = workers[i];
    if (retries >= migrationLimit || spec.pinnedWorker() != null
        || (cause != null && cause.kind() == GenerationException.Kind.INVALID_REQUEST)) {
      fail(cause == null ? GenerationErrors.streamEndedEarly(worker) : GenerationErrors.worker(worker, cause));
      return;
    }
    attempts[i]++;
    Route route;
    try {
      route = router.route(request(i), null);
    } catch (RuntimeException e) {
      fail(GenerationErrors.routing(e));
      return;
    }
    retries++;
    metrics.migration();
    log.info("request {} input {}: worker {} failed ({}); trying it on {}", runId, i, worker,
        cause == null ? "stream ended" : cause.getMessage(), route.worker());
    workers[i] = route.worker().value();
    calls[i] = route.start(listener(i, attempts[i]));
  }

  private void complete() {
    List<float[]> pooled = new ArrayList<>();
    for (float[] v : vectors) {
      if (spec.dimensions() > v.length) {
        fail(ApiException.invalid("dimensions", "'dimensions' (" + spec.dimensions() + ") is more than this model's embedding has ("
            + v.length + ")."));
        return;
      }
      pooled.add(pooled(v, spec.dimensions(), spec.normalize()));
    }
    done = true;
    long prompt = 0;
    long cached = 0;
    for (int i = 0; i < vectors.length; i++) {
      prompt += promptTokens[i];
      cached += cachedTokens[i];
    }
    HttpResponses.json(ctx, 200, reply.body().write(id, pooled, prompt), keepAlive).addListener(SseWriter.closeUnlessKeepAlive(keepAlive));
    metrics.tokens(prompt, cached, 0);
    end(200);
  }

  /**
   * The embedding a client gets from a hidden state: its first {@code dimensions} values (all when
   * 0, a Matryoshka model's truncation), then scaled to unit length where {@code normalize} (as
   * vLLM's pooler: after the cut; a zero vector stays zero).
   */
  static float[] pooled(float[] hidden, int dimensions, boolean normalize) {
    float[] v = java.util.Arrays.copyOf(hidden, dimensions == 0 ? hidden.length : dimensions);
    if (normalize) {
      double sum = 0;
      for (float x : v) {
        sum += (double) x * x;
      }
      double norm = Math.max(Math.sqrt(sum), 1e-12);
      for (int k = 0; k < v.length; k++) {
        v[k] = (float) (v[k] / norm);
      }
    }
    return v;
  }

  /** Fails the whole request: stops every input's generation and tells the client. */
  private void fail(ApiException error) {
    if (done) {
      return;
    }
    done = true;
    cancelAll("request failed");
    HttpResponses.error(ctx, error, keepAlive).addListener(SseWriter.closeUnlessKeepAlive(keepAlive));
    end(error.status());
  }

  /** The client went away: stop every generation on the workers. */
  void clientGone() {
    if (done) {
      return;
    }
    done = true;
    routing.stopWaiting();
    cancelAll("client disconnected");
    metrics.disconnect();
    end(499);
  }

  private void cancelAll(String reason) {
    for (Generation call : calls) {
      if (call != null) {
        call.cancel(reason);
      }
    }
  }

  private void end(int status) {
    metrics.runEnded(reply.endpoint(), status, System.nanoTime() - startNanos);
    onDone.run();
  }
}
