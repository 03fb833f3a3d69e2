package dev.tandem.worker.role;

import dev.tandem.engine.EngineRequest;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.LinkFigures;
import dev.tandem.proto.worker.v1.RemotePrefill;

/**
 * The decode side of disaggregation, which the decode role (and a transfer-enabled aggregated
 * worker) adds to the worker service: has a prefill worker compute a prompt, pulls its KV, and
 * decodes; falls back to a local prefill on any failure. Also measures links for the router.
 *
 * <p>Thread-safe.
 */
public interface RemotePrefillClient extends AutoCloseable {
  /** Starts serving {@code request} with its prompt prefilled by {@code remote}. */
  void start(EngineRequest request, GenerateRequest wire, RemotePrefill remote, PrefillSink sink);

  /**
   * Cancels a pull in progress (the client went away).
   *
   * @return false if no pull of that request is in progress (it may be decoding: abort it there)
   */
  boolean cancel(String requestId);

  /** Measures the KV link to the worker at {@code peerAddress} over {@code backend} (empty: this worker's primary). */
  LinkFigures probe(String peerAddress, String backend) throws Exception;

  /** Requests this worker prefilled itself although they came with a remote prefill. */
  long fallbacks();

  /** Pulls in progress. */
  int inProgress();

  @Override
  void close();
}
