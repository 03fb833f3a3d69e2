package dev.tandem.discovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.Test;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** The conformance suite against a real etcd started by the test (Debian's etcd-server). */
@org.junit.jupiter.api.Tag("e2e") // starts and restarts real etcd servers: ~20 s, kept out of the fast tier
class EtcdDiscoveryTest extends DiscoveryConformanceTest {
  static final Duration TTL = Duration.ofSeconds(3);

  @Override
  protected Backend open() throws Exception {
    EtcdServer etcd = EtcdServer.startOrSkip();
    return new Backend() {
      // Each worker is its own client, as its own process would be.
      final Map<String, EtcdDiscovery> workers = new ConcurrentHashMap<>();
      final Map<String, Registration> registrations = new ConcurrentHashMap<>();

      @Override
      public Discovery client() {
        return new EtcdDiscovery(List.of(etcd.endpoint()), "test", TTL);
      }

      @Override
      public void join(WorkerRecord worker) {
        EtcdDiscovery d = new EtcdDiscovery(List.of(etcd.endpoint()), "test", TTL);
        workers.put(worker.workerId(), d);
        registrations.put(worker.workerId(), d.register(worker));
      }

      @Override
      public void leave(String workerId) {
        registrations.remove(workerId).close();
        workers.remove(workerId).close();
      }

      @Override
      public void crash(String workerId) {
        registrations.remove(workerId);
        workers.remove(workerId).close(); // stops renewing, revokes nothing
      }

      @Override
      public void restart() throws Exception {
        etcd.stop();
        Thread.sleep(1000);
        etcd.start();
      }

      @Override
      public Duration crashBound() {
        return TTL.plusSeconds(1);
      }

      @Override
      public boolean keepsWholeRecord() {
        return true;
      }

      @Override
      public void close() throws Exception {
        workers.values().forEach(EtcdDiscovery::close);
        etcd.close();
      }
    };
  }

  @Test
  void malformedAndForeignKeysUnderThePrefixAreSkipped() throws Exception {
    try (EtcdServer etcd = EtcdServer.startOrSkip();
        Client raw = Client.builder().endpoints(etcd.endpoint()).build();
        EtcdDiscovery worker = new EtcdDiscovery(List.of(etcd.endpoint()), "test", TTL);
        EtcdDiscovery router = new EtcdDiscovery(List.of(etcd.endpoint()), "test", TTL)) {
      String prefix = worker.prefix();
      raw.getKVClient().put(bytes(prefix + "garbage"), bytes("{not json")).get();
      raw.getKVClient().put(bytes(prefix + "no-address"), bytes("{\"id\":\"no-address\"}")).get();
      raw.getKVClient().put(bytes(prefix + "liar"), ByteSequence.from(WorkerRecordJson.encode(worker("someone-else", 9200)))).get();
      raw.getKVClient().put(bytes(prefix + "nested/key"), bytes("{}")).get();
      worker.register(worker("w1", 9100));
      Watch w = router.watch(new Calls());
      await("w1 seen", Duration.ofSeconds(10), () -> w.current().containsKey("w1"));
      raw.getKVClient().put(bytes(prefix + "later-garbage"), bytes("[1,2]")).get();
      worker.register(worker("w2", 9110));
      await("w2 seen", Duration.ofSeconds(10), () -> w.current().containsKey("w2"));
      assertEquals(Set.of("w1", "w2"), w.current().keySet());
      assertTrue(w.connected());
    }
  }

  @Test
  void anEtcdThatIsDownAtStartIsRetriedUntilItAnswers() throws Exception {
    try (EtcdServer etcd = EtcdServer.startOrSkip()) {
      etcd.stop();
      try (EtcdDiscovery worker = new EtcdDiscovery(List.of(etcd.endpoint()), "test", TTL);
          EtcdDiscovery router = new EtcdDiscovery(List.of(etcd.endpoint()), "test", TTL)) {
        Registration r = worker.register(worker("w1", 9100));
        Watch w = router.watch(new Calls());
        Thread.sleep(1500);
        assertFalse(r.registered());
        assertFalse(w.connected());
        etcd.start();
        await("registered once etcd is up", Duration.ofSeconds(15), r::registered);
        await("seen once etcd is up", Duration.ofSeconds(15), () -> w.current().containsKey("w1"));
      }
    }
  }

  @Test
  void aWorkerWhoseLeaseExpiredRegistersAgain() throws Exception {
    try (EtcdServer etcd = EtcdServer.startOrSkip();
        Client raw = Client.builder().endpoints(etcd.endpoint()).build();
        EtcdDiscovery worker = new EtcdDiscovery(List.of(etcd.endpoint()), "test", TTL);
        EtcdDiscovery router = new EtcdDiscovery(List.of(etcd.endpoint()), "test", TTL)) {
      Registration r = worker.register(worker("w1", 9100));
      Calls calls = new Calls();
      Watch w = router.watch(calls);
      await("w1 seen", Duration.ofSeconds(10), () -> w.current().containsKey("w1"));
      // Revoke its lease behind its back, as an etcd that lost it (or an operator) would.
      long lease = raw.getKVClient().get(worker.key("w1")).get().getKvs().getFirst().getLease();
      raw.getLeaseClient().revoke(lease).get();
      // Dropped, then back under a new lease (the gap may be shorter than a poll: read the calls).
      await("w1 dropped and back", Duration.ofSeconds(10), () -> calls.calls.equals(List.of("+w1", "-w1", "+w1")));
      // The router may see the new key before the worker's own put has returned to it.
      await("w1 registered again", Duration.ofSeconds(10), r::registered);
      long newLease = raw.getKVClient().get(worker.key("w1")).get().getKvs().getFirst().getLease();
      assertTrue(newLease != lease, "a new lease");
    }
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
