package dev.tandem.worker;

import dev.tandem.common.WorkerId;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts the worker's calls that carry work (Generate, and Prefill on a prefill worker) from their
 * start to their end, and once draining refuses new ones with UNAVAILABLE, which routers take as
 * "send it elsewhere" (nothing was computed). Every other call (Describe, load, events, health) keeps
 * being served while the worker drains.
 *
 * <p>Thread-safe: calls start and end on gRPC transport threads.
 */
final class CallGate implements ServerInterceptor {
  private static final Set<String> WORK =
      Set.of(WorkerGrpc.getGenerateMethod().getFullMethodName(), WorkerGrpc.getPrefillMethod().getFullMethodName());

  private final WorkerId workerId;
  private final AtomicInteger inFlight = new AtomicInteger();
  private volatile boolean draining;

  CallGate(WorkerId workerId) {
    this.workerId = workerId;
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    if (!WORK.contains(call.getMethodDescriptor().getFullMethodName())) {
      return next.startCall(call, headers);
    }
    // Counted before the check, so that a drain that begins now waits for this call or refuses it.
    inFlight.incrementAndGet();
    if (draining) {
      inFlight.decrementAndGet();
      call.close(Status.UNAVAILABLE.withDescription(refusal()), new Metadata());
      return new ServerCall.Listener<>() {};
    }
    AtomicBoolean ended = new AtomicBoolean();
    Runnable end = () -> {
      if (ended.compareAndSet(false, true)) {
        inFlight.decrementAndGet();
      }
    };
    ServerCall.Listener<Q> listener;
    try {
      listener = next.startCall(call, headers);
    } catch (RuntimeException e) {
      end.run();
      throw e;
    }
    return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
      @Override
      public void onComplete() {
        try {
          super.onComplete();
        } finally {
          end.run();
        }
      }

      @Override
      public void onCancel() {
        try {
          super.onCancel();
        } finally {
          end.run();
        }
      }
    };
  }

  String refusal() {
    return "worker " + workerId + " is draining and takes no new requests";
  }

  /** From now on, new work is refused. */
  void startDraining() {
    draining = true;
  }

  boolean draining() {
    return draining;
  }

  /** Generate and Prefill calls started and not yet ended. */
  int inFlight() {
    return inFlight.get();
  }

  /** Waits until no work call is in flight, or {@code timeout} passes; true if none is. */
  boolean awaitIdle(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (inFlight.get() > 0) {
      if (System.nanoTime() >= deadline) {
        return false;
      }
      Thread.sleep(20);
    }
    return true;
  }
}
