package dev.tandem.planner.connect;

import dev.tandem.planner.Pool;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.util.Collection;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Scales the chart's prefill and decode Deployments through the Kubernetes API (fabric8). To
 * remove workers it first marks the least-loaded pods with {@code
 * controller.kubernetes.io/pod-deletion-cost} (lowest is deleted first), so that the ReplicaSet
 * removes those; each gets SIGTERM and drains (readiness off, finish in flight, exit 0) within its
 * termination grace period. Counts pods asked for but not ready as starting.
 */
public final class KubernetesConnector implements Connector {
  private static final Logger log = LoggerFactory.getLogger(KubernetesConnector.class);
  public static final String DELETION_COST = "controller.kubernetes.io/pod-deletion-cost";

  private final KubernetesClient client;
  private final String namespace;
  private final Map<Pool, String> deployments;

  public KubernetesConnector(KubernetesClient client, String namespace, String prefillDeployment, String decodeDeployment) {
    this.client = client;
    this.namespace = namespace;
    this.deployments = Map.of(Pool.PREFILL, prefillDeployment, Pool.DECODE, decodeDeployment);
  }

  @Override
  public String name() {
    return "kubernetes";
  }

  private Deployment deployment(Pool pool) throws ConnectorException {
    String name = deployments.get(pool);
    try {
      Deployment d = client.apps().deployments().inNamespace(namespace).withName(name).get();
      if (d == null) {
        throw new ConnectorException("deployment " + namespace + "/" + name + " (" + pool.cliName() + " pool) not found");
      }
      return d;
    } catch (KubernetesClientException e) {
      throw failure("read deployment " + namespace + "/" + name, e);
    }
  }

  @Override
  public int starting(Pool pool) {
    try {
      Deployment d = deployment(pool);
      int wanted = d.getSpec().getReplicas() == null ? 0 : d.getSpec().getReplicas();
      Integer ready = d.getStatus() == null ? null : d.getStatus().getReadyReplicas();
      return Math.max(0, wanted - (ready == null ? 0 : ready));
    } catch (ConnectorException e) {
      log.warn("cannot count starting {} workers: {}", pool.cliName(), e.getMessage());
      return 0;
    }
  }

  @Override
  public void scale(Pool pool, int replicas, Collection<String> leastLoaded) throws ConnectorException {
    Deployment d = deployment(pool);
    String name = d.getMetadata().getName();
    int current = d.getSpec().getReplicas() == null ? 0 : d.getSpec().getReplicas();
    if (replicas == current) {
      return;
    }
    try {
      if (replicas < current) {
        int victims = current - replicas;
        for (String pod : leastLoaded) {
          if (victims-- <= 0) {
            break;
          }
          Pod p = client.pods().inNamespace(namespace).withName(pod).get();
          if (p == null) {
            continue;
          }
          client.pods().inNamespace(namespace).withName(pod)
              .edit(x -> {
                if (x.getMetadata().getAnnotations() == null) {
                  x.getMetadata().setAnnotations(new java.util.HashMap<>());
                }
                x.getMetadata().getAnnotations().put(DELETION_COST, "-1000");
                return x;
              });
        }
      }
      client.apps().deployments().inNamespace(namespace).withName(name).scale(replicas);
      log.info("scaled deployment {}/{} ({} pool) {} → {}", namespace, name, pool.cliName(), current, replicas);
    } catch (KubernetesClientException e) {
      throw failure("scale deployment " + namespace + "/" + name + " to " + replicas, e);
    }
  }

  private static ConnectorException failure(String what, KubernetesClientException e) {
    String why = switch (e.getCode()) {
      case 403 -> "forbidden (403): give the planner's service account get/patch on deployments, deployments/scale and pods";
      case 409 -> "conflict (409): someone else changed it; retried";
      case 404 -> "not found (404)";
      default -> e.getCode() + ": " + e.getMessage();
    };
    return new ConnectorException("cannot " + what + ": " + why, e);
  }
}
