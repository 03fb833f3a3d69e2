package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** `tandem serve --model DIR` with the built-in engine, over real HTTP, on a generated model. */
@org.junit.jupiter.api.Tag("e2e")
class BuiltinServeTest {
  @TempDir static Path dir;
  private static LocalDeployment deployment;
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final ObjectMapper JSON = new ObjectMapper();

  @BeforeAll
  static void start() throws Exception {
    deployment = TestDeployments.builtinTiny(dir, 1, 2);
  }

  @AfterAll
  static void stop() {
    deployment.close();
  }

  @AfterEach
  void poolsAreFull() throws Exception {
    TestDeployments.assertPoolsFull(deployment);
  }

  private static HttpResponse<String> post(String path, String body) throws Exception {
    return HTTP.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + deployment.port() + path))
            .header("content-type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static JsonNode chat(String extra) throws Exception {
    String body = "{\"model\":\"tiny\",\"max_tokens\":12,\"messages\":[{\"role\":\"user\",\"content\":"
        + "\"Write a long story about a lighthouse keeper who collects seashells and writes letters.\"}]" + extra + "}";
    HttpResponse<String> r = post("/v1/chat/completions", body);
    assertEquals(200, r.statusCode(), r.body());
    return JSON.readTree(r.body());
  }

  @Test
  void servesTheGeneratedModelByItsDirectoryName() throws Exception {
    var r = HTTP.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + deployment.port() + "/v1/models")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals("tiny", JSON.readTree(r.body()).at("/data/0/id").asText());
  }

  @Test
  void greedyChatIsDeterministicAndTheRepeatHitsThePrefixCache() throws Exception {
    JsonNode first = chat(",\"temperature\":0");
    JsonNode second = chat(",\"temperature\":0");
    String text = first.at("/choices/0/message/content").asText();
    assertTrue(!text.isEmpty());
    assertEquals(text, second.at("/choices/0/message/content").asText());
    assertEquals(12, first.at("/usage/completion_tokens").asInt());
    int prompt = second.at("/usage/prompt_tokens").asInt();
    int cached = second.at("/usage/prompt_tokens_details/cached_tokens").asInt();
    // Every full block of the prompt, keeping at least one token to compute.
    assertEquals((prompt - 1) / 16 * 16, cached);
  }

  @Test
  void minTokensKeepsAStopStringEndingBeforeItFromStoppingTheOutput() throws Exception {
    String text = chat(",\"temperature\":0").at("/choices/0/message/content").asText();
    String stop = text.substring(0, 2);
    String stopJson = JSON.writeValueAsString(List.of(stop));
    JsonNode stopped = chat(",\"temperature\":0,\"stop\":" + stopJson);
    assertEquals("", stopped.at("/choices/0/message/content").asText(), "the stop string starts the output: nothing before it");
    assertEquals("stop", stopped.at("/choices/0/finish_reason").asText());
    JsonNode kept = chat(",\"temperature\":0,\"include_stop_str_in_output\":true,\"stop\":" + stopJson);
    assertEquals(stop, kept.at("/choices/0/message/content").asText(), "include_stop_str_in_output: the stop string ends the text");
    JsonNode held = chat(",\"temperature\":0,\"min_tokens\":10,\"stop\":" + stopJson);
    assertTrue(held.at("/choices/0/message/content").asText().startsWith(stop), held.toString());
    assertTrue(held.at("/usage/completion_tokens").asInt() >= 10, held.toString());
    HttpResponse<String> over = post("/v1/chat/completions", "{\"model\":\"tiny\",\"max_tokens\":4,\"min_tokens\":5,"
        + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    assertEquals(400, over.statusCode());
    assertEquals("min_tokens", JSON.readTree(over.body()).at("/error/param").asText());
  }

  @Test
  void continueFinalMessageHasTheModelGoOnWithTheAssistantsText() throws Exception {
    String messages = "\"messages\":[{\"role\":\"user\",\"content\":\"Name a colour.\"},{\"role\":\"assistant\",\"content\":\"The colour is \"}],"
        + "\"continue_final_message\":true,\"add_generation_prompt\":false";
    JsonNode tokens = JSON.readTree(post("/tokenize", "{\"model\":\"tiny\"," + messages + "}").body());
    String prompt = JSON.readTree(post("/detokenize", "{\"model\":\"tiny\",\"tokens\":" + tokens.get("tokens") + "}").body())
        .get("prompt").asText();
    // Qwen3's template writes the final assistant turn's (empty) reasoning before its text.
    assertTrue(prompt.endsWith("<|im_start|>assistant\n<think>\n\n</think>\n\nThe colour is "), prompt);
    HttpResponse<String> r = post("/v1/chat/completions", "{\"model\":\"tiny\",\"max_tokens\":4,\"temperature\":0," + messages + "}");
    assertEquals(200, r.statusCode(), r.body());
    assertEquals(tokens.get("count").asInt(), JSON.readTree(r.body()).at("/usage/prompt_tokens").asInt());
    String continuation = JSON.readTree(r.body()).at("/choices/0/message/content").asText();
    HttpResponse<String> echoed = post("/v1/chat/completions", "{\"model\":\"tiny\",\"max_tokens\":4,\"temperature\":0,\"echo\":true,"
        + messages + "}");
    assertEquals("The colour is " + continuation, JSON.readTree(echoed.body()).at("/choices/0/message/content").asText(),
        "echo: the message it continued, then the continuation");
    assertEquals(4, JSON.readTree(echoed.body()).at("/usage/completion_tokens").asInt(), "the echo is not counted as output");
  }

  @Test
  void everySamplingParameterTheFrontendAcceptsIsHonoured() throws Exception {
    String sampled = ",\"temperature\":0.8,\"top_p\":0.9,\"top_k\":40,\"min_p\":0.05,\"seed\":7,"
        + "\"presence_penalty\":0.5,\"frequency_penalty\":0.5,\"repetition_penalty\":1.1";
    JsonNode a = chat(sampled);
    JsonNode b = chat(sampled);
    assertEquals(a.at("/choices/0/message/content").asText(), b.at("/choices/0/message/content").asText(), "same seed, same text");
  }

  @Test
  void logprobsComeInOpenAisShapes() throws Exception {
    JsonNode chat = chat(",\"temperature\":0,\"logprobs\":true,\"top_logprobs\":2");
    JsonNode content = chat.at("/choices/0/logprobs/content");
    assertEquals(12, content.size(), chat.toString());
    for (JsonNode entry : content) {
      assertTrue(entry.get("logprob").asDouble() <= 0);
      assertEquals(2, entry.get("top_logprobs").size());
      assertEquals(entry.get("token").asText(), entry.at("/top_logprobs/0/token").asText(), "greedy picks the top token");
      assertTrue(entry.get("bytes").isArray());
    }

    HttpResponse<String> r = post("/v1/completions",
        "{\"model\":\"tiny\",\"prompt\":\"Once upon a time\",\"max_tokens\":5,\"temperature\":0,\"logprobs\":1}");
    assertEquals(200, r.statusCode(), r.body());
    JsonNode lp = JSON.readTree(r.body()).at("/choices/0/logprobs");
    assertEquals(5, lp.get("tokens").size());
    assertEquals(5, lp.get("token_logprobs").size());
    assertEquals(5, lp.get("top_logprobs").size());
    assertEquals(0, lp.at("/text_offset/0").asInt());
    assertEquals(lp.at("/tokens/0").asText().length(), lp.at("/text_offset/1").asInt());

    // Streamed: every token's entry arrives in some chunk.
    HttpResponse<String> s = post("/v1/chat/completions",
        "{\"model\":\"tiny\",\"max_tokens\":7,\"temperature\":0,\"stream\":true,\"logprobs\":true,"
            + "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    int entries = 0;
    for (String line : s.body().split("\n")) {
      if (line.startsWith("data: {")) {
        JsonNode c = JSON.readTree(line.substring(6)).at("/choices/0/logprobs/content");
        entries += c.isArray() ? c.size() : 0;
      }
    }
    assertEquals(7, entries, s.body());
  }

  /** Every streamed chunk's {@code data:} object, in order. */
  private static List<JsonNode> chunks(HttpResponse<String> r) throws Exception {
    assertEquals(200, r.statusCode(), r.body());
    List<JsonNode> out = new java.util.ArrayList<>();
    for (String line : r.body().split("\n")) {
      if (line.startsWith("data: {")) {
        out.add(JSON.readTree(line.substring(6)));
      }
    }
    return out;
  }

  private static List<Integer> ints(JsonNode array) {
    List<Integer> out = new java.util.ArrayList<>();
    array.forEach(v -> out.add(v.asInt()));
    return out;
  }

  @Test
  void returnTokenIdsGivesThePromptsAndTheOutputsIdsWhereVllmPutsThem() throws Exception {
    String messages = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    List<Integer> prompt = ints(JSON.readTree(post("/tokenize", "{" + messages + "}").body()).get("tokens"));
    JsonNode whole = JSON.readTree(post("/v1/chat/completions", "{\"model\":\"tiny\",\"max_tokens\":9,\"temperature\":0,"
        + "\"logprobs\":true,\"top_logprobs\":1,\"return_token_ids\":true,\"return_tokens_as_token_ids\":true," + messages + "}").body());
    assertEquals(prompt, ints(whole.get("prompt_token_ids")), "chat: the templated prompt's ids, beside the choices");
    List<Integer> output = ints(whole.at("/choices/0/token_ids"));
    assertEquals(whole.at("/usage/completion_tokens").asInt(), output.size(), whole.toString());
    JsonNode content = whole.at("/choices/0/logprobs/content");
    for (int i = 0; i < output.size(); i++) {
      assertEquals("token_id:" + output.get(i), content.get(i).get("token").asText(), "return_tokens_as_token_ids");
      assertTrue(content.get(i).at("/top_logprobs/0/token").asText().startsWith("token_id:"));
    }

    List<JsonNode> streamed = chunks(post("/v1/chat/completions", "{\"model\":\"tiny\",\"max_tokens\":9,\"temperature\":0,"
        + "\"stream\":true,\"return_token_ids\":true," + messages + "}"));
    assertEquals(prompt, ints(streamed.getFirst().get("prompt_token_ids")), "streamed: the prompt's ids on the first chunk");
    List<Integer> pieces = new java.util.ArrayList<>();
    for (int i = 0; i < streamed.size(); i++) {
      assertTrue(i == 0 || !streamed.get(i).has("prompt_token_ids"), "and on no later one");
      JsonNode ids = streamed.get(i).at("/choices/0/token_ids");
      if (ids.isArray()) {
        pieces.addAll(ints(ids));
      }
    }
    assertEquals(output, pieces, "the chunks' ids, joined, are the whole response's (greedy)");

    String completion = "{\"model\":\"tiny\",\"prompt\":\"Once upon a time\",\"max_tokens\":4,\"temperature\":0,\"return_token_ids\":true";
    List<Integer> promptIds = ints(JSON.readTree(post("/tokenize", "{\"prompt\":\"Once upon a time\"}").body()).get("tokens"));
    JsonNode text = JSON.readTree(post("/v1/completions", completion + "}").body());
    assertEquals(promptIds, ints(text.at("/choices/0/prompt_token_ids")), "completions: the prompt's ids in the choice");
    assertEquals(text.at("/usage/completion_tokens").asInt(), text.at("/choices/0/token_ids").size());
    List<JsonNode> textChunks = chunks(post("/v1/completions", completion + ",\"stream\":true}"));
    assertEquals(promptIds, ints(textChunks.getFirst().at("/choices/0/prompt_token_ids")));
    assertTrue(textChunks.stream().skip(1).noneMatch(c -> c.at("/choices/0").has("prompt_token_ids")));

    JsonNode plain = chat(",\"temperature\":0");
    assertFalse(plain.has("prompt_token_ids") || plain.at("/choices/0").has("token_ids"), "not asked for, not there");
  }

  /**
   * vLLM's {@code prompt_logprobs}: for every prompt token after the first, its own log-probability
   * and rank and the likeliest alternatives, keyed by token id — the same numbers completions' echo
   * with logprobs gives — in each completion choice, beside a chat's choices, never on a stream.
   */
  @Test
  void promptLogprobsScoreEveryPromptTokenAsVllmDoes() throws Exception {
    String text = "The quick brown fox jumps";
    List<Integer> ids = ints(JSON.readTree(post("/tokenize", "{\"prompt\":\"" + text + "\"}").body()).get("tokens"));
    HttpResponse<String> r = post("/v1/completions", "{\"model\":\"tiny\",\"prompt\":\"" + text + "\",\"max_tokens\":2,"
        + "\"temperature\":0,\"prompt_logprobs\":2,\"echo\":true,\"logprobs\":1}");
    assertEquals(200, r.statusCode(), r.body());
    JsonNode choice = JSON.readTree(r.body()).at("/choices/0");
    JsonNode scores = choice.get("prompt_logprobs");
    assertEquals(ids.size(), scores.size(), scores.toString());
    assertTrue(scores.get(0).isNull(), "nothing comes before the first token");
    for (int i = 1; i < ids.size(); i++) {
      JsonNode position = scores.get(i);
      JsonNode own = position.get(Integer.toString(ids.get(i)));
      assertTrue(own != null && own.get("rank").asInt() >= 1 && own.get("logprob").asDouble() <= 0, position.toString());
      assertEquals(own.get("logprob").asDouble(), choice.at("/logprobs/token_logprobs/" + i).asDouble(), 1e-5, "echo's number, position " + i);
      assertTrue(position.size() >= 2 && position.size() <= 3, "its own and the two likeliest: " + position);
      java.util.Set<Integer> ranks = new java.util.HashSet<>();
      position.forEach(e -> ranks.add(e.get("rank").asInt()));
      assertTrue(ranks.containsAll(List.of(1, 2)), position.toString());
      assertTrue(position.properties().stream().allMatch(e -> e.getValue().get("decoded_token").isTextual()));
      assertEquals(1, choice.at("/logprobs/top_logprobs/" + i).size(), "echo's own alternatives stay at logprobs: 1");
    }
    JsonNode chat = chat(",\"temperature\":0,\"prompt_logprobs\":0");
    assertEquals(chat.at("/usage/prompt_tokens").asInt(), chat.get("prompt_logprobs").size(), "chat: beside the choices");
    assertEquals(1, chat.at("/prompt_logprobs/3").size(), "prompt_logprobs 0: the token's own alone");
    HttpResponse<String> streamed = post("/v1/completions", "{\"model\":\"tiny\",\"prompt\":\"x\",\"stream\":true,\"prompt_logprobs\":1}");
    assertEquals(400, streamed.statusCode());
    assertEquals("prompt_logprobs", JSON.readTree(streamed.body()).at("/error/param").asText());
  }

  /**
   * vLLM's beam search on the built-in engine: a beam of one is greedy decoding; with one token to
   * go, the beams are the likeliest tokens in order; and the tokens of each beam carry the
   * log-probabilities the model gives them when the whole sequence is scored as a prompt, the beams
   * ranked by their sums. Every KV block is back in its pool after each (checked after each test).
   */
  @Test
  void beamSearchFindsTheSequencesTheModelScoresHighest() throws Exception {
    String prompt = "{\"model\":\"tiny\",\"prompt\":\"Once upon a time\",\"return_token_ids\":true,\"ignore_eos\":true";
    JsonNode greedy = JSON.readTree(post("/v1/completions", prompt + ",\"max_tokens\":6,\"temperature\":0}").body());
    JsonNode one = JSON.readTree(post("/v1/completions", prompt + ",\"max_tokens\":6,\"use_beam_search\":true}").body());
    assertEquals(ints(greedy.at("/choices/0/token_ids")), ints(one.at("/choices/0/token_ids")), "a beam of one is greedy: " + one);

    JsonNode top = JSON.readTree(post("/v1/completions", prompt
        + ",\"max_tokens\":1,\"temperature\":0,\"logprobs\":3,\"return_tokens_as_token_ids\":true}").body());
    List<Integer> likeliest = new java.util.ArrayList<>();
    top.at("/choices/0/logprobs/top_logprobs/0").properties().forEach(e -> likeliest.add(Integer.parseInt(e.getKey().substring(9))));
    JsonNode three = JSON.readTree(post("/v1/completions", prompt + ",\"max_tokens\":1,\"n\":3,\"use_beam_search\":true}").body());
    assertEquals(likeliest, List.of(0, 1, 2).stream().map(i -> three.at("/choices/" + i + "/token_ids/0").asInt()).toList(), three.toString());

    JsonNode beams = JSON.readTree(post("/v1/completions", prompt + ",\"max_tokens\":4,\"n\":3,\"use_beam_search\":true,\"logprobs\":0}").body());
    List<Integer> promptIds = ints(JSON.readTree(post("/tokenize", "{\"prompt\":\"Once upon a time\"}").body()).get("tokens"));
    double previous = 0;
    java.util.Set<List<Integer>> distinct = new java.util.HashSet<>();
    for (int i = 0; i < 3; i++) {
      JsonNode choice = beams.at("/choices/" + i);
      List<Integer> tokens = ints(choice.get("token_ids"));
      assertEquals(4, tokens.size(), beams.toString());
      distinct.add(tokens);
      List<Integer> sequence = new java.util.ArrayList<>(promptIds);
      sequence.addAll(tokens);
      JsonNode scored = JSON.readTree(post("/v1/completions", "{\"model\":\"tiny\",\"prompt\":" + sequence
          + ",\"max_tokens\":1,\"prompt_logprobs\":0}").body()).at("/choices/0/prompt_logprobs");
      double sum = 0;
      for (int k = 0; k < tokens.size(); k++) {
        double model = scored.get(promptIds.size() + k).get(Integer.toString(tokens.get(k))).get("logprob").asDouble();
        assertEquals(model, choice.at("/logprobs/token_logprobs/" + k).asDouble(), 1e-3, "beam " + i + ", token " + k);
        sum += model;
      }
      assertTrue(i == 0 || sum <= previous + 1e-3, "ranked by summed log-probability (same lengths): " + sum + " after " + previous);
      previous = sum;
    }
    assertEquals(3, distinct.size(), "three different sequences");

    JsonNode streamed = chunks(post("/v1/completions", prompt + ",\"max_tokens\":4,\"n\":3,\"use_beam_search\":true,\"stream\":true}"))
        .stream().filter(c -> c.at("/choices/0/index").asInt() == 0 && !c.at("/choices/0/text").asText().isEmpty()).findFirst().orElseThrow();
    assertEquals(beams.at("/choices/0/text").asText(), streamed.at("/choices/0/text").asText(), "streamed: the same best beam, in one piece");
  }

  @Test
  void echoWithLogprobsScoresThePromptAsLegacyClientsExpect() throws Exception {
    HttpResponse<String> r = post("/v1/completions",
        "{\"model\":\"tiny\",\"prompt\":\"The quick brown fox jumps\",\"max_tokens\":2,\"temperature\":0,"
            + "\"echo\":true,\"logprobs\":1}");
    assertEquals(200, r.statusCode(), r.body());
    JsonNode body = JSON.readTree(r.body());
    JsonNode lp = body.at("/choices/0/logprobs");
    int prompt = body.at("/usage/prompt_tokens").asInt();
    assertEquals(prompt + 2, lp.get("tokens").size(), "every prompt token, then the completion's");
    assertTrue(lp.at("/token_logprobs/0").isNull(), "nothing comes before the first token");
    assertTrue(lp.at("/top_logprobs/0").isNull());
    for (int i = 1; i < prompt + 2; i++) {
      assertTrue(lp.at("/token_logprobs/" + i).asDouble() <= 0, lp.toString());
      assertEquals(1, lp.at("/top_logprobs/" + i).size());
    }
    String text = body.at("/choices/0/text").asText();
    assertTrue(text.startsWith("The quick brown fox jumps"), text);
    StringBuilder joined = new StringBuilder();
    lp.get("tokens").forEach(t -> joined.append(t.asText()));
    assertEquals(text, joined.toString(), "the tokens spell the echoed text");
    assertEquals(0, lp.at("/text_offset/0").asInt());
  }

  @Test
  void aMissingModelDirectoryFailsAtStartupNamingIt() {
    String err = refusedAtStartup("serve", "--model", dir.resolve("no-such-model").toString(), "--port", "0");
    assertTrue(err.contains("no-such-model") && err.contains("does not exist"), err);
  }

  @Test
  void aKvCacheDtypeTheEngineCannotHonourFailsAtStartupNamingIt() {
    String err = refusedAtStartup("serve", "--kv-cache-dtype", "fp8", "--port", "0");
    assertTrue(err.contains("KV cache dtype 'fp8'"), err);
    err = refusedAtStartup("serve", "--engine", "mocker", "--kv-cache-dtype", "bf16", "--port", "0");
    assertTrue(err.contains("--kv-cache-dtype is for the builtin engine"), err);
  }

  @Test
  void theSchedulingPolicyReachesTheWorkersEngine() {
    for (String policy : List.of("fcfs", "priority")) {
      EngineOptions flags = new EngineOptions();
      new picocli.CommandLine(flags).parseArgs("--engine", "mocker", "--scheduling-policy", policy);
      var engine = flags.resolve(false).factory().get();
      assertEquals(policy.equals("priority"), engine.info().features().contains(dev.tandem.engine.EngineInfo.Feature.PRIORITY),
          policy + ": the engine says whether it honours priority, which the frontend reads");
    }
  }

  @Test
  void anUnknownSchedulingPolicyFailsAtStartupNamingIt() {
    String err = refusedAtStartup("serve", "--engine", "mocker", "--scheduling-policy", "lifo", "--port", "0");
    assertTrue(err.contains("--scheduling-policy: expected fcfs or priority, was 'lifo'"), err);
  }

  @Test
  void aQuantizationTheEngineCannotHonourFailsAtStartupNamingIt() {
    String err = refusedAtStartup("serve", "--quantization", "awq", "--port", "0");
    assertTrue(err.contains("unknown --quantization 'awq' (none, q8_0, q4_0") && err.contains("AWQ or GPTQ are not read"), err);
    err = refusedAtStartup("serve", "--engine", "mocker", "--quantization", "q8_0", "--port", "0");
    assertTrue(err.contains("--quantization is for the builtin engine"), err);
  }

  @Test
  void aSpeculativeConfigTheEngineCannotHonourFailsAtStartupNamingIt() {
    String err = refusedAtStartup("serve", "--speculative-config", "{\"method\": \"eagle\", \"num_speculative_tokens\": 3}", "--port", "0");
    assertTrue(err.contains("--speculative-config: method 'eagle' is not supported"), err);
    err = refusedAtStartup("serve", "--speculative-config", "{\"method\": \"ngram\", \"num_speculative_tokens\": 40}", "--port", "0");
    assertTrue(err.contains("'num_speculative_tokens' must be 1..15, was 40"), err);
    err = refusedAtStartup("serve", "--speculative-config", "{\"method\": \"ngram\", \"num_tokens\": 4}", "--port", "0");
    assertTrue(err.contains("unknown field 'num_tokens'"), err);
    err = refusedAtStartup("serve", "--speculative-config", "ngram", "--port", "0");
    assertTrue(err.contains("--speculative-config is not JSON"), err);
    err = refusedAtStartup("serve", "--engine", "mocker", "--speculative-config", "{\"method\": \"ngram\", \"num_speculative_tokens\": 3}",
        "--port", "0");
    assertTrue(err.contains("--speculative-config is for the builtin engine"), err);
  }

  @Test
  void hfOverridesTheEngineCannotServeFailAtStartupNamingThem(@TempDir Path dir) throws Exception {
    Path model = TestDeployments.tinyModel(dir);
    String err = refusedAtStartup("serve", "--model", model.toString(), "--hf-overrides", "{\"rope_theta\": 1}", "--port", "0");
    assertTrue(err.contains("--hf-overrides: 'rope_theta' is not supported by Tandem"), err);
    err = refusedAtStartup("serve", "--model", model.toString(), "--hf-overrides",
        "{\"classifier_from_token\": [\"no\", \"nope-not-a-token\"], \"is_original_qwen3_reranker\": true}", "--port", "0");
    assertTrue(err.contains("classifier_from_token 'nope-not-a-token' is not a token of " + model.resolve("tokenizer.json")), err);
    err = refusedAtStartup("serve", "--engine", "mocker", "--hf-overrides", "{\"classifier_from_token\": [\"no\", \"yes\"]}",
        "--port", "0");
    assertTrue(err.contains("--hf-overrides is for the builtin engine"), err);
  }

  /**
   * {@code --lora-modules} as vLLM takes it, refused at start-up naming the flag, the file and the
   * field: a malformed entry, a path that is not a directory, an adapter above {@code --max-lora-rank},
   * the mocker, {@code --enable-lora} alone (nothing would be served: no modules, no loading while serving).
   */
  @Test
  void loraModulesTheEngineCannotServeFailAtStartupNamingThem(@TempDir Path dir) throws Exception {
    Path model = TestDeployments.tinyModel(dir);
    Path adapter = dir.resolve("big");
    dev.tandem.engine.modeltools.LoraGenerator.write(model, adapter, 32, 32, false, List.of("q_proj"), 1, dev.tandem.engine.model.DType.F32);
    String err = refusedAtStartup("serve", "--model", model.toString(), "--lora-modules", "sql", "--port", "0");
    assertTrue(err.contains("--lora-modules: 'sql' names no adapter; give name=path"), err);
    err = refusedAtStartup("serve", "--model", model.toString(), "--lora-modules", "sql=" + dir.resolve("none"), "--port", "0");
    assertTrue(err.contains("--lora-modules: adapter 'sql': " + dir.resolve("none") + " is not a directory"), err);
    err = refusedAtStartup("serve", "--model", model.toString(), "--lora-modules", "{\"name\": \"big\", \"path\": \"" + adapter + "\"}",
        "--port", "0");
    assertTrue(err.contains(adapter.resolve("adapter_config.json") + ": field 'r' is 32, above --max-lora-rank 16"), err);
    err = refusedAtStartup("serve", "--engine", "mocker", "--lora-modules", "big=" + adapter, "--port", "0");
    assertTrue(err.contains("--lora-modules is for the builtin engine"), err);
    err = refusedAtStartup("serve", "--model", model.toString(), "--enable-lora", "--port", "0");
    assertTrue(err.contains("--enable-lora without --lora-modules") && err.contains("--allow-runtime-lora-updating"), err);
  }

  /** What {@code args} print to stderr, having exited with 2 before serving anything. */
  private static String refusedAtStartup(String... args) {
    StringWriter err = new StringWriter();
    var cl = Main.commandLine();
    cl.setErr(new PrintWriter(err));
    assertEquals(2, cl.execute(args), String.join(" ", args));
    return err.toString();
  }
}
