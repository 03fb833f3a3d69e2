package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Commands given bad input: one line naming the flag and, for a file, the file and what is wrong in
 * it; never a stack trace.
 */
@Tag("e2e")
class CommandBadInputTest {
  @TempDir Path dir;

  private String refused(String... args) {
    StringWriter err = new StringWriter();
    var cl = Main.commandLine();
    cl.setErr(new PrintWriter(err));
    assertEquals(2, cl.execute(args), String.join(" ", args) + ": " + err);
    assertFalse(err.toString().contains("\tat "), "a message, not a stack trace: " + err);
    return err.toString();
  }

  @Test
  void aMalformedProfileIsRefusedNamingTheFlagAndFile() throws Exception {
    Path profile = Files.writeString(dir.resolve("profile.json"), "{\"model\": \"x\", \"prefill\": [");
    String err = refused("simulate", "--trace", "steady", "--duration-s", "60", "--profile", profile.toString());
    assertTrue(err.contains("--profile " + profile) && err.contains("not valid JSON"), err);
  }

  @Test
  void aTraceFileWithABadFieldIsRefusedNamingTheLineAndField() throws Exception {
    Path trace = Files.writeString(dir.resolve("trace.jsonl"),
        "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 10, \"hash_ids\": [1]}\n"
            + "{\"timestamp\": 5, \"input_length\": \"many\", \"output_length\": 10, \"hash_ids\": [1]}\n");
    String err = refused("simulate", "--trace", trace.toString());
    assertTrue(err.contains("--trace " + trace + ":2") && err.contains("input_length"), err);
  }

  @Test
  void anEmptyTraceFileIsRefused() throws Exception {
    Path trace = Files.writeString(dir.resolve("empty.jsonl"), "");
    assertTrue(refused("simulate", "--trace", trace.toString()).contains("no requests to replay"));
  }

  @Test
  void ratesAndLengthsThatCannotBeSimulatedAreRefusedNamingTheFlag() {
    assertTrue(refused("simulate", "--rate", "-5", "--duration-s", "60").contains("--rate must be a positive number, was -5.0"));
    assertTrue(refused("simulate", "--rate-scale", "0", "--duration-s", "60").contains("--rate-scale"));
    assertTrue(refused("simulate", "--duration-s", "NaN").contains("--duration-s"));
    assertTrue(refused("simulate", "--duration-s", "60", "--narrow", "-1").contains("--narrow"));
  }

  @Test
  void benchWithNoFrontendSaysSo() throws Exception {
    int port;
    try (var s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort(); // free once closed: nothing listens there
    }
    String err = refused("bench", "--url", "http://127.0.0.1:" + port, "--num-requests", "1");
    assertTrue(err.contains("no frontend answers at http://127.0.0.1:" + port), err);
  }

  @Test
  void aPortOutOfRangeIsRefusedBeforeAnythingStarts() {
    for (String[] args : new String[][] {{"serve", "--port", "99999"}, {"worker", "--port", "-1"}, {"frontend", "--port", "65536"},
        {"worker", "--kv-transfer-port", "70000"}, {"planner", "--metrics-port", "x"}}) {
      StringWriter err = new StringWriter();
      var cl = Main.commandLine();
      cl.setErr(new PrintWriter(err));
      assertEquals(2, cl.execute(args), String.join(" ", args));
      assertTrue(err.toString().contains("Invalid value for option '" + args[1] + "'"), err.toString());
    }
  }

  @Test
  void engineCountsOutOfRangeAreRefusedNamingTheFlagBeforeAnythingStarts() {
    String[][] cases = {
      {"--block-size", "0", "--block-size must be at least 1, was 0"},
      {"--kv-blocks", "0", "--kv-blocks must be at least 1, was 0"},
      {"--compute-threads", "-2", "--compute-threads must be at least 0, was -2"},
      {"--max-num-seqs", "0", "--max-num-seqs must be at least 1, was 0"},
      {"--max-batched-tokens", "-5", "--max-batched-tokens must be at least 1, was -5"},
      {"--max-context-length", "0", "--max-context-length must be at least 1, was 0"},
      {"--speedup-ratio", "NaN", "--speedup-ratio must be 0 or a positive number, was NaN"},
    };
    for (String command : new String[] {"serve", "worker"}) {
      for (String[] c : cases) {
        String err = refused(command, "--engine", "mocker", "--port", "0", c[0], c[1]);
        assertTrue(err.contains(c[2]), command + " " + c[0] + " " + c[1] + ": " + err);
      }
    }
    assertTrue(refused("frontend", "--block-size", "0", "--worker", "127.0.0.1:9").contains("--block-size must be at least 1, was 0"));
  }

