package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.KubernetesResource;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The Helm chart checked by real tools: Helm itself (through helm-java's bundled Go library) lints
 * and renders it with the default values and with the GPU, etcd, planner and monitoring ones, and
 * every rendered document is read into fabric8's typed Kubernetes model, where a field the model
 * does not know fails the test (fabric8 keeps unknown fields aside; the test looks there). Then
 * the parts must agree: the Services the frontend watches exist, the settings in the ConfigMap are
 * real CLI variables, the grace period covers the drain, and GPUs reach the worker containers.
 */
@org.junit.jupiter.api.Tag("e2e")
class HelmChartTest {
  private static final Path CHART = Path.of("..", "deploy", "helm", "tandem").toAbsolutePath().normalize();
  private static final KubernetesSerialization K8S = new KubernetesSerialization();
  private static final Pattern TANDEM_ENV = Pattern.compile("\\$\\{env:(TANDEM_[A-Z0-9_]+)");

  private static List<KubernetesResource> render(Map<String, Object> values) {
    var template = new Helm(CHART).template().withName("demo").withNamespace("llm");
    values.forEach(template::set);
    return documents(template.call());
  }

  /** Each document of a rendered manifest, typed; CRDs fabric8 does not model stay generic. */
  static List<KubernetesResource> documents(String manifest) {
    List<KubernetesResource> out = new ArrayList<>();
    for (String doc : manifest.split("(?m)^---\\s*$")) {
      if (doc.lines().allMatch(l -> l.isBlank() || l.strip().startsWith("#"))) {
        continue;
      }
      KubernetesResource r = K8S.unmarshal(doc);
      assertTrue(r instanceof HasMetadata, "not a Kubernetes object:\n" + doc);
      if (!(r instanceof GenericKubernetesResource)) {
        List<String> unknown = new ArrayList<>();
        unknownFields(r, ((HasMetadata) r).getKind() + "/" + ((HasMetadata) r).getMetadata().getName(), unknown);
        assertEquals(List.of(), unknown, "fields the Kubernetes API does not have");
      }
      out.add(r);
    }
    return out;
  }

  /** Walks a fabric8 model object, collecting every field its class did not know. */
  private static void unknownFields(Object o, String path, List<String> out) {
    if (o == null) {
      return;
    }
    if (o instanceof Collection<?> c) {
      int i = 0;
      for (Object e : c) {
        unknownFields(e, path + "[" + i++ + "]", out);
      }
      return;
    }
    if (o instanceof Map<?, ?> m) {
      m.forEach((k, v) -> unknownFields(v, path + "." + k, out));
      return;
    }
    if (!o.getClass().getName().startsWith("io.fabric8.kubernetes.api.model") || o instanceof Quantity) {
      return;
    }
    for (Method g : o.getClass().getMethods()) {
      if (g.getParameterCount() != 0 || !g.getName().startsWith("get") || g.getName().equals("getClass")) {
        continue;
      }
      try {
        Object v = g.invoke(o);
        if (g.getName().equals("getAdditionalProperties")) {
          if (v instanceof Map<?, ?> extra && !extra.isEmpty()) {
            out.add(path + ": " + extra.keySet());
          }
        } else {
          unknownFields(v, path + "." + g.getName().substring(3, 4).toLowerCase() + g.getName().substring(4), out);
        }
      } catch (ReflectiveOperationException e) {
        throw new AssertionError(e);
      }
    }
  }

  private static <T> List<T> all(List<KubernetesResource> docs, Class<T> kind) {
    return docs.stream().filter(kind::isInstance).map(kind::cast).toList();
  }

  private static <T extends HasMetadata> T named(List<KubernetesResource> docs, Class<T> kind, String name) {
    return all(docs, kind).stream().filter(r -> r.getMetadata().getName().equals(name)).findFirst()
        .orElseThrow(() -> new AssertionError("no " + kind.getSimpleName() + " " + name));
  }

  @Test
  void helmLintsTheChart() {
    LintResult r = new Helm(CHART).lint().strict().call();
    assertFalse(r.isFailed(), String.join("\n", r.getMessages()));
  }

  @Test
  void theDefaultsRenderAFrontendAndTwoWorkerPoolsFoundThroughKubernetes() {
    List<KubernetesResource> docs = render(Map.of());
    Set<String> deployments = all(docs, Deployment.class).stream().map(d -> d.getMetadata().getName()).collect(Collectors.toSet());
    assertEquals(Set.of("demo-tandem-frontend", "demo-tandem-prefill", "demo-tandem-decode"), deployments);
    assertTrue(all(docs, StatefulSet.class).isEmpty(), "no etcd unless discovery is etcd");

    // The Services the frontend is told to watch are the worker Services, with a port named grpc.
    ConfigMap config = named(docs, ConfigMap.class, "demo-tandem-config");
    for (String service : config.getData().get("TANDEM_KUBERNETES_SERVICES").split(",")) {
      Service s = named(docs, Service.class, service);
      assertTrue(s.getSpec().getPorts().stream().anyMatch(p -> p.getName().equals("grpc")), service);
    }
    // The frontend may watch EndpointSlices.
    Role discovery = named(docs, Role.class, "demo-tandem-frontend-discovery");
    assertEquals(List.of("endpointslices"), discovery.getRules().getFirst().getResources());

    // Every setting the chart passes is a real CLI variable.
    Set<String> known = cliVariables();
    for (String key : config.getData().keySet()) {
      assertTrue(known.contains(key), key + " is no tandem flag's environment variable");
    }

    // Stopping pods get time to drain: preStop, the drain, a margin.
    for (Deployment d : all(docs, Deployment.class)) {
      var pod = d.getSpec().getTemplate().getSpec();
      assertEquals(5L + 60L + 15L, pod.getTerminationGracePeriodSeconds(), d.getMetadata().getName());
      Container c = pod.getContainers().getFirst();
      assertEquals(List.of("sleep", "5"), c.getLifecycle().getPreStop().getExec().getCommand());
      assertEquals("/health", c.getReadinessProbe().getHttpGet().getPath());
      assertEquals("/live", c.getLivenessProbe().getHttpGet().getPath());
    }
    Container decode = named(docs, Deployment.class, "demo-tandem-decode").getSpec().getTemplate().getSpec().getContainers().getFirst();
    assertTrue(decode.getArgs().containsAll(List.of("worker", "--role=decode", "--model=/models/model")), decode.getArgs().toString());
    assertTrue(decode.getEnv().stream().anyMatch(e -> e.getName().equals("TANDEM_WORKER_ID")
        && e.getValueFrom().getFieldRef().getFieldPath().equals("metadata.name")), "each pod is its own worker id");
  }

  /**
   * Routers learn a worker's transfer port from its Service's port named kv-transfer (with auto,
   * kv-transfer-2 for the agent beside the primary), which the worker listens on; a model name
   * labels the worker pods, made a valid label value.
   */
  @Test
  void workersNameTheirTransferPortsAndCarryTheModelLabel() {
    List<KubernetesResource> docs = render(Map.of("model.name", "Qwen/Qwen3-0.6B"));
    for (String role : List.of("prefill", "decode")) {
      Deployment d = named(docs, Deployment.class, "demo-tandem-" + role);
      Container c = d.getSpec().getTemplate().getSpec().getContainers().getFirst();
      assertTrue(c.getArgs().containsAll(List.of("--kv-transfer-port=9400", "--model-name=Qwen/Qwen3-0.6B")), c.getArgs().toString());
      Map<String, Integer> ports = c.getPorts().stream().collect(Collectors.toMap(p -> p.getName(), p -> p.getContainerPort()));
      assertEquals(Map.of("grpc", 9000, "metrics", 9100, "kv-transfer", 9400, "kv-transfer-2", 9401), ports, role);
      Service s = named(docs, Service.class, "demo-tandem-" + role);
      assertEquals(Set.of("grpc", "metrics", dev.tandem.discovery.KubernetesDiscovery.TRANSFER_PORT, "kv-transfer-2"),
          s.getSpec().getPorts().stream().map(p -> p.getName()).collect(Collectors.toSet()));
      assertEquals("Qwen_Qwen3-0.6B", d.getSpec().getTemplate().getMetadata().getLabels().get("tandem.dev/model"));
    }
    // tcp alone: one agent, one port; port 0: none named, no label without a model name.
    var tcp = named(render(Map.of("worker.kvTransfer", "tcp")), Deployment.class, "demo-tandem-decode").getSpec().getTemplate();
    assertEquals(List.of("grpc", "metrics", "kv-transfer"), tcp.getSpec().getContainers().getFirst().getPorts().stream().map(p -> p.getName()).toList());
    assertFalse(tcp.getMetadata().getLabels().containsKey("tandem.dev/model"));
    var free = named(render(Map.of("worker.kvTransferPort", 0)), Deployment.class, "demo-tandem-decode").getSpec().getTemplate();
    assertEquals(List.of("grpc", "metrics"), free.getSpec().getContainers().getFirst().getPorts().stream().map(p -> p.getName()).toList());
  }

  /** tls.secretName mounts the Secret into frontends and workers and points --tls-dir (TANDEM_TLS_DIR) at it. */
  @Test
  void aTlsSecretReachesTheFrontendAndEveryWorker() {
    for (String source : List.of("none", "pvc")) {
      List<KubernetesResource> docs = render(Map.of("tls.secretName", "tandem-tls", "model.source", source, "model.pvc.claimName", "models"));
      for (String name : List.of("demo-tandem-frontend", "demo-tandem-prefill", "demo-tandem-decode")) {
        var pod = named(docs, Deployment.class, name).getSpec().getTemplate().getSpec();
        Container c = pod.getContainers().getFirst();
        assertTrue(c.getEnv().stream().anyMatch(e -> e.getName().equals("TANDEM_TLS_DIR") && e.getValue().equals("/etc/tandem/tls")), name);
        assertTrue(c.getVolumeMounts().stream().anyMatch(m -> m.getName().equals("tls") && m.getMountPath().equals("/etc/tandem/tls") && m.getReadOnly()), name);
        assertTrue(pod.getVolumes().stream().anyMatch(v -> v.getName().equals("tls") && v.getSecret().getSecretName().equals("tandem-tls")), name);
        if (!name.endsWith("frontend") && source.equals("pvc")) {
          assertTrue(pod.getVolumes().stream().anyMatch(v -> v.getName().equals("model")), "the model volume stays beside it");
        }
      }
    }
    var plain = named(render(Map.of()), Deployment.class, "demo-tandem-decode").getSpec().getTemplate().getSpec().getContainers().getFirst();
    assertFalse(plain.getEnv().stream().anyMatch(e -> e.getName().equals("TANDEM_TLS_DIR")), "plaintext by default");
  }

  @Test
  void gpuValuesReachTheWorkerContainers() {
    List<KubernetesResource> docs = render(Map.of("prefill.gpus", 1, "decode.gpus", 2));
    var prefill = named(docs, Deployment.class, "demo-tandem-prefill").getSpec().getTemplate().getSpec().getContainers().getFirst();
    var decode = named(docs, Deployment.class, "demo-tandem-decode").getSpec().getTemplate().getSpec().getContainers().getFirst();
    assertEquals(new Quantity("1"), prefill.getResources().getLimits().get("nvidia.com/gpu"));
    assertEquals(new Quantity("2"), decode.getResources().getLimits().get("nvidia.com/gpu"));
    // A pool given GPUs computes on one, and says so at start-up where the node has none.
    assertTrue(prefill.getArgs().contains("--compute=cuda"), prefill.getArgs().toString());
    assertTrue(decode.getArgs().contains("--compute=cuda"), decode.getArgs().toString());
    var cpu = named(render(Map.of()), Deployment.class, "demo-tandem-decode").getSpec().getTemplate().getSpec().getContainers().getFirst();
    assertTrue(cpu.getArgs().stream().noneMatch(a -> a.startsWith("--compute")), cpu.getArgs().toString());
  }

  /**
   * {@code --set-file frontend.chatTemplate=FILE} reaches the frontend as TANDEM_CHAT_TEMPLATE
   * (--chat-template takes the template itself), character for character: quotes, Jinja's braces,
   * line breaks and non-ASCII text. Here through a values file, which is what --set-file amounts to.
   */
  @Test
  void aChatTemplateReachesTheFrontendUnchanged(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
    String template = String.join("\n",
        "{%- for m in messages %}",
        "{{- '<|im_start|>' + m['role'] + '\\n' + m[\"content\"] | trim + '<|im_end|>\\n' }}",
        "{%- endfor %}",
        "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}  # « répondre »: tab\there");
    Path values = dir.resolve("values.yaml");
    Files.writeString(values, "frontend:\n  chatTemplate: |-\n" + template.lines().map(l -> "    " + l).collect(Collectors.joining("\n")) + "\n");
    String manifest = new Helm(CHART).template().withName("demo").withNamespace("llm").withValuesFile(values).call();
    ConfigMap config = named(documents(manifest), ConfigMap.class, "demo-tandem-config");
    assertEquals(template, config.getData().get("TANDEM_CHAT_TEMPLATE"));
    assertTrue(cliVariables().contains("TANDEM_CHAT_TEMPLATE"));
    assertFalse(named(render(Map.of()), ConfigMap.class, "demo-tandem-config").getData().containsKey("TANDEM_CHAT_TEMPLATE"),
        "the model's own template unless one is given");
  }

  /**
   * model.speculativeConfig and model.hfOverrides (JSON, so given in a values file: --set splits at
   * their commas) reach the workers as TANDEM_SPECULATIVE_CONFIG and TANDEM_HF_OVERRIDES.
   */
  @Test
  void jsonWorkerSettingsReachTheWorkersUnchanged(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
    Map<String, String> jsonByValue = Map.of(
        "speculativeConfig", "{\"method\": \"ngram\", \"num_speculative_tokens\": 4, \"prompt_lookup_max\": 3}",
        "hfOverrides", "{\"classifier_from_token\": [\"no\", \"yes\"], \"is_original_qwen3_reranker\": true}");
    Map<String, String> variables = Map.of("speculativeConfig", "TANDEM_SPECULATIVE_CONFIG", "hfOverrides", "TANDEM_HF_OVERRIDES");
    for (var e : jsonByValue.entrySet()) {
      Path values = dir.resolve(e.getKey() + ".yaml");
      Files.writeString(values, "model:\n  " + e.getKey() + ": '" + e.getValue() + "'\n");
      String manifest = new Helm(CHART).template().withName("demo").withNamespace("llm").withValuesFile(values).call();
      String variable = variables.get(e.getKey());
      assertEquals(e.getValue(), named(documents(manifest), ConfigMap.class, "demo-tandem-config").getData().get(variable));
      assertTrue(cliVariables().contains(variable), variable);
      assertEquals("", named(render(Map.of()), ConfigMap.class, "demo-tandem-config").getData().get(variable), "off unless given");
    }
  }

  /**
   * {@code model.loraModules} reaches the workers as TANDEM_LORA_MODULES, which {@code
   * --lora-modules} reads back as the same adapters; none unless given; a path with a space (it
   * would split) is refused by the chart's schema, naming the field. {@code
   * model.allowRuntimeLoraUpdating} reaches frontend and workers alike, off unless given.
   */
  @Test
  void loraModulesReachTheWorkersAsTheFlagReadsThem(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
    Path sql = Files.createDirectories(dir.resolve("adapters/sql"));
    Path chat = Files.createDirectories(dir.resolve("adapters/chat"));
    Path values = dir.resolve("values.yaml");
    Files.writeString(values, "model:\n  maxLoraRank: 64\n  allowRuntimeLoraUpdating: true\n  loraModules:\n    - {name: sql, path: " + sql
        + "}\n    - {name: chat, path: " + chat + "}\n");
    String manifest = new Helm(CHART).template().withName("demo").withNamespace("llm").withValuesFile(values).call();
    var data = named(documents(manifest), ConfigMap.class, "demo-tandem-config").getData();
    assertEquals("sql=" + sql + " chat=" + chat, data.get("TANDEM_LORA_MODULES"));
    assertEquals("64", data.get("TANDEM_MAX_LORA_RANK"));
    assertEquals("true", data.get("TANDEM_ALLOW_RUNTIME_LORA_UPDATING"), "frontend and workers read it from the same ConfigMap");
    assertTrue(cliVariables().containsAll(List.of("TANDEM_LORA_MODULES", "TANDEM_MAX_LORA_RANK", "TANDEM_ALLOW_RUNTIME_LORA_UPDATING")));
    EngineOptions flags = new EngineOptions();
    flags.loraModules = List.of(data.get("TANDEM_LORA_MODULES"));
    assertEquals(List.of(new dev.tandem.engine.model.LoraAdapter.Source("sql", sql), new dev.tandem.engine.model.LoraAdapter.Source("chat", chat)),
        flags.loraSources(false), "the flag reads the variable back as the same adapters");
    var defaults = named(render(Map.of()), ConfigMap.class, "demo-tandem-config").getData();
    assertEquals("", defaults.get("TANDEM_LORA_MODULES"), "none unless given");
    assertEquals("false", defaults.get("TANDEM_ALLOW_RUNTIME_LORA_UPDATING"), "no loading while serving unless asked");
    Files.writeString(values, "model:\n  loraModules:\n    - {name: sql, path: /models/my adapters/sql}\n");
    var refused = assertThrows(IllegalStateException.class,
        () -> new Helm(CHART).template().withName("demo").withValuesFile(values).call());
    assertTrue(refused.getMessage().contains("loraModules"), refused.getMessage());
  }

  /**
   * frontend.toolCallParser, reasoningParser and toolCallConstraint reach the frontend as the
   * variables its flags read (auto unless given); every name the chart's schema lets through is
   * one the frontend takes, and one it does not know is refused at install, naming the field.
   * worker.schedulingPolicy reaches the workers' --scheduling-policy (fcfs unless given).
   */
  @Test
  void outputParsersReachTheFrontendAndTheSchemaKnowsTheirNames() throws Exception {
    var data = named(render(Map.of("frontend.toolCallParser", "llama3_json", "frontend.reasoningParser", "deepseek_r1",
        "frontend.toolCallConstraint", "none")), ConfigMap.class, "demo-tandem-config").getData();
    assertEquals("llama3_json", data.get("TANDEM_TOOL_CALL_PARSER"));
    assertEquals("deepseek_r1", data.get("TANDEM_REASONING_PARSER"));
    assertEquals("none", data.get("TANDEM_TOOL_CALL_CONSTRAINT"));
    assertTrue(cliVariables().containsAll(List.of("TANDEM_TOOL_CALL_PARSER", "TANDEM_REASONING_PARSER", "TANDEM_TOOL_CALL_CONSTRAINT")));
    var parsers = dev.tandem.frontend.parse.OutputParsers.resolve(data.get("TANDEM_REASONING_PARSER"), data.get("TANDEM_TOOL_CALL_PARSER"),
        false, s -> false);
    assertEquals(dev.tandem.frontend.parse.ToolCallFormat.LLAMA3_JSON, parsers.toolCalls());
    assertEquals(dev.tandem.frontend.parse.ReasoningFormat.DEEPSEEK_R1, parsers.reasoning());
    var defaults = named(render(Map.of()), ConfigMap.class, "demo-tandem-config").getData();
    for (String v : List.of("TANDEM_TOOL_CALL_PARSER", "TANDEM_REASONING_PARSER", "TANDEM_TOOL_CALL_CONSTRAINT")) {
      assertEquals("auto", defaults.get(v), v);
    }
    var schema = new com.fasterxml.jackson.databind.ObjectMapper().readTree(CHART.resolve("values.schema.json").toFile())
        .at("/properties/frontend/properties");
    for (var name : schema.at("/toolCallParser/enum")) {
      dev.tandem.frontend.parse.OutputParsers.resolve("none", name.asText(), false, s -> false); // throws for a name it does not know
    }
    for (var name : schema.at("/reasoningParser/enum")) {
      dev.tandem.frontend.parse.OutputParsers.resolve(name.asText(), "none", false, s -> false);
    }
    assertTrue(schema.at("/toolCallParser/enum").size() >= 8 && schema.at("/reasoningParser/enum").size() == 4);
    assertEquals("fcfs", defaults.get("TANDEM_SCHEDULING_POLICY"));
    assertEquals("priority", named(render(Map.of("worker.schedulingPolicy", "priority")), ConfigMap.class, "demo-tandem-config").getData()
        .get("TANDEM_SCHEDULING_POLICY"), "the workers' --scheduling-policy");
    assertTrue(cliVariables().contains("TANDEM_SCHEDULING_POLICY"));
    var refused = assertThrows(IllegalStateException.class, () -> render(Map.of("frontend.toolCallParser", "granite")));
    assertTrue(refused.getMessage().contains("toolCallParser"), refused.getMessage());
  }

  @Test
  void etcdDiscoveryBringsItsStatefulSetAndPointsEveryRoleAtIt() {
    List<KubernetesResource> docs = render(Map.of("discovery", "etcd", "etcd.enabled", true, "etcd.storage.size", "1Gi"));
    StatefulSet etcd = named(docs, StatefulSet.class, "demo-tandem-etcd");
    assertEquals("1Gi", etcd.getSpec().getVolumeClaimTemplates().getFirst().getSpec().getResources().getRequests().get("storage").toString());
    named(docs, Service.class, "demo-tandem-etcd");
    ConfigMap config = named(docs, ConfigMap.class, "demo-tandem-config");
    assertEquals("etcd", config.getData().get("TANDEM_DISCOVERY"));
    assertEquals("http://demo-tandem-etcd:2379", config.getData().get("TANDEM_ETCD_ENDPOINTS"));
    assertTrue(all(docs, Role.class).stream().noneMatch(r -> r.getMetadata().getName().endsWith("-discovery")),
        "etcd discovery needs no Kubernetes API access");
  }

  @Test
  void thePlannerMayScaleTheTwoWorkerDeploymentsAndNothingElse() {
    List<KubernetesResource> docs = render(Map.of("planner.enabled", true));
    Role role = named(docs, Role.class, "demo-tandem-planner");
    var scale = role.getRules().getFirst();
    assertEquals(List.of("apps"), scale.getApiGroups());
    assertEquals(Set.of("demo-tandem-prefill", "demo-tandem-decode"), Set.copyOf(scale.getResourceNames()));
    for (String target : scale.getResourceNames()) {
      named(docs, Deployment.class, target);
    }
    Deployment planner = named(docs, Deployment.class, "demo-tandem-planner");
    assertEquals("demo-tandem-planner", planner.getSpec().getTemplate().getSpec().getServiceAccountName());
    List<String> args = planner.getSpec().getTemplate().getSpec().getContainers().getFirst().getArgs();
    assertTrue(args.containsAll(List.of("planner", "--connector=kubernetes", "--prefill-deployment=demo-tandem-prefill",
        "--decode-deployment=demo-tandem-decode", "--frontend-url=http://demo-tandem-frontend:8000")), args.toString());
    var pods = role.getRules().stream().filter(r -> r.getResources().contains("pods")).findFirst().orElseThrow();
    assertTrue(pods.getVerbs().contains("patch"), "pod-deletion-cost needs patch on pods");
    // The planner owns the pools' sizes: helm upgrade must not reset them.
    assertNull(named(docs, Deployment.class, "demo-tandem-decode").getSpec().getReplicas());
  }

  @Test
  void monitoringValuesRenderServiceMonitorsAndTheDashboard() throws Exception {
    List<KubernetesResource> docs = render(Map.of("metrics.serviceMonitor.enabled", true, "grafana.dashboard.enabled", true,
        "model.engine", "mocker", "model.source", "none"));
    List<GenericKubernetesResource> monitors = all(docs, GenericKubernetesResource.class).stream()
        .filter(r -> r.getKind().equals("ServiceMonitor")).toList();
    assertEquals(3, monitors.size());
    for (GenericKubernetesResource m : monitors) {
      assertEquals(Set.of("selector", "endpoints"), ((Map<?, ?>) m.getAdditionalProperties().get("spec")).keySet());
    }
    ConfigMap dashboard = named(docs, ConfigMap.class, "demo-tandem-dashboard");
    String json = dashboard.getData().get("tandem.json");
    assertEquals(Files.readString(CHART.resolve("dashboards/tandem.json")).strip(), json.strip());
    for (String metric : List.of("tandem_frontend_time_to_first_token_seconds_bucket", "tandem_frontend_inter_token_latency_seconds_bucket",
        "tandem_frontend_cached_tokens_total", "tandem_worker_engine_kv_blocks_used", "tandem_worker_engine_waiting_requests",
        "tandem_worker_kv_transfer_bytes_total", "tandem_router_disagg_decisions_total", "tandem_frontend_uncached_prompt_tokens_bucket",
        "tandem_frontend_lora_requests_total")) {
      assertTrue(json.contains(metric), metric);
    }
    var worker = named(docs, Deployment.class, "demo-tandem-decode").getSpec().getTemplate().getSpec();
    assertTrue(worker.getVolumes() == null || worker.getVolumes().isEmpty(), "the mocker mounts no model");
  }

  @Test
  void aValueOfTheWrongTypeIsRejectedNamingTheField() {
    var e = assertThrows(IllegalStateException.class, () -> render(Map.of("frontend.replicas", "two")));
    assertTrue(e.getMessage().contains("frontend.replicas: Invalid type. Expected: integer, given: string"), e.getMessage());
    var unknown = assertThrows(IllegalStateException.class, () -> render(Map.of("decode.replica", 3)));
    assertTrue(unknown.getMessage().contains("replica"), unknown.getMessage());
  }

  /**
   * deploy/kubernetes/ holds the chart rendered for users without Helm; it must be what the chart
   * renders now. {@code -Dtandem.renderManifests=true} writes them anew.
   */
  @Test
  void theManifestsInDeployKubernetesAreTheChartRendered() throws Exception {
    Map<String, Map<String, Object>> variants = Map.of(
        "tandem.yaml", Map.of(),
        "tandem-etcd.yaml", Map.of("discovery", "etcd", "etcd.enabled", true));
    for (var v : variants.entrySet()) {
      var template = new Helm(CHART).template().withName("tandem").withNamespace("tandem");
      Map<String, Object> values = new java.util.TreeMap<>(v.getValue()); // one order, for the header
      values.forEach(template::set);
      String rendered = "# Rendered from deploy/helm/tandem (release tandem, namespace tandem"
          + (values.isEmpty() ? "" : ", " + values) + "); do not edit.\n"
          + "# Regenerate: ./mvnw -pl integration-tests verify -Dtest=HelmChartTest -Dtandem.renderManifests=true\n"
          + template.call();
      Path file = CHART.resolve("../../kubernetes").normalize().resolve(v.getKey());
      if (Boolean.getBoolean("tandem.renderManifests")) {
        Files.writeString(file, rendered);
      }
      assertEquals(rendered, Files.readString(file), file + " is stale; regenerate it (see its header)");
      documents(rendered);
    }
  }

  @Test
  void theTypedCheckCatchesAFieldKubernetesDoesNotHave() {
    AssertionError e = assertThrows(AssertionError.class, () -> documents("""
        apiVersion: v1
        kind: Service
        metadata:
          name: typo
        spec:
          selectr: {app: x}
        """));
    assertTrue(e.getMessage().contains("Service/typo.spec: [selectr]"), e.getMessage());
  }

  /** Every TANDEM_* variable a tandem command reads. */
  private static Set<String> cliVariables() {
    Set<String> names = new java.util.HashSet<>();
    collect(new CommandLine(new Main()).setInterpolateVariables(false), names);
    return names;
  }

  private static void collect(CommandLine cmd, Set<String> names) {
    for (var option : cmd.getCommandSpec().options()) {
      String dv = option.defaultValue();
      if (dv != null) {
        Matcher m = TANDEM_ENV.matcher(dv);
        while (m.find()) {
          names.add(m.group(1));
        }
      }
    }
    cmd.getSubcommands().values().forEach(sub -> collect(sub, names));
  }
}
