package dev.tandem.worker;

import dev.tandem.common.GenerationException;
import dev.tandem.common.TokenChunk;
import dev.tandem.common.WorkerId;
import dev.tandem.engine.RequestOutput;
import dev.tandem.proto.worker.v1.GenerateChunk;
import dev.tandem.wire.ToWire;
import dev.tandem.worker.role.PrefillOutcome;
import dev.tandem.worker.role.PrefillSink;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One {@code Generate} call's output stream: turns the engine's outputs for the request into
 * {@link TokenChunk}s (the first naming this worker, its TTFT and the prefill outcome) and sends
 * them; a failure ends the call with the matching status.
 *
 * <p>Threading: outputs arrive on the engine loop; {@link #outcome} may come from a pull's thread
 * before the first output; {@link #done} is read by the cancel handler on a gRPC thread.
 */
final class GenerateStream implements PrefillSink {
  private static final Logger log = LoggerFactory.getLogger(GenerateStream.class);

  private final AtomicBoolean done = new AtomicBoolean();
  private final String id;
  private final WorkerId workerId;
  private final ServerCallStreamObserver<GenerateChunk> call;
  private final long receivedNanos;
  private volatile PrefillOutcome outcome;
  private boolean first = true;

  GenerateStream(String id, WorkerId workerId, ServerCallStreamObserver<GenerateChunk> call, long receivedNanos) {
    this.id = id;
    this.workerId = workerId;
    this.call = call;
    this.receivedNanos = receivedNanos;
  }

  /** True once the request finished or failed: a later cancel has nothing to abort. */
  boolean done() {
    return done.get();
  }

  @Override
  public void outcome(PrefillOutcome outcome) {
    this.outcome = outcome;
  }

  @Override
  public void onOutput(RequestOutput output) {
    if (call.isCancelled()) {
      return;
    }
    TokenChunk.Origin origin = null;
    int promptTokens = 0;
    int cachedTokens = 0;
    if (first) {
      first = false;
      PrefillOutcome o = outcome;
      long ttftMicros = (System.nanoTime() - receivedNanos) / 1_000;
      origin =
          o == null
              ? new TokenChunk.Origin(workerId.value(), ttftMicros, "", "", 0, 0, 0)
              : new TokenChunk.Origin(
                  workerId.value(), ttftMicros, o.prefillWorkerId(), o.fallbackReason(), o.transferMicros(), o.transferBytes(), o.exposedMicros());
      promptTokens = output.promptTokens();
      cachedTokens = output.cachedTokens();
    }
    if (output.finished()) {
      done.set(true);
      if (output.promptTokens() > 0) {
        promptTokens = output.promptTokens();
        cachedTokens = output.cachedTokens();
      }
    }
    TokenChunk chunk = new TokenChunk(
        output.newTokens(), output.logprobs(), output.finishReason(), promptTokens, cachedTokens, origin, output.promptLogprobs(),
        output.embedding());
    try {
      call.onNext(ToWire.chunk(chunk));
      if (output.finished()) {
        call.onCompleted();
      }
    } catch (RuntimeException e) {
      log.debug("generate stream {} closed while sending", id, e);
    }
  }

  @Override
  public void onFailure(RuntimeException error) {
    done.set(true);
    GenerationException.Kind kind =
        error instanceof IllegalArgumentException ? GenerationException.Kind.INVALID_REQUEST : GenerationException.Kind.UNAVAILABLE;
    try {
      call.onError(ToWire.status(kind, error.getMessage()));
    } catch (RuntimeException e) {
      log.debug("generate stream {} closed before its error", id, e);
    }
  }
}
