package dev.tandem.discovery;

import dev.tandem.common.WorkerRole;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.discovery.v1.Endpoint;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointPort;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Workers as the ready endpoints of the role Services ({@code <release>-decode}, {@code
 * <release>-prefill}, ...): routers watch their EndpointSlices through fabric8 informers, which list,
 * watch and re-list after a lost connection by themselves. Each endpoint's gRPC and KV-transfer
 * ports come from the slice's ports named {@value #GRPC_PORT} and {@value #TRANSFER_PORT}; its role
 * from the slice label {@value #ROLE_LABEL} (Kubernetes copies a Service's labels to its slices).
 *
 * <p>A worker registers by being ready: its pod's readiness probe ({@code /health} on the metrics
 * port) puts it in the slices, and draining takes it out. {@link #register} therefore publishes
 * nothing; Kubernetes does.
 *
 * <p>Thread-safe; each watch recomputes its set on its own thread.
 */
public final class KubernetesDiscovery implements Discovery {
  private static final Logger log = LoggerFactory.getLogger(KubernetesDiscovery.class);
  public static final String SERVICE_NAME_LABEL = "kubernetes.io/service-name";
  public static final String ROLE_LABEL = "tandem.dev/role";
  public static final String GRPC_PORT = "grpc";
  public static final String TRANSFER_PORT = "kv-transfer";

  private final KubernetesClient client;
  private final String namespace;
  private final List<String> services;

  /**
   * @param namespace the pods' namespace
   * @param services the Services whose endpoints are workers
   */
  public KubernetesDiscovery(KubernetesClient client, String namespace, List<String> services) {
    if (services.isEmpty()) {
      throw new IllegalArgumentException("--kubernetes-services: no Service named");
    }
    this.client = client;
    this.namespace = namespace;
    this.services = List.copyOf(services);
  }

  @Override
  public String name() {
    return "kubernetes";
  }

  @Override
  public String describe() {
    return "Kubernetes Services " + String.join(",", services) + " in namespace " + namespace + " at " + client.getMasterUrl();
  }

  @Override
  public Registration register(WorkerRecord record) {
    log.info("worker {} is published by Kubernetes: its pod joins {} when its readiness probe passes", record.workerId(), describe());
    return new HeldRegistration(record, () -> {});
  }

  @Override
  public Watch watch(WorkerSetListener listener) {
    return new SliceWatch(listener);
  }

  @Override
  public void close() {
    // The client belongs to whoever made it; watches are closed by their owners.
  }

  /** The workers the ready endpoints of {@code slices} name, by id. */
  static Map<String, WorkerRecord> workers(List<EndpointSlice> slices) {
    Map<String, WorkerRecord> out = new HashMap<>();
    for (EndpointSlice slice : slices) {
      String name = slice.getMetadata().getName();
      Integer grpc = null;
      Integer transfer = null;
      for (EndpointPort p : slice.getPorts() == null ? List.<EndpointPort>of() : slice.getPorts()) {
        if (GRPC_PORT.equals(p.getName())) {
          grpc = p.getPort();
        } else if (TRANSFER_PORT.equals(p.getName())) {
          transfer = p.getPort();
        }
      }
      if (grpc == null) {
        log.warn("skipping EndpointSlice {}: it has no port named '{}'", name, GRPC_PORT);
        continue;
      }
      WorkerRole role = null;
      String roleLabel = slice.getMetadata().getLabels() == null ? null : slice.getMetadata().getLabels().get(ROLE_LABEL);
      if (roleLabel != null) {
        try {
          role = WorkerRole.parse(roleLabel);
        } catch (IllegalArgumentException e) {
          log.warn("EndpointSlice {}: label {}: {}", name, ROLE_LABEL, e.getMessage());
        }
      }
      for (Endpoint e : slice.getEndpoints() == null ? List.<Endpoint>of() : slice.getEndpoints()) {
        // An endpoint whose readiness is unknown counts as ready, as the EndpointSlice API says.
        boolean ready = e.getConditions() == null || !Boolean.FALSE.equals(e.getConditions().getReady());
        if (!ready || e.getAddresses() == null || e.getAddresses().isEmpty()) {
          continue;
        }
        String ip = e.getAddresses().getFirst();
        String host = ip.contains(":") ? "[" + ip + "]" : ip;
        ObjectReference pod = e.getTargetRef();
        String id = pod != null && pod.getName() != null ? pod.getName() : ip + ":" + grpc;
        out.putIfAbsent(id, new WorkerRecord(
            id, role, host + ":" + grpc, transfer == null ? null : host + ":" + transfer, null, 0, 0, e.getNodeName()));
      }
    }
    return out;
  }

  private final class SliceWatch implements Watch, ResourceEventHandler<EndpointSlice> {
    private final WorkerSet set;
    private final List<SharedIndexInformer<EndpointSlice>> informers = new ArrayList<>();
    private final ExecutorService thread =
        Executors.newSingleThreadExecutor(Thread.ofPlatform().name("k8s-discovery-watch").daemon().factory());

    SliceWatch(WorkerSetListener listener) {
      this.set = new WorkerSet(listener);
      for (String service : services) {
        informers.add(client.discovery().v1().endpointSlices().inNamespace(namespace)
            .withLabel(SERVICE_NAME_LABEL, service).inform(this, 0));
      }
      recompute();
    }

    private void recompute() {
      try {
        thread.execute(() -> {
          List<EndpointSlice> slices = new ArrayList<>();
          informers.forEach(i -> slices.addAll(i.getStore().list()));
          set.replaceAll(workers(slices));
        });
      } catch (RejectedExecutionException closed) {
        // Closed: nobody listens.
      }
    }

    @Override
    public void onAdd(EndpointSlice slice) {
      recompute();
    }

    @Override
    public void onUpdate(EndpointSlice before, EndpointSlice after) {
      recompute();
    }

    @Override
    public void onDelete(EndpointSlice slice, boolean finalStateUnknown) {
      recompute();
    }

    @Override
    public Map<String, WorkerRecord> current() {
      return set.snapshot();
    }

    @Override
    public boolean connected() {
      return informers.stream().allMatch(SharedIndexInformer::isWatching);
    }

    @Override
    public void close() {
      informers.forEach(SharedIndexInformer::close);
      thread.shutdown();
    }
  }
}
