package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.LoraAdapter;
import dev.tandem.engine.modeltools.LoraGenerator;
import dev.tandem.frontend.http.FrontendServer;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * LoRA adapters served over real HTTP by two built-in workers behind the KV router: {@code
 * /v1/models} lists them with the base model as their parent; a request names one as its model and
 * gets its output (echoing that name), different from the base model's; an unknown name is a 404
 * naming what is served. The router hashes an adapter's prompt as the engine does (salted): the
 * base model's cached prefix is no predicted hit for the adapter, the adapter's own is, and the
 * worker reports it cached.
 */
@org.junit.jupiter.api.Tag("e2e")
class LoraServeTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String PROMPT = "A lighthouse keeper counts the ships that pass each night, writes their names in a ledger, "
      + "and wonders where each of them is going before the morning fog rolls in over the harbour";

  private static final java.util.Map<String, Integer> SENT = new java.util.concurrent.ConcurrentHashMap<>();

  private static JsonNode complete(LocalDeployment d, String model) throws Exception {
    SENT.merge(model, 1, Integer::sum);
    String body = "{\"model\":\"" + model + "\",\"prompt\":\"" + PROMPT + "\",\"max_tokens\":12,\"temperature\":0,"
        + "\"tandem\":{\"timing\":true}}";
    HttpResponse<String> r = TestDeployments.post(d, "/v1/completions", body);
    assertEquals(200, r.statusCode(), r.body());
    return JSON.readTree(r.body());
  }

  private static int predictedBlocks(JsonNode response) {
    return response.at("/tandem/routing/predicted_overlap_blocks").asInt(-1);
  }

  private static int cached(JsonNode response) {
    return response.at("/usage/prompt_tokens_details/cached_tokens").asInt();
  }

  /** Repeats the request until the router has heard of the blocks an earlier one stored (events arrive asynchronously). */
  private static JsonNode onceEventsArrived(LocalDeployment d, String model) throws Exception {
    long deadline = System.nanoTime() + 10_000_000_000L;
    JsonNode r = complete(d, model);
    while (predictedBlocks(r) == 0 && System.nanoTime() < deadline) {
      Thread.sleep(50);
      r = complete(d, model);
    }
    return r;
  }

  @Test
  void requestsNameAnAdapterAsTheirModelAndTheRouterHashesItsPromptsApart(@TempDir Path dir) throws Exception {
    Path model = TestDeployments.tinyModel(dir);
    Path sql = dir.resolve("sql");
    LoraGenerator.write(model, sql, 8, 16, false, LoraGenerator.ALL_TARGETS, 1, DType.F32);
    Path chat = dir.resolve("chat");
    LoraGenerator.write(model, chat, 4, 8, false, List.of("q_proj", "v_proj"), 2, DType.BF16);
    FrontendServer.Config frontend = new FrontendServer.Config("127.0.0.1", 0, 1 << 20);
    try (LocalDeployment d = TestDeployments.builtin(model, 2, 1, frontend,
        c -> c.withLora(List.of(new LoraAdapter.Source("sql", sql), new LoraAdapter.Source("chat", chat)), 16))) {
      HttpResponse<String> listed = TestDeployments.get(d, "/v1/models");
      JsonNode data = JSON.readTree(listed.body()).path("data");
      assertEquals(List.of("tiny", "sql", "chat"), StreamSupport.stream(data.spliterator(), false).map(m -> m.path("id").asText()).toList());
      assertEquals("tiny", data.get(1).path("parent").asText());
      assertEquals(200, TestDeployments.get(d, "/v1/models/chat").statusCode());

      JsonNode base = complete(d, "tiny");
      JsonNode again = onceEventsArrived(d, "tiny");
      assertEquals(predictedBlocks(again), cached(again) / 16, "the base model's prefix, predicted and cached");
      assertTrue(predictedBlocks(again) >= 2, again.toString());

      JsonNode onSql = complete(d, "sql");
      assertEquals("sql", onSql.path("model").asText(), "the response names the adapter");
      assertEquals(0, predictedBlocks(onSql), "the base model's blocks are no hit for the adapter: " + onSql);
      assertEquals(0, cached(onSql));
      assertNotEquals(base.at("/choices/0/text"), onSql.at("/choices/0/text"), "the adapter changes the output");
      JsonNode sqlAgain = onceEventsArrived(d, "sql");
      assertTrue(predictedBlocks(sqlAgain) >= 2, "the adapter's own blocks are: " + sqlAgain);
      assertEquals(predictedBlocks(sqlAgain), cached(sqlAgain) / 16, "and the worker it went to holds them");
      assertEquals(onSql.at("/choices/0/text"), sqlAgain.at("/choices/0/text"));

      JsonNode onChat = complete(d, "chat");
      assertEquals(0, predictedBlocks(onChat));
      assertNotEquals(onSql.at("/choices/0/text"), onChat.at("/choices/0/text"));

      String metrics = TestDeployments.get(d, "/metrics").body();
      assertEquals(SENT.get("sql"), (int) TestDeployments.sample(metrics, "tandem_frontend_lora_requests_total{adapter=\"sql\"}"), metrics);
      assertEquals(1, (int) TestDeployments.sample(metrics, "tandem_frontend_lora_requests_total{adapter=\"chat\"}"));
      HttpResponse<String> unknown = TestDeployments.post(d, "/v1/completions", "{\"model\":\"legal\",\"prompt\":\"hi\",\"max_tokens\":2}");
      assertEquals(404, unknown.statusCode());
      JsonNode error = JSON.readTree(unknown.body()).path("error");
      assertEquals("model_not_found", error.path("code").asText());
      assertTrue(error.path("message").asText().contains("`sql`, `chat`"), error.toString());
      TestDeployments.assertPoolsFull(d);
    }
  }
}
