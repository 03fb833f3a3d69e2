package dev.tandem.cli;

import dev.tandem.frontend.http.Admission;
import dev.tandem.frontend.http.ApiKeys;
import dev.tandem.frontend.http.FrontendServer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import picocli.CommandLine.Option;

/** Where the HTTP frontend listens; shared by {@code serve} and {@code frontend}. */
final class HttpOptions {
  @Option(names = "--host", defaultValue = "${env:TANDEM_HOST:-0.0.0.0}", description = "HTTP address to bind (default ${DEFAULT-VALUE}).")
  String host;

  @Option(names = "--port", converter = PortConverter.class, defaultValue = "${env:TANDEM_PORT:-8000}", description = "HTTP port (default ${DEFAULT-VALUE}).")
  int port;

  @Option(names = "--max-body-bytes", defaultValue = "33554432", description = "Largest request body accepted (default ${DEFAULT-VALUE}).")
  int maxBodyBytes;

  @Option(names = "--worker-wait-s", defaultValue = "${env:TANDEM_WORKER_WAIT_S:-0}",
      description = "How long a request waits when no worker serves at all (a pool the planner scaled to zero coming back, workers starting) before a 503; 0 fails at once (default ${DEFAULT-VALUE}).")
  double workerWaitSeconds;

  @Option(names = "--api-key", split = ",", defaultValue = "${env:TANDEM_API_KEY}",
      description = "API key(s) clients must send as 'Authorization: Bearer <key>' (comma-separated; /live and /health need none).")
  List<String> apiKeys;

  @Option(names = "--api-key-file", defaultValue = "${env:TANDEM_API_KEY_FILE}", description = "A file of API keys, one a line (# comments).")
  Path apiKeyFile;

  @Option(names = "--metrics-need-key", description = "With API keys, /metrics needs one too (default: open, for Prometheus).")
  boolean metricsNeedKey;

  @Option(names = "--allow-runtime-lora-updating", defaultValue = "${env:TANDEM_ALLOW_RUNTIME_LORA_UPDATING:-false}",
      description = "Serve POST /v1/load_lora_adapter and /v1/unload_lora_adapter (vLLM's), loading and unloading LoRA adapters on every worker while serving (workers need the flag too; under serve it covers them; default ${DEFAULT-VALUE}).")
  boolean loraUpdates;

  @Option(names = "--max-inflight-requests", defaultValue = "${env:TANDEM_MAX_INFLIGHT_REQUESTS:-0}",
      description = "Generation requests in flight before new ones get 429 with Retry-After (0: no limit; default ${DEFAULT-VALUE}).")
  int maxInflight;

  @Option(names = "--max-connections", defaultValue = "${env:TANDEM_MAX_CONNECTIONS:-10000}",
      description = "Open connections before new ones are closed (0: no limit; default ${DEFAULT-VALUE}).")
  int maxConnections;

  @Option(names = "--request-read-timeout-s", defaultValue = "60",
      description = "A request must arrive whole within this long of its first byte, or 408 and close (0: none; default ${DEFAULT-VALUE}).")
  double readTimeoutSeconds;

  @Option(names = "--idle-timeout-s", defaultValue = "300",
      description = "A connection with no request for this long is closed (0: never; default ${DEFAULT-VALUE}).")
  double idleTimeoutSeconds;

  @Option(names = "--reasoning-parser", defaultValue = "${env:TANDEM_REASONING_PARSER:-auto}",
      description = "Where reasoning is split from content: auto (from the chat template), none, qwen3, deepseek_r1 (default ${DEFAULT-VALUE}).")
  String reasoningParser;

  @Option(names = "--tool-call-parser", defaultValue = "${env:TANDEM_TOOL_CALL_PARSER:-auto}",
      description = "How tool calls are read from the output: auto (from the chat template), none, hermes (qwen3), llama3_json, "
          + "mistral, pythonic, phi4_mini_json (default ${DEFAULT-VALUE}).")
  String toolCallParser;

  @Option(names = "--tool-call-constraint", defaultValue = "${env:TANDEM_TOOL_CALL_CONSTRAINT:-auto}",
      description = "Whether tool calls the model writes under tool_choice auto are held to the tools' schemas: auto (with the hermes "
          + "parser, on an engine with structured outputs), none (default ${DEFAULT-VALUE}).")
  String toolCallConstraint;

  @Option(names = "--migration-limit", defaultValue = "${env:TANDEM_MIGRATION_LIMIT:-3}",
      description = "Times a stream may move to another worker (prompt plus the tokens so far) when its worker fails mid-stream; "
          + "0 turns migration off (default ${DEFAULT-VALUE}).")
  int migrationLimit;

  @Option(names = "--generation-config", defaultValue = "${env:TANDEM_GENERATION_CONFIG:-auto}",
      description = "auto: requests that do not set temperature, top_p, top_k, min_p or repetition_penalty get the model's "
          + "generation_config.json values (as vLLM does); none: OpenAI's defaults (default ${DEFAULT-VALUE}).")
  String generationConfig;

  @Option(names = "--chat-template", defaultValue = "${env:TANDEM_CHAT_TEMPLATE}",
      description = "A Jinja chat template file (or the template itself, as one string) to render chats with, instead of the "
          + "model's own (its chat_template.jinja or tokenizer_config.json's chat_template); a model without one serves chat only with it.")
  String chatTemplate;

  /** {@code --chat-template}: a file's text, the template itself, or null for the model's own. */
  private String chatTemplate() {
    if (chatTemplate == null || chatTemplate.isBlank()) {
      return null;
    }
    Path file = Path.of(chatTemplate);
    if (Files.isRegularFile(file)) {
      try {
        return Files.readString(file);
      } catch (java.io.IOException e) {
        throw new IllegalArgumentException("--chat-template " + file + ": cannot be read: " + e.getMessage());
      }
    }
    if (chatTemplate.contains("{{") || chatTemplate.contains("{%")) {
      return chatTemplate;
    }
    throw new IllegalArgumentException("--chat-template: " + chatTemplate + " is neither a file nor a Jinja template");
  }

  FrontendServer.Config config() {
    Flags.atLeast("--max-body-bytes", maxBodyBytes, 1);
    Flags.nonNegative("--worker-wait-s", workerWaitSeconds);
    Flags.atLeast("--max-inflight-requests", maxInflight, 0);
    Flags.atLeast("--max-connections", maxConnections, 0);
    Flags.nonNegative("--request-read-timeout-s", readTimeoutSeconds);
    Flags.nonNegative("--idle-timeout-s", idleTimeoutSeconds);
    Flags.atLeast("--migration-limit", migrationLimit, 0);
    if (!toolCallConstraint.equals("auto") && !toolCallConstraint.equals("none")) {
      throw new IllegalArgumentException("--tool-call-constraint: expected auto or none, was '" + toolCallConstraint + "'");
    }
    ApiKeys keys = ApiKeys.of(apiKeys == null ? List.of() : apiKeys);
    if (apiKeyFile != null) {
      keys = keys.and(ApiKeys.fromFile(apiKeyFile));
    }
    Admission admission = new Admission(keys, metricsNeedKey, maxInflight, maxConnections,
        Duration.ofMillis((long) (readTimeoutSeconds * 1000)), Duration.ofMillis((long) (idleTimeoutSeconds * 1000)), loraUpdates);
    return new FrontendServer.Config(
        host, port, maxBodyBytes, Duration.ofMillis((long) (workerWaitSeconds * 1000)), admission, reasoningParser, toolCallParser,
        migrationLimit, generationConfig, chatTemplate(), toolCallConstraint.equals("auto"));
  }
}
