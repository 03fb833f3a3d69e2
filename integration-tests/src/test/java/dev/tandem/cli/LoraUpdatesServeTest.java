package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.common.WorkerId;
import dev.tandem.engine.builtin.BuiltinConfig;
import dev.tandem.engine.builtin.BuiltinEngine;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.LoraAdapter;
import dev.tandem.engine.modeltools.LoraGenerator;
import dev.tandem.frontend.http.Admission;
import dev.tandem.frontend.http.FrontendServer;
import dev.tandem.engine.ModelFiles;
import dev.tandem.worker.WorkerServer;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * LoRA adapters loaded and unloaded over real HTTP while two built-in workers serve (vLLM's {@code
 * /v1/load_lora_adapter} and {@code /v1/unload_lora_adapter}): a loaded adapter is listed, named by
 * requests and gives what the same adapter loaded at startup gives; an unloaded one is a 404 again,
 * and the name loaded for other weights reuses none of the old one's cached KV. Bad bodies and bad
 * adapters are 400s naming the field and file, and the deployment keeps serving. A worker that
 * refuses a load (one started without {@code --allow-runtime-lora-updating}) undoes it everywhere;
 * a worker that joins later is given the adapters loaded before it came.
 */
@org.junit.jupiter.api.Tag("e2e")
class LoraUpdatesServeTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String PROMPT = "The harbour master rings the bell twice at dawn, once for the fishing boats leaving the quay "
      + "and once for the ferry that brings the baker's flour across the bay from the mainland";

  private static HttpResponse<String> complete(LocalDeployment d, String model, String pin) throws Exception {
    return TestDeployments.post(d, "/v1/completions", "{\"model\":\"" + model + "\",\"prompt\":\"" + PROMPT
        + "\",\"max_tokens\":12,\"temperature\":0" + (pin == null ? "" : ",\"tandem\":{\"worker_id\":\"" + pin + "\"}") + "}");
  }

  private static JsonNode completed(LocalDeployment d, String model) throws Exception {
    return completed(d, model, null);
  }

  private static JsonNode completed(LocalDeployment d, String model, String pin) throws Exception {
    HttpResponse<String> r = complete(d, model, pin);
    assertEquals(200, r.statusCode(), r.body());
    return JSON.readTree(r.body());
  }

  private static String text(JsonNode completion) {
    return completion.at("/choices/0/text").asText();
  }

  private static List<String> models(LocalDeployment d) throws Exception {
    JsonNode data = JSON.readTree(TestDeployments.get(d, "/v1/models").body()).path("data");
    return StreamSupport.stream(data.spliterator(), false).map(m -> m.path("id").asText()).toList();
  }

  private static HttpResponse<String> load(LocalDeployment d, String name, Path path) throws Exception {
    return TestDeployments.post(d, "/v1/load_lora_adapter", "{\"lora_name\":\"" + name + "\",\"lora_path\":\"" + path + "\"}");
  }

  private static HttpResponse<String> unload(LocalDeployment d, String name) throws Exception {
    return TestDeployments.post(d, "/v1/unload_lora_adapter", "{\"lora_name\":\"" + name + "\"}");
  }

  private static JsonNode error(HttpResponse<String> r) throws Exception {
    return JSON.readTree(r.body()).path("error");
  }

  private static FrontendServer.Config updatesAllowed() {
    return new FrontendServer.Config("127.0.0.1", 0, 1 << 20, Duration.ZERO, Admission.open().withLoraUpdates(true));
  }

  private static Path adapter(Path model, Path dir, String name, int rank, long seed) throws Exception {
    Path out = dir.resolve(name);
    LoraGenerator.write(model, out, rank, 2 * rank, false, LoraGenerator.ALL_TARGETS, seed, DType.F32);
    return out;
  }

  @Test
  void anAdapterLoadedWhileServingIsServedUntilUnloadedAndItsNameLoadedAgainReusesNoKv(@TempDir Path dir) throws Exception {
    Path model = TestDeployments.tinyModel(dir);
    Path sql = adapter(model, dir, "sql", 8, 1);
    Path chat = adapter(model, dir, "chat", 4, 2);
    try (LocalDeployment d = TestDeployments.builtin(model, 2, 1, updatesAllowed(),
        c -> c.withLora(List.of(new LoraAdapter.Source("sql-at-start", sql), new LoraAdapter.Source("chat-at-start", chat)), 16))) {
      assertEquals(List.of("tiny", "sql-at-start", "chat-at-start"), models(d));
      assertEquals(404, complete(d, "sql", null).statusCode(), "not loaded yet");

      HttpResponse<String> loaded = load(d, "sql", sql);
      assertEquals(200, loaded.statusCode(), loaded.body());
      assertEquals("Success: LoRA adapter 'sql' added successfully.", loaded.body());
      assertEquals(List.of("tiny", "sql-at-start", "chat-at-start", "sql"), models(d));
      assertEquals("tiny", JSON.readTree(TestDeployments.get(d, "/v1/models/sql").body()).path("parent").asText());
      for (JsonNode w : JSON.readTree(TestDeployments.get(d, "/health").body()).path("workers")) {
        assertEquals("[\"sql-at-start\",\"chat-at-start\",\"sql\"]", w.path("lora_adapters").toString(), "/health lists each worker's: " + w);
      }
      JsonNode reference = completed(d, "sql-at-start");
      for (String worker : List.of("worker-0", "worker-1")) {
        JsonNode onSql = completed(d, "sql", worker);
        assertEquals("sql", onSql.path("model").asText());
        assertEquals(text(reference), text(onSql), "the adapter loaded while serving, on " + worker + ", as the one loaded at start");
      }
      assertNotEquals(text(completed(d, "tiny")), text(reference), "and not the base model");

      HttpResponse<String> twice = load(d, "sql", chat);
      assertEquals(400, twice.statusCode());
      assertTrue(error(twice).path("message").asText().contains("'sql' is already loaded"), twice.body());
      HttpResponse<String> nowhere = load(d, "legal", dir.resolve("nowhere"));
      assertEquals(400, nowhere.statusCode());
      assertEquals("lora_path", error(nowhere).path("param").asText());
      assertTrue(error(nowhere).path("message").asText().contains("nowhere"), "names the directory: " + nowhere.body());
      HttpResponse<String> noPath = TestDeployments.post(d, "/v1/load_lora_adapter", "{\"lora_name\":\"legal\"}");
      assertEquals(400, noPath.statusCode());
      assertEquals("lora_path", error(noPath).path("param").asText());
      HttpResponse<String> asModel = load(d, "tiny", sql);
      assertEquals(400, asModel.statusCode());
      assertTrue(error(asModel).path("message").asText().contains("served model's name"), asModel.body());
      assertEquals(List.of("tiny", "sql-at-start", "chat-at-start", "sql"), models(d), "refused loads change nothing");

      HttpResponse<String> unloaded = unload(d, "sql");
      assertEquals(200, unloaded.statusCode(), unloaded.body());
      assertEquals("Success: LoRA adapter 'sql' removed successfully.", unloaded.body());
      assertEquals(List.of("tiny", "sql-at-start", "chat-at-start"), models(d));
      HttpResponse<String> gone = complete(d, "sql", null);
      assertEquals(404, gone.statusCode());
      assertEquals("model_not_found", error(gone).path("code").asText());
      HttpResponse<String> again = unload(d, "sql");
      assertEquals(404, again.statusCode());
      assertTrue(error(again).path("message").asText().contains("'sql' is not loaded"), again.body());

      // The name again, for other weights, on the worker that cached the old adapter's prompt.
      assertEquals(200, load(d, "sql", chat).statusCode());
      JsonNode renamed = completed(d, "sql", "worker-0");
      assertEquals(0, renamed.at("/usage/prompt_tokens_details/cached_tokens").asInt(), "none of the old adapter's KV: " + renamed);
      assertEquals(text(completed(d, "chat-at-start")), text(renamed));
      TestDeployments.assertPoolsFull(d);
    }
  }

  @Test
  void aRefusedLoadIsUndoneEverywhereAndAWorkerThatJoinsLaterIsGivenWhatWasLoaded(@TempDir Path dir) throws Exception {
    Path model = TestDeployments.tinyModel(dir);
    Path sql = adapter(model, dir, "sql", 8, 1);
    BuiltinConfig engine = BuiltinConfig.of(model).withCompute("cpu", 1).withKvCacheBytes(16L << 20);
    try (LocalDeployment d = TestDeployments.builtin(model, 1, 1, updatesAllowed())) {
      try (WorkerServer closed = WorkerServer.start(
          WorkerServer.Config.local(new WorkerId("closed")).withModelFiles(ModelFiles.fromDirectory(model)), BuiltinEngine.open(engine))) {
        d.router().pool().add(closed.address());
        HttpResponse<String> refused = load(d, "sql", sql);
        assertEquals(400, refused.statusCode(), refused.body());
        String message = error(refused).path("message").asText();
        assertTrue(message.contains("worker closed") && message.contains("--allow-runtime-lora-updating"), message);
        assertTrue(message.contains("unloaded again from [worker-0]"), message);
        assertEquals(List.of("tiny"), models(d), "no worker keeps it");
        assertEquals(List.of(), d.workers().getFirst().loop().engine().loraAdapters());
        d.router().pool().remove(d.router().pool().all().stream().filter(w -> w.workerId().value().equals("closed")).findFirst().orElseThrow());
      }
      assertEquals(200, load(d, "sql", sql).statusCode());
      JsonNode reference = completed(d, "sql");
      try (WorkerServer late = WorkerServer.start(
          WorkerServer.Config.local(new WorkerId("late")).withModelFiles(ModelFiles.fromDirectory(model)).withLoraUpdates(true),
          BuiltinEngine.open(engine))) {
        var client = d.router().pool().add(late.address());
        TestDeployments.await("the late worker to load sql", 30, () -> client.serves("sql"));
        assertEquals(List.of("sql"), late.loop().engine().loraAdapters());
        assertEquals(text(reference), text(completed(d, "sql", "late")), "the late worker runs the adapter loaded before it came");
      }
    }
  }
}