  @Test
  void frontendAndRouterFlagsOutOfRangeAreRefusedNamingTheFlagBeforeAnythingStarts() {
    String[][] cases = {
      {"--migration-limit", "-1", "--migration-limit must be at least 0, was -1"},
      {"--max-inflight-requests", "-1", "--max-inflight-requests must be at least 0, was -1"},
      {"--max-connections", "-1", "--max-connections must be at least 0, was -1"},
      {"--request-read-timeout-s", "-1", "--request-read-timeout-s must be 0 or a positive number, was -1.0"},
      {"--idle-timeout-s", "Infinity", "--idle-timeout-s must be 0 or a positive number, was Infinity"},
      {"--worker-wait-s", "-1", "--worker-wait-s must be 0 or a positive number, was -1.0"},
      {"--router-temperature", "-1", "--router-temperature must be 0 or a positive number, was -1.0"},
      {"--prefill-load-scale", "-1", "--prefill-load-scale must be 0 or a positive number, was -1.0"},
      {"--active-request-weight", "NaN", "--active-request-weight must be 0 or a positive number, was NaN"},
      {"--itl-target-ms", "-1", "--itl-target-ms must be 0 or a positive number, was -1.0"},
      {"--missing-events-window-s", "-1", "--missing-events-window-s must be at least 0, was -1"},
    };
    for (String[] c : cases) {
      String err = refused("serve", "--engine", "mocker", "--port", "0", c[0], c[1]);
      assertTrue(err.contains(c[2]), "serve " + c[0] + " " + c[1] + ": " + err);
    }
    for (String[] c : new String[][] {{"--worker-unresponsive-s", "-1"}, {"--worker-step-timeout-s", "NaN"}, {"--drain-timeout-s", "-5"}}) {
      String err = refused("frontend", "--port", "0", "--worker", "127.0.0.1:9", c[0], c[1]);
      assertTrue(err.contains(c[0] + " must be"), "frontend " + c[0] + " " + c[1] + ": " + err);
    }
    assertTrue(refused("worker", "--engine", "mocker", "--port", "0", "--drain-timeout-s", "-5").contains("--drain-timeout-s must be at least 0, was -5"));
  }

  @Test
  void benchFlagsOutOfRangeAreRefusedNamingTheFlagBeforeAFrontendIsAsked() {
    // Nothing listens at the URL: each refusal comes from the flags, not from a failed connection.
    String url = "http://127.0.0.1:9";
    assertTrue(refused("bench", "--url", url, "--request-rate", "-3").contains("--request-rate must be 0"));
    assertTrue(refused("bench", "--url", url, "--concurrency", "0").contains("--concurrency must be at least 1 (or give --request-rate > 0), was 0"));
    assertTrue(refused("bench", "--url", url, "--num-requests", "0").contains("--num-requests must be at least 1, was 0"));
    assertTrue(refused("bench", "--url", url, "--input-tokens", "0").contains("--input-tokens and --output-tokens must be at least 1, were 0 and"));
    assertTrue(refused("bench", "--url", url, "--prefixes", "2", "--prefix-tokens", "5000", "--input-tokens", "100")
        .contains("1 <= --prefix-tokens <= --input-tokens"));
  }

  @Test
  void aChatTemplateThatIsNeitherAFileNorATemplateIsRefused() {
    String err = refused("serve", "--engine", "mocker", "--port", "0", "--chat-template", dir.resolve("missing.jinja").toString());
    assertTrue(err.contains("--chat-template: " + dir.resolve("missing.jinja") + " is neither a file nor a Jinja template"), err);
  }

  @Test
  void aWorkerAddressWithoutAPortIsRefusedRatherThanWaitedFor() {
    String err = refused("frontend", "--port", "0", "--worker", "127.0.0.1:9000,nohost");
    assertTrue(err.contains("--worker: 'nohost' is not host:port"), err);
  }

  @Test
  void plannerAndProfileSettingsOutOfRangeAreRefusedNamingTheFlag() {
    String[][] planner = {
      {"--interval-s", "0", "--interval-s must be a positive number, was 0.0"},
      {"--startup-s", "-1", "--startup-s must be 0 or a positive number, was -1.0"},
      {"--headroom", "-1", "--headroom must be 0 or a positive number, was -1.0"},
      {"--ttft-ms", "0", "--ttft-ms must be a positive number, was 0.0"},
      {"--sla-percentile", "100", "--sla-percentile must be at least 50 and below 100, was 100.0"},
      {"--idle-intervals-to-zero", "0", "--idle-intervals-to-zero must be at least 1, was 0"},
    };
    for (String[] c : planner) {
      assertTrue(refused("planner", c[0], c[1]).contains(c[2]), "planner " + c[0] + " " + c[1]);
      assertTrue(refused("simulate", "--duration-s", "60", c[0], c[1]).contains(c[2]), "simulate " + c[0] + " " + c[1]);
    }
    assertTrue(refused("planner", "--decode-min", "5", "--decode-max", "2").contains("--decode-min and --decode-max need 0 <= min <= max, were 5 and 2"));
    assertTrue(refused("profile", "--engine", "mocker", "--isl", "512,0").contains("--isl must be at least 1, was 0"));
    assertTrue(refused("profile", "--engine", "mocker", "--batch", "-2").contains("--batch must be at least 1, was -2"));
  }

  @Test
  void aProfileThatCouldNotBeWrittenIsRefusedBeforeProfiling() throws Exception {
    Path file = Files.writeString(dir.resolve("a-file"), "");
    assertTrue(refused("profile", "--engine", "mocker", "--out", file.resolve("profile.json").toString()).contains("cannot make its folder"));
    assertTrue(refused("profile", "--engine", "mocker", "--out", dir.toString()).contains("cannot write a file there"));
  }
}
