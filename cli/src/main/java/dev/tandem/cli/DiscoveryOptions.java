package dev.tandem.cli;

import dev.tandem.discovery.Discovery;
import dev.tandem.discovery.EtcdDiscovery;
import dev.tandem.discovery.KubernetesDiscovery;
import dev.tandem.discovery.StaticDiscovery;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import picocli.CommandLine.Option;

/** Where workers register and routers find them; shared by {@code frontend} and {@code worker}. */
final class DiscoveryOptions {
  private static final Path POD_NAMESPACE = Path.of("/var/run/secrets/kubernetes.io/serviceaccount/namespace");

  @Option(names = "--discovery", defaultValue = "${env:TANDEM_DISCOVERY:-static}",
      description = "static (workers named by --worker), etcd (workers register under a lease at --etcd-endpoints) or kubernetes (ready endpoints of --kubernetes-services); default ${DEFAULT-VALUE}.")
  String backend;

  @Option(names = "--etcd-endpoints", defaultValue = "${env:TANDEM_ETCD_ENDPOINTS:-http://127.0.0.1:2379}",
      description = "etcd discovery: etcd's client URLs, comma-separated (default ${DEFAULT-VALUE}).")
  String etcdEndpoints;

  @Option(names = "--discovery-namespace", defaultValue = "${env:TANDEM_DISCOVERY_NAMESPACE:-default}",
      description = "etcd discovery: the deployment's name within etcd; keys go under /tandem/v1/<namespace>/workers/ (default ${DEFAULT-VALUE}).")
  String namespace;

  @Option(names = "--discovery-ttl-s", defaultValue = "${env:TANDEM_DISCOVERY_TTL_S:-10}",
      description = "etcd discovery: a worker's lease; one that dies leaves routing within it (default ${DEFAULT-VALUE}).")
  long ttlSeconds;

  @Option(names = "--kubernetes-namespace", defaultValue = "${env:TANDEM_KUBERNETES_NAMESPACE}",
      description = "kubernetes discovery: the workers' namespace (default: this pod's own).")
  String kubernetesNamespace;

  @Option(names = "--kubernetes-services", defaultValue = "${env:TANDEM_KUBERNETES_SERVICES:-tandem-decode,tandem-prefill}",
      description = "kubernetes discovery: the Services whose ready endpoints are workers (default ${DEFAULT-VALUE}).")
  String kubernetesServices;

  boolean isStatic() {
    return backend.equals("static");
  }

  /**
   * Opens the chosen backend; {@code staticWorkers} are the {@code --worker} addresses.
   *
   * @throws IllegalArgumentException naming the flag that is wrong
   */
  Discovery open(List<String> staticWorkers) {
    return switch (backend) {
      case "static" -> new StaticDiscovery(staticWorkers == null ? List.of() : staticWorkers);
      case "etcd" -> new EtcdDiscovery(EtcdDiscovery.parseEndpoints(etcdEndpoints), namespace, Duration.ofSeconds(ttlSeconds));
      case "kubernetes" -> new KubernetesDiscovery(
          new KubernetesClientBuilder().build(), kubernetesNamespace(),
          Arrays.stream(kubernetesServices.split(",")).map(String::strip).filter(s -> !s.isEmpty()).toList());
      default -> throw new IllegalArgumentException("--discovery: unknown backend '" + backend + "'; expected static, etcd or kubernetes");
    };
  }

  private String kubernetesNamespace() {
    if (kubernetesNamespace != null) {
      return kubernetesNamespace;
    }
    try {
      return Files.readString(POD_NAMESPACE).strip();
    } catch (java.io.IOException e) {
      return "default";
    }
  }
}
