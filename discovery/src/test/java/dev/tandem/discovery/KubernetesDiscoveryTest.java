package dev.tandem.discovery;

import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointPortBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import java.net.InetAddress;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The conformance suite against Kubernetes discovery. No cluster can run here, so the API server is
 * fabric8's mock server in CRUD mode (it stores objects and serves list and watch as the real one
 * does); the test plays the EndpointSlice controller, writing one slice per worker pod the way the
 * controller would after the pod's readiness changes.
 */
@org.junit.jupiter.api.Tag("e2e") // a mock API server with informers: ~6 s, kept out of the fast tier
class KubernetesDiscoveryTest extends DiscoveryConformanceTest {
  static final String NS = "tandem";
  static final String SERVICE = "tandem-decode";

  static {
    java.util.logging.Logger.getLogger("io.fabric8.mockwebserver").setLevel(java.util.logging.Level.WARNING);
  }

  @Override
  protected Backend open() throws Exception {
    return new Backend() {
      KubernetesMockServer server = newServer(0);
      final KubernetesClient kube = server.createClient();
      final Map<String, EndpointSlice> slices = new ConcurrentHashMap<>();

      KubernetesMockServer newServer(int port) {
        KubernetesMockServer s = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), new KubernetesCrudDispatcher(), false);
        s.init(InetAddress.getLoopbackAddress(), port);
        return s;
      }

      @Override
      public Discovery client() {
        return new KubernetesDiscovery(kube, NS, List.of(SERVICE));
      }

      void write(String id, WorkerRecord w, Boolean ready) {
        String[] hostPort = w.grpcAddress().split(":");
        var endpoints = ready == null ? List.<io.fabric8.kubernetes.api.model.discovery.v1.Endpoint>of()
            : List.of(new EndpointBuilder().withAddresses(hostPort[0]).withNodeName(w.host())
                .withNewConditions().withReady(ready).endConditions()
                .withTargetRef(new ObjectReferenceBuilder().withKind("Pod").withName(id).withNamespace(NS).build()).build());
        EndpointSlice slice = new EndpointSliceBuilder()
            .withNewMetadata().withName(SERVICE + "-" + id).withNamespace(NS)
              .addToLabels(KubernetesDiscovery.SERVICE_NAME_LABEL, SERVICE).addToLabels(KubernetesDiscovery.ROLE_LABEL, "decode").endMetadata()
            .withAddressType("IPv4")
            .withPorts(
                new EndpointPortBuilder().withName(KubernetesDiscovery.GRPC_PORT).withPort(Integer.parseInt(hostPort[1])).withProtocol("TCP").build(),
                new EndpointPortBuilder().withName(KubernetesDiscovery.TRANSFER_PORT).withPort(Integer.parseInt(hostPort[1]) + 1).withProtocol("TCP").build())
            .withEndpoints(endpoints)
            .build();
        slices.put(id, slice);
        var r = kube.discovery().v1().endpointSlices().inNamespace(NS).withName(slice.getMetadata().getName());
        if (r.get() == null) {
          r.create(slice);
        } else {
          r.edit(old -> {
            old.setEndpoints(slice.getEndpoints());
            old.setPorts(slice.getPorts());
            return old;
          });
        }
      }

      final Map<String, WorkerRecord> records = new ConcurrentHashMap<>();

      @Override
      public void join(WorkerRecord worker) {
        records.put(worker.workerId(), worker);
        write(worker.workerId(), worker, true);
      }

      @Override
      public void leave(String workerId) {
        write(workerId, records.get(workerId), null);
      }

      @Override
      public void crash(String workerId) {
        write(workerId, records.get(workerId), false);
      }

      @Override
      public void restart() throws Exception {
        int port = server.getPort();
        server.destroy();
        Thread.sleep(500);
        server = newServer(port);
        for (EndpointSlice s : slices.values()) {
          s.getMetadata().setResourceVersion(null);
          kube.discovery().v1().endpointSlices().inNamespace(NS).resource(s).create();
        }
      }

      @Override
      public Duration crashBound() {
        return Duration.ofSeconds(1);
      }

      @Override
      public boolean keepsWholeRecord() {
        return false;
      }

      @Override
      public void close() {
        kube.close();
        try {
          server.destroy();
        } catch (IllegalStateException lingering) {
          // The mock server waits up to 10 s for open watch connections; an informer that has just
          // closed may still hold one. Teardown only: every assertion has run.
        }
      }
    };
  }
}
