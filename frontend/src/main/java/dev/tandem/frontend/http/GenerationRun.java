package dev.tandem.frontend.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.model.IncrementalDetokenizer;
import dev.tandem.frontend.model.StopStrings;
import dev.tandem.frontend.openai.GenerationSpec;
import dev.tandem.frontend.openai.ResponseJson;
import dev.tandem.proto.worker.v1.FinishReason;
import dev.tandem.proto.worker.v1.GenerateChunk;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.SamplingParams;
import dev.tandem.proto.worker.v1.StopConditions;
import dev.tandem.router.grpc.Router;
import dev.tandem.router.grpc.WorkerClient;
import io.grpc.Status;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * One chat or text completion request in flight: a generation per choice on the workers the router
 * picks, detokenized and checked for stop strings as tokens arrive, written back as SSE chunks or
 * one JSON body.
 *
 * <p>Threading: every method runs on the channel's event loop; worker callbacks are posted there,
 * so the state below needs no locks.
 */
final class GenerationRun {
  private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);

  private final ChannelHandlerContext ctx;
  private final GenerationSpec spec;
  private final ServedModel model;
  private final Router router;
  private final FrontendMetrics metrics;
  private final boolean keepAlive;
  private final long startNanos;
  private final Runnable onDone;
  private final String id;
  private final long created = System.currentTimeMillis() / 1000;
  private final Choice[] choices;
  private boolean headersSent;
  private boolean done;
  private int finished;
  private long firstTokenNanos = -1;
  private long itlCount;
  private long itlSumNanos;
  private long itlMaxNanos;

  /** One generated sequence. */
  private final class Choice {
    final int index;
    final int[] prompt;
    final IncrementalDetokenizer detokenizer;
    final StopStrings stops;
    final StringBuilder text = new StringBuilder();
    WorkerClient.GenerationCall call;
    String finishReason;
    int tokens;
    int promptTokens;
    int cachedTokens;
    String workerId;
    long workerTtftUs = -1;
    String prefillWorkerId;
    String prefillFallback;
    dev.tandem.router.SplitPolicy.Decision splitDecision;
    long kvTransferUs = -1;
    long kvTransferBytes;
    long kvExposedUs;
    long lastTokenNanos = -1;
    int predictedOverlapBlocks;
    final List<ResponseJson.LogprobEntry> logprobs = new ArrayList<>(); // not yet sent (stream) or all
    int logprobTextOffset; // completions: text offset of the first entry in logprobs

    Choice(int index, int[] prompt) {
      this.index = index;
      this.prompt = prompt;
      this.detokenizer =
          new IncrementalDetokenizer(model.tokenizer(), tail(prompt), spec.skipSpecialTokens());
      this.stops = new StopStrings(spec.stopStrings());
      this.promptTokens = prompt.length;
    }
  }

  GenerationRun(
      ChannelHandlerContext ctx,
      GenerationSpec spec,
      ServedModel model,
      Router router,
      FrontendMetrics metrics,
      boolean keepAlive,
      long startNanos,
      Runnable onDone) {
    this.ctx = ctx;
    this.spec = spec;
    this.model = model;
    this.router = router;
    this.metrics = metrics;
    this.keepAlive = keepAlive;
    this.startNanos = startNanos;
    this.onDone = onDone;
    this.id = (spec.kind() == GenerationSpec.Kind.CHAT ? "chatcmpl-" : "cmpl-") + UUID.randomUUID().toString().replace("-", "");
    this.choices = new Choice[spec.choiceCount()];
    for (int p = 0; p < spec.prompts().size(); p++) {
      for (int j = 0; j < spec.n(); j++) {
        int index = p * spec.n() + j;
        choices[index] = new Choice(index, spec.prompts().get(p));
      }
    }
  }

  private static int[] tail(int[] prompt) {
    return Arrays.copyOfRange(prompt, Math.max(0, prompt.length - 6), prompt.length);
  }

  boolean isDone() {
    return done;
  }

  /**
   * Routes and starts every choice.
   *
   * @throws ApiException if no worker can take the request (nothing is left running then)
   */
  void start() {
    metrics.inflightChange(1);
    try {
      for (Choice c : choices) {
        GenerateRequest request = request(c);
        Router.Routed routed = route(request);
        c.predictedOverlapBlocks = routed.predictedOverlap().blocks();
        c.splitDecision = routed.decision();
        try {
          c.call = routed.start(listener(c));
        } catch (RuntimeException e) {
          routed.release();
          throw e;
        }
      }
    } catch (RuntimeException e) {
      cancelAll("routing failed");
      metrics.inflightChange(-1);
      done = true;
      throw e instanceof ApiException api ? api : routingError(e);
    }
    if (spec.stream()) {
      sendHeaders();
      if (spec.kind() == GenerationSpec.Kind.CHAT) {
        for (Choice c : choices) {
          writeEvent(ResponseJson.chunk(spec.kind(), id, created, spec.model(), c.index, "assistant", "", null));
        }
        ctx.flush();
      }
    }
  }

  private ApiException routingError(RuntimeException e) {
    if (e instanceof Router.NoWorkerAvailableException) {
      return new ApiException(503, "No worker can serve this request now: " + e.getMessage() + ".", "service_unavailable", null, null);
    }
    return new ApiException(500, "Routing failed: " + e.getMessage(), "server_error", null, null);
  }

  private Router.Routed route(GenerateRequest request) {
    try {
      return router.route(request, spec.pinnedWorker());
    } catch (IllegalArgumentException e) {
      throw ApiException.invalid("tandem.worker_id", "No reachable worker has id '" + spec.pinnedWorker() + "'.");
    }
  }

  private GenerateRequest request(Choice c) {
    GenerationSpec.Sampling s = spec.sampling();
    SamplingParams.Builder sampling =
        SamplingParams.newBuilder()
            .setTemperature(s.temperature())
            .setTopP(s.topP())
            .setTopK(s.topK())
            .setMinP(s.minP())
            .setPresencePenalty(s.presencePenalty())
            .setFrequencyPenalty(s.frequencyPenalty())
            .setRepetitionPenalty(s.repetitionPenalty());
    if (spec.logprobs() >= 0) {
      sampling.setLogprobs(spec.logprobs());
    }
    // n > 1 with a seed: each choice gets its own reproducible stream.
    s.seed().ifPresent(seed -> sampling.setSeed(seed + (c.index % spec.n())));
    StopConditions.Builder stop =
        StopConditions.newBuilder().setMaxTokens(spec.maxTokens()).setIgnoreEos(spec.ignoreEos());
    for (int t : spec.stopTokenIds()) {
      stop.addStopTokenIds(t);
    }
    GenerateRequest.Builder b =
        GenerateRequest.newBuilder()
            .setRequestId(id + "-" + c.index)
            .setSampling(sampling)
            .setStop(stop);
    for (int t : c.prompt) {
      b.addTokenIds(t);
    }
    return b.build();
  }

  private WorkerClient.GenerationListener listener(Choice c) {
    return new WorkerClient.GenerationListener() {
      @Override
      public void onChunk(GenerateChunk chunk) {
        ctx.executor().execute(() -> onChunkInLoop(c, chunk));
      }

      @Override
      public void onError(Throwable error) {
        ctx.executor().execute(() -> onErrorInLoop(c, error));
      }

      @Override
      public void onCompleted() {
        ctx.executor()
            .execute(
                () -> {
                  if (!done && c.finishReason == null) {
                    onErrorInLoop(c, new IllegalStateException("the worker ended the stream without finishing"));
                  }
                });
      }
    };
  }

  private void onChunkInLoop(Choice c, GenerateChunk chunk) {
    if (done || c.finishReason != null) {
      return;
    }
    if (!chunk.getWorkerId().isEmpty()) {
      c.workerId = chunk.getWorkerId();
      c.workerTtftUs = chunk.getWorkerTtftUs();
      if (!chunk.getPrefillWorkerId().isEmpty()) {
        c.prefillWorkerId = chunk.getPrefillWorkerId();
        c.kvTransferUs = chunk.getKvTransferUs();
        c.kvTransferBytes = chunk.getKvTransferBytes();
        c.kvExposedUs = chunk.getKvExposedUs();
      }
      if (!chunk.getPrefillFallback().isEmpty()) {
        c.prefillFallback = chunk.getPrefillFallback();
        metrics.remotePrefillFallback();
      }
    }
    if (chunk.getPromptTokens() > 0) {
      c.promptTokens = chunk.getPromptTokens();
      c.cachedTokens = chunk.getCachedTokens();
    }
    long now = System.nanoTime();
    StringBuilder out = new StringBuilder();
    for (int k = 0; k < chunk.getTokenIdsCount(); k++) {
      int token = chunk.getTokenIds(k);
      if (k < chunk.getLogprobsCount()) {
        c.logprobs.add(logprobEntry(token, chunk.getLogprobs(k)));
      }
      c.tokens++;
      if (firstTokenNanos < 0) {
        firstTokenNanos = now;
        metrics.ttft(now - startNanos);
      }
      if (c.lastTokenNanos >= 0) {
        long gap = now - c.lastTokenNanos;
        metrics.itl(gap);
        itlCount++;
        itlSumNanos += gap;
        itlMaxNanos = Math.max(itlMaxNanos, gap);
      }
      c.lastTokenNanos = now;
      out.append(c.stops.add(c.detokenizer.add(token)));
      if (c.stops.stopped()) {
        c.call.cancel("stop string matched");
        emit(c, out.toString());
        finish(c, "stop");
        return;
      }
    }
    FinishReason reason = chunk.getFinishReason();
    if (reason != FinishReason.FINISH_REASON_UNSPECIFIED) {
      out.append(c.stops.add(c.detokenizer.flush()));
      out.append(c.stops.flush());
      emit(c, out.toString());
      switch (reason) {
        case FINISH_REASON_STOP -> finish(c, "stop");
        case FINISH_REASON_LENGTH -> finish(c, "length");
        default -> fail(new ApiException(500, "The worker ended the request: " + reason + ".", "server_error", null, null));
      }
      return;
    }
    emit(c, out.toString());
  }

  private void onErrorInLoop(Choice c, Throwable error) {
    if (done || c.finishReason != null) {
      return;
    }
    Status status = Status.fromThrowable(error);
    String worker = c.workerId == null ? "the worker" : "worker " + c.workerId;
    ApiException api =
        switch (status.getCode()) {
          case INVALID_ARGUMENT -> ApiException.invalid(null, status.getDescription());
          case UNAVAILABLE, CANCELLED, DEADLINE_EXCEEDED ->
              new ApiException(503, worker + " failed while serving this request: " + status.getCode() + " " + nullToEmpty(status.getDescription()), "service_unavailable", null, null);
          default -> new ApiException(500, worker + " failed: " + status.getCode() + " " + nullToEmpty(status.getDescription()), "server_error", null, null);
        };
    fail(api);
  }

  private static String nullToEmpty(String s) {
    return s == null ? "" : s;
  }

  private ResponseJson.LogprobEntry logprobEntry(int token, dev.tandem.proto.worker.v1.TokenLogprob lp) {
    List<ResponseJson.Alternative> top = new ArrayList<>();
    for (int i = 0; i < lp.getTopTokenIdsCount(); i++) {
      top.add(new ResponseJson.Alternative(tokenText(lp.getTopTokenIds(i)), lp.getTopLogprobs(i)));
    }
    return new ResponseJson.LogprobEntry(tokenText(token), lp.getLogprob(), top);
  }

  /** One token on its own, as logprobs show it (a part of a character decodes to U+FFFD). */
  private String tokenText(int token) {
    return model.tokenizer().decode(new int[] {token}, false);
  }

  /** Attaches the log-probabilities not yet sent to a streamed chunk's choice. */
  private void attachLogprobs(Choice c, ObjectNode chunk) {
    if (c.logprobs.isEmpty()) {
      return;
    }
    ((ObjectNode) chunk.get("choices").get(0)).set("logprobs", ResponseJson.logprobs(spec.kind(), c.logprobs, c.logprobTextOffset));
    for (ResponseJson.LogprobEntry e : c.logprobs) {
      c.logprobTextOffset += e.token().length();
    }
    c.logprobs.clear();
  }

  private void emit(Choice c, String text) {
    if (text.isEmpty()) {
      return;
    }
    if (spec.stream()) {
      ObjectNode chunk = ResponseJson.chunk(spec.kind(), id, created, spec.model(), c.index, null, text, null);
      attachLogprobs(c, chunk);
      writeEvent(chunk);
      ctx.flush();
    } else {
      c.text.append(text);
    }
  }

  private void finish(Choice c, String reason) {
    c.finishReason = reason;
    finished++;
    boolean last = finished == choices.length;
    if (spec.stream()) {
      ObjectNode chunk = ResponseJson.chunk(spec.kind(), id, created, spec.model(), c.index, null, null, reason);
      if (spec.kind() == GenerationSpec.Kind.CHAT) {
        ((ObjectNode) chunk.get("choices").get(0)).putObject("delta");
      }
      attachLogprobs(c, chunk);
      if (last && spec.timing()) {
        chunk.set("tandem", timing());
      }
      writeEvent(chunk);
    }
    if (last) {
      complete();
    } else if (spec.stream()) {
      ctx.flush();
    }
  }

  private void complete() {
    done = true;
    ResponseJson.Usage usage = usage();
    if (spec.stream()) {
      if (spec.includeUsage()) {
        writeEvent(ResponseJson.usageChunk(spec.kind(), id, created, spec.model(), usage));
      }
      ctx.write(new DefaultHttpContent(Unpooled.wrappedBuffer(DONE)));
      ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT).addListener(closeUnlessKeepAlive());
    } else {
      List<ResponseJson.ChoiceResult> results = new ArrayList<>();
      for (Choice c : choices) {
        ObjectNode logprobs = spec.logprobs() < 0 ? null : ResponseJson.logprobs(spec.kind(), c.logprobs, 0);
        results.add(new ResponseJson.ChoiceResult(c.index, c.text.toString(), c.finishReason, logprobs));
      }
      ObjectNode body = ResponseJson.response(spec.kind(), id, created, spec.model(), results, usage);
      if (spec.timing()) {
        body.set("tandem", timing());
      }
      HttpResponses.json(ctx, 200, body, keepAlive).addListener(closeUnlessKeepAlive());
    }
    metrics.tokens(usage.promptTokens(), usage.cachedTokens(), usage.completionTokens());
    long predicted = 0;
    for (Choice c : choices) {
      predicted += (long) c.predictedOverlapBlocks * router.pool().blockSize();
    }
    metrics.predictedOverlap(predicted);
    end(200);
  }

  private ResponseJson.Usage usage() {
    long prompt = 0;
    long cached = 0;
    long completion = 0;
    for (Choice c : choices) {
      completion += c.tokens;
      if (c.index % spec.n() == 0) {
        prompt += c.promptTokens;
        cached += c.cachedTokens;
      }
    }
    return new ResponseJson.Usage(prompt, completion, cached);
  }

  private ObjectNode timing() {
    ObjectNode t = ResponseJson.JSON.createObjectNode();
    Set<String> workers = new LinkedHashSet<>();
    long workerTtftUs = -1;
    for (Choice c : choices) {
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
    for (Choice c : choices) {
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
    dev.tandem.router.SplitPolicy.Decision decision = choices[0].splitDecision;
    if (decision != null) {
      ObjectNode d = t.putObject("split_decision");
      d.put("split", decision.split()).put("reason", decision.reason());
      if (!Double.isNaN(decision.localSeconds())) {
        d.put("local_s", decision.localSeconds()).put("remote_s", decision.remoteSeconds()).put("transfer_s", decision.transferSeconds());
      }
    }
    t.put("ttft_ms", firstTokenNanos < 0 ? -1 : (firstTokenNanos - startNanos) / 1e6);
    t.put("worker_ttft_ms", workerTtftUs < 0 ? -1 : workerTtftUs / 1e3);
    t.put("itl_ms_mean", itlCount == 0 ? 0 : itlSumNanos / 1e6 / itlCount);
    t.put("itl_ms_max", itlMaxNanos / 1e6);
    t.put("total_ms", (System.nanoTime() - startNanos) / 1e6);
    return t;
  }

  /** Fails the whole request: cancels every choice and tells the client. */
  void fail(ApiException error) {
    if (done) {
      return;
    }
    done = true;
    cancelAll("request failed");
    if (headersSent) {
      writeEvent(ResponseJson.error(error));
      ctx.write(new DefaultHttpContent(Unpooled.wrappedBuffer(DONE)));
      ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT).addListener(closeUnlessKeepAlive());
    } else {
      HttpResponses.error(ctx, error, keepAlive).addListener(closeUnlessKeepAlive());
    }
    end(error.status());
  }

  /** The client went away: stop every generation on the workers. */
  void clientGone() {
    if (done) {
      return;
    }
    done = true;
    cancelAll("client disconnected");
    metrics.disconnect();
    end(499);
  }

  private void cancelAll(String reason) {
    for (Choice c : choices) {
      if (c.call != null && c.finishReason == null) {
        c.call.cancel(reason);
      }
    }
  }

  private void end(int status) {
    metrics.inflightChange(-1);
    metrics.duration(System.nanoTime() - startNanos);
    metrics.requestFinished(spec.kind() == GenerationSpec.Kind.CHAT ? "chat_completions" : "completions", status);
    onDone.run();
  }

  private void sendHeaders() {
    HttpResponse response = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
    response.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream; charset=utf-8");
    response.headers().set(HttpHeaderNames.CACHE_CONTROL, "no-cache");
    HttpUtil.setTransferEncodingChunked(response, true);
    HttpUtil.setKeepAlive(response, keepAlive);
    ctx.write(response);
    headersSent = true;
  }

  private void writeEvent(ObjectNode node) {
    if (spec.includeUsage() && !node.has("usage") && !node.has("error")) {
      node.putNull("usage");
    }
    byte[] json = ResponseJson.bytes(node);
    byte[] event = new byte[json.length + 8];
    System.arraycopy("data: ".getBytes(StandardCharsets.US_ASCII), 0, event, 0, 6);
    System.arraycopy(json, 0, event, 6, json.length);
    event[event.length - 2] = '\n';
    event[event.length - 1] = '\n';
    ctx.write(new DefaultHttpContent(Unpooled.wrappedBuffer(event)));
  }

  private ChannelFutureListener closeUnlessKeepAlive() {
    return keepAlive ? f -> {} : ChannelFutureListener.CLOSE;
  }
}
