package dev.tandem.discovery;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;

/**
 * Workers named on the command line ({@code --worker host:port,...}) plus those that register in
 * this process ({@code tandem serve} starts its workers beside the frontend). Nothing leaves unless
 * it registered here and closed its registration: a static worker that dies stays in the set, and
 * the router's health checks mark it unreachable.
 *
 * <p>Thread-safe; each watch is told on its own thread.
 */
public final class StaticDiscovery implements Discovery {
  private final Map<String, WorkerRecord> workers = new ConcurrentHashMap<>();
  private final List<StaticWatch> watches = new CopyOnWriteArrayList<>();

  public StaticDiscovery(List<String> addresses) {
    for (String address : addresses) {
      WorkerRecord r = WorkerRecord.atAddress(hostAndPort(address.strip()));
      if (workers.putIfAbsent(r.workerId(), r) != null) {
        throw new IllegalArgumentException("--worker: " + address + " is named twice");
      }
    }
  }

  /** {@code address} if it is host:port (an IPv6 host in brackets) with a port of 1 to 65535. */
  static String hostAndPort(String address) {
    int colon = address.lastIndexOf(':');
    String host = colon < 0 ? "" : address.substring(0, colon);
    String port = colon < 0 ? "" : address.substring(colon + 1);
    boolean bracketed = host.startsWith("[") && host.endsWith("]");
    if (host.isEmpty() || (host.contains(":") && !bracketed) || !port.matches("[0-9]{1,5}")
        || Integer.parseInt(port) < 1 || Integer.parseInt(port) > 65_535) {
      throw new IllegalArgumentException("--worker: '" + address + "' is not host:port (e.g. 10.0.0.5:9000 or [::1]:9000)");
    }
    return address;
  }

  @Override
  public String name() {
    return "static";
  }

  @Override
  public String describe() {
    return "static (" + workers.size() + " worker(s))";
  }

  @Override
  public synchronized Registration register(WorkerRecord record) {
    if (workers.putIfAbsent(record.workerId(), record) != null) {
      throw new IllegalStateException("worker id " + record.workerId() + " is already registered");
    }
    publish();
    return new HeldRegistration(record, () -> {
      synchronized (StaticDiscovery.this) {
        workers.remove(record.workerId(), record);
        publish();
      }
    });
  }

  @Override
  public synchronized Watch watch(WorkerSetListener listener) {
    StaticWatch w = new StaticWatch(listener);
    watches.add(w);
    w.push(Map.copyOf(workers));
    return w;
  }

  private void publish() {
    Map<String, WorkerRecord> now = Map.copyOf(workers);
    watches.forEach(w -> w.push(now));
  }

  @Override
  public void close() {
    watches.forEach(StaticWatch::close);
  }

  private final class StaticWatch implements Watch {
    private final WorkerSet set;
    private final ExecutorService thread =
        Executors.newSingleThreadExecutor(Thread.ofPlatform().name("static-discovery-watch").daemon().factory());

    StaticWatch(WorkerSetListener listener) {
      this.set = new WorkerSet(listener);
    }

    void push(Map<String, WorkerRecord> now) {
      try {
        thread.execute(() -> set.replaceAll(now));
      } catch (RejectedExecutionException closed) {
        // The watch was closed; nobody listens any more.
      }
    }

    @Override
    public Map<String, WorkerRecord> current() {
      return set.snapshot();
    }

    @Override
    public boolean connected() {
      return true;
    }

    @Override
    public void close() {
      watches.remove(this);
      thread.shutdownNow();
    }
  }
}
