package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.http.StreamResponse;
import com.openai.errors.BadRequestException;
import com.openai.errors.NotFoundException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionCreateParams;
import dev.tandem.engine.mocker.TimingModel;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The official OpenAI Java SDK against `tandem serve`'s stack (two mocker workers). */
@org.junit.jupiter.api.Tag("e2e")
class OpenAiSdkTest {
  private static LocalDeployment deployment;
  private static OpenAIClient client;

  @BeforeAll
  static void start() {
    deployment = TestDeployments.start(2, TimingModel.noDelay(), 1 << 20);
    client = OpenAIOkHttpClient.builder()
        .baseUrl("http://127.0.0.1:" + deployment.port() + "/v1")
        .apiKey("not-needed")
        .maxRetries(0)
        .build();
  }

  @AfterAll
  static void stop() {
    client.close();
    deployment.close();
  }

  @AfterEach
  void poolsAreFull() throws Exception {
    TestDeployments.assertPoolsFull(deployment);
  }

  private static ChatCompletionCreateParams.Builder chat(String content, long maxTokens) {
    return ChatCompletionCreateParams.builder()
        .model(TestDeployments.MODEL)
        .addUserMessage(content)
        .maxCompletionTokens(maxTokens)
        .temperature(0.0);
  }

  @Test
  void chatCompletion() {
    ChatCompletion c = client.chat().completions().create(chat("Tell me about Zürich.", 9).build());
    assertEquals(1, c.choices().size());
    String content = c.choices().getFirst().message().content().orElseThrow();
    assertFalse(content.isEmpty());
    assertEquals(ChatCompletion.Choice.FinishReason.LENGTH, c.choices().getFirst().finishReason());
    var usage = c.usage().orElseThrow();
    assertEquals(9, usage.completionTokens());
    assertTrue(usage.promptTokens() > 5);
    assertEquals(usage.promptTokens() + 9, usage.totalTokens());
    assertTrue(usage.promptTokensDetails().orElseThrow().cachedTokens().isPresent());
  }

  @Test
  void streamedChatEqualsNonStreamedForGreedy() {
    String whole = client.chat().completions().create(chat("Same prompt, same text", 12).build())
        .choices().getFirst().message().content().orElseThrow();
    StringBuilder streamed = new StringBuilder();
    AtomicReference<Long> completionTokens = new AtomicReference<>();
    AtomicReference<ChatCompletionChunk.Choice.FinishReason> finish = new AtomicReference<>();
    var params = chat("Same prompt, same text", 12)
        .streamOptions(ChatCompletionStreamOptions.builder().includeUsage(true).build()).build();
    try (StreamResponse<ChatCompletionChunk> stream = client.chat().completions().createStreaming(params)) {
      stream.stream().forEach(chunk -> {
        for (var choice : chunk.choices()) {
          choice.delta().content().ifPresent(streamed::append);
          choice.finishReason().ifPresent(finish::set);
        }
        chunk.usage().ifPresent(u -> completionTokens.set(u.completionTokens()));
      });
    }
    assertEquals(whole, streamed.toString());
    assertEquals(12L, completionTokens.get());
    assertEquals(ChatCompletionChunk.Choice.FinishReason.LENGTH, finish.get());
  }

  @Test
  void severalChoicesWithSeedAreReproducibleAndDistinct() {
    var params = chat("Pick a number", 6).temperature(0.9).n(3).seed(7).build();
    List<String> first = client.chat().completions().create(params).choices().stream()
        .map(c -> c.message().content().orElseThrow()).toList();
    List<String> second = client.chat().completions().create(params).choices().stream()
        .map(c -> c.message().content().orElseThrow()).toList();
    assertEquals(3, first.size());
    assertEquals(first, second);
    assertNotEquals(first.get(0), first.get(1));
  }

  @Test
  void textCompletionStreamingAndNot() {
    Completion c = client.completions().create(CompletionCreateParams.builder()
        .model(TestDeployments.MODEL).prompt("Once upon a time").maxTokens(5).temperature(0.0).build());
    String text = c.choices().getFirst().text();
    assertFalse(text.isEmpty());
    assertEquals(5, c.usage().orElseThrow().completionTokens());
    StringBuilder streamed = new StringBuilder();
    try (var stream = client.completions().createStreaming(CompletionCreateParams.builder()
        .model(TestDeployments.MODEL).prompt("Once upon a time").maxTokens(5).temperature(0.0).build())) {
      stream.stream().forEach(chunk -> chunk.choices().forEach(ch -> streamed.append(ch.text())));
    }
    assertEquals(text, streamed.toString());
  }

  @Test
  void stopStringEndsTheCompletionBeforeIt() {
    String full = client.chat().completions().create(chat("stop test", 20).build())
        .choices().getFirst().message().content().orElseThrow();
    String stop = full.substring(full.length() / 2, full.length() / 2 + 1);
    var c = client.chat().completions().create(chat("stop test", 20).stop(stop).build());
    String cut = c.choices().getFirst().message().content().orElseThrow();
    assertEquals(full.substring(0, full.indexOf(stop)), cut);
    assertEquals(ChatCompletion.Choice.FinishReason.STOP, c.choices().getFirst().finishReason());
  }

  @Test
  void sdkSeesOpenAiErrors() {
    var unknown = assertThrows(NotFoundException.class, () -> client.chat().completions().create(
        ChatCompletionCreateParams.builder().model("gpt-nope").addUserMessage("x").build()));
    assertTrue(unknown.getMessage().contains("gpt-nope"), unknown.getMessage());
    var logprobs = assertThrows(BadRequestException.class,
        () -> client.chat().completions().create(chat("x", 3).logprobs(true).build()));
    assertEquals(400, logprobs.statusCode());
    assertTrue(logprobs.getMessage().contains("logprobs"), logprobs.getMessage());
  }

  @Test
  void modelsListsTheServedModel() {
    var models = client.models().list();
    assertEquals(TestDeployments.MODEL, models.data().getFirst().id());
    assertEquals(TestDeployments.MODEL, client.models().retrieve(TestDeployments.MODEL).id(), "retrieve model, GET /v1/models/{id}");
    var other = assertThrows(NotFoundException.class, () -> client.models().retrieve("gpt-nope"));
    assertTrue(other.getMessage().contains("gpt-nope"), other.getMessage());
  }
}
