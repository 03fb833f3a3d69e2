package dev.tandem.worker.role;

import dev.tandem.proto.worker.v1.PrefillEvent;
import dev.tandem.proto.worker.v1.PrefillMessage;
import io.grpc.stub.StreamObserver;

/**
 * The server side of the {@code Prefill} call, which the prefill role adds to the worker service.
 *
 * <p>Thread-safe: calls arrive on gRPC's transport threads.
 */
public interface PrefillEndpoint {
  /** Serves one {@code Prefill} call. */
  StreamObserver<PrefillMessage> open(StreamObserver<PrefillEvent> response);

  /** Calls in progress (tests: none may be left behind). */
  int inProgress();

  /** Calls that ended because the caller cancelled, failed or went away before releasing the blocks. */
  long abandoned();
}
