package dev.tandem.discovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * The conformance suite against static discovery: addresses from the command line plus workers
 * registered in the same process. It has no backend to restart and no lease: a worker of this
 * process that dies closes its registration on the way out.
 */
class StaticDiscoveryTest extends DiscoveryConformanceTest {
  @Override
  protected Backend open() {
    StaticDiscovery d = new StaticDiscovery(List.of());
    return new Backend() {
      final Map<String, Registration> registrations = new ConcurrentHashMap<>();

      @Override
      public Discovery client() {
        return d;
      }

      @Override
      public void join(WorkerRecord worker) {
        registrations.put(worker.workerId(), d.register(worker));
      }

      @Override
      public void leave(String workerId) {
        registrations.remove(workerId).close();
      }

      @Override
      public void crash(String workerId) {
        leave(workerId);
      }

      @Override
      public void restart() {}

      @Override
      public Duration crashBound() {
        return Duration.ZERO;
      }

      @Override
      public boolean keepsWholeRecord() {
        return true;
      }

      @Override
      public void close() {
        d.close();
      }
    };
  }

  @Test
  void addressesOnTheCommandLineAreWorkersKnownByAddress() throws Exception {
    StaticDiscovery d = new StaticDiscovery(List.of("127.0.0.1:9000", " 127.0.0.1:9001"));
    var seen = new java.util.concurrent.CopyOnWriteArrayList<String>();
    try (Watch w = d.watch(new WorkerSetListener() {
      @Override
      public void added(WorkerRecord worker) {
        seen.add(worker.grpcAddress());
      }

      @Override
      public void removed(WorkerRecord worker) {}
    })) {
      await("both", Duration.ofSeconds(5), () -> seen.size() == 2);
      assertEquals(java.util.Set.of("127.0.0.1:9000", "127.0.0.1:9001"), java.util.Set.copyOf(seen));
    }
  }

  @Test
  void anAddressNamedTwiceIsRefused() {
    var e = assertThrows(IllegalArgumentException.class, () -> new StaticDiscovery(List.of("a:1", "a:1")));
    assertEquals("--worker: a:1 is named twice", e.getMessage());
  }

  @Test
  void anAddressThatIsNotHostAndPortIsRefusedNamingIt() {
    for (String bad : List.of("nohost", "host:", ":9000", "host:port", "host:0", "host:65536", "host:123456", "::1:9000", "dns:///host:9000")) {
      var e = assertThrows(IllegalArgumentException.class, () -> new StaticDiscovery(List.of("a:1", bad)), bad);
      assertEquals("--worker: '" + bad + "' is not host:port (e.g. 10.0.0.5:9000 or [::1]:9000)", e.getMessage());
    }
    for (String good : List.of("localhost:1", "10.0.0.5:65535", "[::1]:9000", "worker-0.tandem.svc:9000")) {
      assertEquals(good, StaticDiscovery.hostAndPort(good));
    }
  }
}
