package dev.tandem.discovery;

import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch.Watcher;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Follows the worker prefix: reads it whole, then watches from the next revision. When the watch
 * fails (etcd restarted, the revision was compacted, the connection dropped) it keeps the last known
 * set and reads again with backoff, so a worker that came or went meanwhile is seen once etcd
 * answers. A key that is not a worker record (malformed JSON, a foreign key, an id that differs from
 * the key) is logged and skipped.
 *
 * <p>Thread-safe. The set and the listener belong to the watch's own thread.
 */
final class EtcdWatch implements Watch {
  private static final Logger log = LoggerFactory.getLogger(EtcdWatch.class);
  private static final Duration CALL_TIMEOUT = Duration.ofSeconds(3);
  private static final Duration FIRST_BACKOFF = Duration.ofMillis(250);
  private static final Duration MAX_BACKOFF = Duration.ofSeconds(5);

  private final EtcdDiscovery etcd;
  private final WorkerSet set;
  private final ExecutorService thread =
      Executors.newSingleThreadExecutor(Thread.ofPlatform().name("etcd-discovery-watch").daemon().factory());
  private Watcher watcher;
  private long epoch; // which read a jetcd callback belongs to; stale ones are dropped
  private Duration backoff = FIRST_BACKOFF;
  private volatile boolean connected;
  private boolean everConnected; // watch thread only
  private volatile boolean closed;

  EtcdWatch(EtcdDiscovery etcd, WorkerSetListener listener) {
    this.etcd = etcd;
    this.set = new WorkerSet(listener);
  }

  void start() {
    run(this::resync);
  }

  private void run(Runnable task) {
    try {
      thread.execute(task);
    } catch (RejectedExecutionException closedAlready) {
      // Closed: nothing more to do.
    }
  }

  /** On the watch thread: reads the prefix and watches from the revision after it. */
  private void resync() {
    if (closed) {
      return;
    }
    stopWatcher();
    try {
      GetResponse r = etcd.client().getKVClient()
          .get(EtcdDiscovery.bytes(etcd.prefix()), GetOption.builder().isPrefix(true).build())
          .get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      Map<String, WorkerRecord> now = new HashMap<>();
      for (KeyValue kv : r.getKvs()) {
        WorkerRecord w = parse(kv);
        if (w != null) {
          now.put(w.workerId(), w);
        }
      }
      set.replaceAll(now);
      long mine = ++epoch;
      watcher = etcd.client().getWatchClient().watch(
          EtcdDiscovery.bytes(etcd.prefix()),
          WatchOption.builder().isPrefix(true).withRevision(r.getHeader().getRevision() + 1).build(),
          new io.etcd.jetcd.Watch.Listener() {
            @Override
            public void onNext(WatchResponse response) {
              run(() -> apply(mine, response));
            }

            @Override
            public void onError(Throwable t) {
              run(() -> failed(mine, t));
            }

            @Override
            public void onCompleted() {
              run(() -> failed(mine, new IllegalStateException("watch completed by the server")));
            }
          });
      if (!connected && backoff.compareTo(FIRST_BACKOFF) > 0) {
        log.info("watching {} again: {} worker(s)", etcd.describe(), now.size());
      }
      connected = true;
      everConnected = true;
      backoff = FIRST_BACKOFF;
    } catch (Exception e) {
      failed(epoch, e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e);
    }
  }

  private void apply(long mine, WatchResponse response) {
    if (mine != epoch || closed) {
      return;
    }
    for (WatchEvent e : response.getEvents()) {
      KeyValue kv = e.getKeyValue();
      String id = idOf(kv);
      if (id == null) {
        continue;
      }
      if (e.getEventType() == WatchEvent.EventType.DELETE) {
        set.remove(id);
      } else if (e.getEventType() == WatchEvent.EventType.PUT) {
        WorkerRecord w = parse(kv);
        if (w != null) {
          set.put(w);
        } else {
          set.remove(id);
        }
      }
    }
  }

  private void failed(long mine, Throwable why) {
    if (mine != epoch || closed) {
      return;
    }
    epoch++;
    if (!everConnected && backoff.equals(FIRST_BACKOFF)) {
      log.warn("cannot reach {} ({}); trying again with backoff", etcd.describe(), why.getMessage());
    } else if (connected || backoff.equals(FIRST_BACKOFF)) {
      log.warn("lost the watch on {} ({}); keeping the last {} worker(s), reading again in {} ms",
          etcd.describe(), why.getMessage(), set.snapshot().size(), backoff.toMillis());
    }
    connected = false;
    stopWatcher();
    long delay = backoff.toMillis();
    backoff = backoff.multipliedBy(2).compareTo(MAX_BACKOFF) > 0 ? MAX_BACKOFF : backoff.multipliedBy(2);
    try {
      etcd.scheduler().schedule(() -> run(this::resync), delay, TimeUnit.MILLISECONDS);
    } catch (RejectedExecutionException closedAlready) {
      // The discovery is closing.
    }
  }

  private void stopWatcher() {
    if (watcher != null) {
      try {
        watcher.close();
      } catch (RuntimeException ignored) {
        // Already broken; nothing to release.
      }
      watcher = null;
    }
  }

  /** The worker id a key names, or null (logged) for a key that is not one worker's. */
  private String idOf(KeyValue kv) {
    String key = kv.getKey().toString(StandardCharsets.UTF_8);
    String id = key.substring(etcd.prefix().length());
    if (id.isEmpty() || id.contains("/")) {
      log.warn("skipping etcd key {}: not a worker key (expected {}<worker-id>)", key, etcd.prefix());
      return null;
    }
    return id;
  }

  private WorkerRecord parse(KeyValue kv) {
    String id = idOf(kv);
    if (id == null) {
      return null;
    }
    String key = kv.getKey().toString(StandardCharsets.UTF_8);
    try {
      WorkerRecord w = WorkerRecordJson.decode(kv.getValue().getBytes());
      if (!w.workerId().equals(id)) {
        log.warn("skipping etcd key {}: its record names worker '{}'", key, w.workerId());
        return null;
      }
      return w;
    } catch (IllegalArgumentException e) {
      log.warn("skipping etcd key {}: not a worker record ({})", key, e.getMessage());
      return null;
    }
  }

  @Override
  public Map<String, WorkerRecord> current() {
    return set.snapshot();
  }

  @Override
  public boolean connected() {
    return connected;
  }

  @Override
  public void close() {
    closed = true;
    etcd.forget(this);
    run(this::stopWatcher);
    thread.shutdown();
  }
}
