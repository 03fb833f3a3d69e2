package dev.tandem.planner.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.planner.Pool;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The Kubernetes connector against fabric8's mock API server in CRUD mode — no cluster can run
 * here, so the API server is the one thing mocked; the connector's requests are the real ones.
 */
@org.junit.jupiter.api.Tag("e2e")
@EnableKubernetesMockClient(crud = true)
class KubernetesConnectorTest {
  KubernetesClient client;
  KubernetesMockServer server;

  @BeforeEach
  void deployments() {
    for (String name : List.of("tandem-prefill", "tandem-decode")) {
      client.apps().deployments().inNamespace("llm").resource(new DeploymentBuilder()
          .withNewMetadata().withName(name).endMetadata()
          .withNewSpec().withReplicas(2).withNewSelector().addToMatchLabels("app", name).endSelector()
          .withNewTemplate().withNewMetadata().addToLabels("app", name).endMetadata()
          .withNewSpec().addNewContainer().withName("worker").withImage("tandem").endContainer().endSpec().endTemplate()
          .endSpec().withNewStatus().withReadyReplicas(1).endStatus().build()).create();
    }
    for (String pod : List.of("decode-a", "decode-b")) {
      client.pods().inNamespace("llm").resource(new PodBuilder().withNewMetadata().withName(pod).addToLabels("app", "tandem-decode")
          .endMetadata().build()).create();
    }
  }

  private KubernetesConnector connector() {
    return new KubernetesConnector(client, "llm", "tandem-prefill", "tandem-decode");
  }

  @Test
  void scalingUpSetsTheDeploymentsReplicas() throws Exception {
    connector().scale(Pool.PREFILL, 5, List.of());
    assertEquals(5, client.apps().deployments().inNamespace("llm").withName("tandem-prefill").get().getSpec().getReplicas());
    assertEquals(2, client.apps().deployments().inNamespace("llm").withName("tandem-decode").get().getSpec().getReplicas());
  }

  @Test
  void scalingDownMarksTheLeastLoadedPodsForDeletionFirst() throws Exception {
    connector().scale(Pool.DECODE, 1, List.of("decode-b", "decode-a"));
    assertEquals(1, client.apps().deployments().inNamespace("llm").withName("tandem-decode").get().getSpec().getReplicas());
    assertEquals("-1000", client.pods().inNamespace("llm").withName("decode-b").get().getMetadata().getAnnotations()
        .get(KubernetesConnector.DELETION_COST));
    var other = client.pods().inNamespace("llm").withName("decode-a").get().getMetadata().getAnnotations();
    assertTrue(other == null || other.get(KubernetesConnector.DELETION_COST) == null, "only one pod goes: " + other);
  }

  @Test
  void startingCountsReplicasNotReadyYet() {
    assertEquals(1, connector().starting(Pool.DECODE)); // 2 wanted, 1 ready
  }

  @Test
  void aMissingDeploymentFailsNamingIt() {
    ConnectorException e = assertThrows(ConnectorException.class,
        () -> new KubernetesConnector(client, "llm", "nope", "tandem-decode").scale(Pool.PREFILL, 3, List.of()));
    assertTrue(e.getMessage().contains("llm/nope") && e.getMessage().contains("prefill"), e.getMessage());
    assertNull(client.apps().deployments().inNamespace("llm").withName("nope").get());
  }
}
