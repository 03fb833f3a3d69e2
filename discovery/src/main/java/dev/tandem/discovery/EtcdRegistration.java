package dev.tandem.discovery;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.options.PutOption;
import io.grpc.Status;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One worker's key under a lease, kept alive: grant a lease, put the key with it, then renew it
 * every third of its TTL. When etcd is unreachable it retries with backoff (the key lives on until
 * the lease runs out); when the lease is gone (expired while etcd was away, or revoked) it grants a
 * new one and puts the key again.
 *
 * <p>Thread-safe; its state is touched only on the discovery's scheduler, one tick at a time.
 */
final class EtcdRegistration implements Registration {
  private static final Logger log = LoggerFactory.getLogger(EtcdRegistration.class);
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(3);
  private static final Duration FIRST_BACKOFF = Duration.ofMillis(250);

  private final EtcdDiscovery etcd;
  private final WorkerRecord record;
  private final ByteSequence key;
  private final ByteSequence value;
  private final Duration renewEvery;
  private long leaseId; // 0: none
  private Duration backoff = FIRST_BACKOFF;
  private boolean warnedUnreachable;
  private ScheduledFuture<?> next;
  private volatile boolean registered;
  private volatile boolean closed;

  EtcdRegistration(EtcdDiscovery etcd, WorkerRecord record) {
    this.etcd = etcd;
    this.record = record;
    this.key = etcd.key(record.workerId());
    this.value = ByteSequence.from(WorkerRecordJson.encode(record));
    this.renewEvery = etcd.ttl().dividedBy(3);
  }

  void start() {
    schedule(Duration.ZERO);
  }

  private synchronized void schedule(Duration delay) {
    if (!closed) {
      next = etcd.scheduler().schedule(this::tick, delay.toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  private synchronized void tick() {
    if (closed) {
      return;
    }
    try {
      if (leaseId == 0) {
        long id = etcd.client().getLeaseClient().grant(etcd.ttl().toSeconds()).get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).getID();
        etcd.client().getKVClient().put(key, value, PutOption.builder().withLeaseId(id).build())
            .get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        leaseId = id;
        registered = true;
        log.info("registered worker {} in {} (lease {} s, id {})", record.workerId(), etcd.describe(), etcd.ttl().toSeconds(), Long.toHexString(id));
      } else {
        LeaseKeepAliveResponse r = etcd.client().getLeaseClient().keepAliveOnce(leaseId).get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        if (r.getTTL() <= 0) {
          leaseLost();
          return;
        }
        registered = true;
      }
      if (warnedUnreachable) {
        log.info("etcd at {} reachable again; worker {} is registered", etcd.endpointList(), record.workerId());
        warnedUnreachable = false;
      }
      backoff = FIRST_BACKOFF;
      schedule(renewEvery);
    } catch (ExecutionException e) {
      if (leaseNotFound(e.getCause())) {
        leaseLost();
      } else {
        retryLater(e.getCause());
      }
    } catch (TimeoutException e) {
      retryLater(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void leaseLost() {
    log.warn("worker {}'s etcd lease {} is gone (it expired while etcd was unreachable, or was revoked); registering again",
        record.workerId(), Long.toHexString(leaseId));
    leaseId = 0;
    registered = false;
    schedule(Duration.ZERO);
  }

  private void retryLater(Throwable why) {
    if (!warnedUnreachable || backoff.compareTo(renewEvery) >= 0) {
      log.warn("cannot reach etcd at {} to {} worker {} ({}); retrying in {} ms",
          etcd.endpointList(), leaseId == 0 ? "register" : "renew the lease of", record.workerId(),
          why.getMessage(), backoff.toMillis());
      warnedUnreachable = true;
    }
    schedule(backoff);
    backoff = min(backoff.multipliedBy(2), renewEvery);
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  static boolean leaseNotFound(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      Status s = Status.fromThrowable(c);
      if (s.getCode() == Status.Code.NOT_FOUND) {
        return true;
      }
      String m = c.getMessage();
      if (m != null && m.contains("requested lease not found")) {
        return true;
      }
    }
    return false;
  }

  @Override
  public WorkerRecord record() {
    return record;
  }

  @Override
  public boolean registered() {
    return registered && !closed;
  }

  /** Leaves: revokes the lease, which deletes the key. */
  @Override
  public void close() {
    long id;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      registered = false;
      if (next != null) {
        next.cancel(false);
      }
      id = leaseId;
    }
    etcd.forget(this);
    if (id == 0) {
      return;
    }
    try {
      etcd.client().getLeaseClient().revoke(id).get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      log.info("worker {} left {}", record.workerId(), etcd.describe());
    } catch (Exception e) {
      log.warn("worker {} could not revoke its etcd lease ({}); its key goes when the lease expires in at most {} s",
          record.workerId(), e.getMessage(), etcd.ttl().toSeconds());
    }
  }

  /** Stops renewing without revoking, as a process that dies would: the key goes with the lease. */
  synchronized void abandon() {
    closed = true;
    registered = false;
    if (next != null) {
      next.cancel(false);
    }
  }
}
