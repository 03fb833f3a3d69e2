package dev.tandem.discovery;

/**
 * A worker's presence in discovery, kept alive until closed. Closing leaves discovery at once
 * (etcd: the lease is revoked, so its key goes with it); a process that dies without closing
 * leaves when its lease expires.
 */
public interface Registration extends AutoCloseable {
  /** The record registered. */
  WorkerRecord record();

  /** True while the backend holds the record (etcd: the key is put under a live lease). */
  boolean registered();

  /** Leaves discovery. Idempotent. */
  @Override
  void close();
}
