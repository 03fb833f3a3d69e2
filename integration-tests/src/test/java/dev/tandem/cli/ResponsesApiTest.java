package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonSchemaLocalValidation;
import com.openai.errors.BadRequestException;
import com.openai.helpers.ResponseAccumulator;
import com.openai.models.responses.Response;
import com.openai.models.responses.ResponseCreateParams;
import com.openai.models.responses.ResponseFunctionToolCall;
import com.openai.models.responses.ResponseInputItem;
import com.openai.models.responses.ResponseOutputItem;
import com.openai.models.responses.ResponseStatus;
import com.openai.models.responses.ResponseStreamEvent;
import com.openai.models.responses.StructuredResponse;
import com.openai.models.responses.ToolChoiceOptions;
import dev.tandem.cli.AgentClientsTest.GetWeather;
import dev.tandem.cli.AgentClientsTest.Person;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * OpenAI's Responses API ({@code POST /v1/responses}) through the official openai-java SDK,
 * against `tandem serve` on a generated model with random weights (so tool calls and JSON are
 * forced, and constrained decoding guarantees them): text, streamed events, a function call passed
 * back with its output, structured output, and what a server that stores nothing must refuse.
 */
@org.junit.jupiter.api.Tag("e2e")
class ResponsesApiTest {
  @TempDir static Path dir;
  private static LocalDeployment deployment;
  private static OpenAIClient openai;
  private static final ObjectMapper JSON = new ObjectMapper();

  @BeforeAll
  static void start() throws Exception {
    deployment = TestDeployments.builtinTiny(dir, 1, 2);
    openai = OpenAIOkHttpClient.builder().baseUrl("http://127.0.0.1:" + deployment.port() + "/v1").apiKey("unused").maxRetries(0).build();
  }

  @AfterAll
  static void stop() {
    openai.close();
    deployment.close();
  }

  @AfterEach
  void poolsAreFull() throws Exception {
    TestDeployments.assertPoolsFull(deployment);
  }

  private static ResponseCreateParams.Builder text(String input, long maxOutputTokens) {
    return ResponseCreateParams.builder().model("tiny").instructions("Answer briefly.").input(input)
        .maxOutputTokens(maxOutputTokens).temperature(0.0);
  }

  @Test
  void aTextResponseCutAtItsLimitIsIncompleteAndCountsItsTokens() {
    Response r = openai.responses().create(text("Tell me about Zürich.", 7).build());
    assertTrue(r.id().startsWith("resp_"), r.id());
    assertEquals(ResponseStatus.INCOMPLETE, r.status().orElseThrow());
    assertEquals("max_output_tokens", r.incompleteDetails().orElseThrow().reason().orElseThrow().asString());
    List<ResponseOutputItem> output = r.output();
    assertEquals(1, output.size(), output.toString());
    var message = output.getFirst().asMessage();
    String text = message.content().getFirst().asOutputText().text();
    assertFalse(text.isEmpty());
    var usage = r.usage().orElseThrow();
    assertEquals(7, usage.outputTokens());
    assertTrue(usage.inputTokens() > 5, "instructions and input went through the chat template");
    assertEquals(usage.inputTokens() + 7, usage.totalTokens());
    assertEquals(0.0, r.temperature().orElseThrow(), "the sampling used is repeated back");
  }

  @Test
  void streamedEventsAddUpToTheSameTextInOrder() {
    String whole = openai.responses().create(text("Same prompt, same text", 12).build())
        .output().getFirst().asMessage().content().getFirst().asOutputText().text();
    ResponseAccumulator acc = ResponseAccumulator.create();
    List<ResponseStreamEvent> events = new ArrayList<>();
    StringBuilder deltas = new StringBuilder();
    try (var stream = openai.responses().createStreaming(text("Same prompt, same text", 12).build())) {
      stream.stream().forEach(e -> {
        events.add(e);
        acc.accumulate(e);
        e.outputTextDelta().ifPresent(d -> deltas.append(d.delta()));
      });
    }
    assertTrue(events.getFirst().isCreated(), events.getFirst().toString());
    assertTrue(events.get(1).isInProgress());
    assertTrue(events.getLast().isIncomplete(), "cut at 12 tokens: " + events.getLast());
    assertEquals(whole, deltas.toString(), "greedy: the deltas are the non-streamed text");
    Response done = acc.response();
    assertEquals(whole, done.output().getFirst().asMessage().content().getFirst().asOutputText().text());
    assertEquals(12, done.usage().orElseThrow().outputTokens());
  }

  /** On the wire: each event named as its type, numbered from 0, and no [DONE] after the last. */
  @Test
  void eachEventIsNamedAsItsTypeAndNumberedInOrder() throws Exception {
    HttpResponse<String> r = HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + deployment.port() + "/v1/responses"))
            .POST(HttpRequest.BodyPublishers.ofString("{\"model\": \"tiny\", \"input\": \"Hello\", \"max_output_tokens\": 5, \"stream\": true}"))
            .build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode());
    String[] events = r.body().strip().split("\n\n");
    List<String> types = new ArrayList<>();
    for (int i = 0; i < events.length; i++) {
      String[] lines = events[i].split("\n");
      assertTrue(lines[0].startsWith("event: ") && lines[1].startsWith("data: "), events[i]);
      JsonNode data = JSON.readTree(lines[1].substring(6));
      assertEquals(lines[0].substring(7), data.path("type").asText());
      assertEquals(i, data.path("sequence_number").asInt(-1), events[i]);
      types.add(data.path("type").asText());
    }
    assertEquals(List.of("response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"),
        types.subList(0, 4));
    assertEquals(List.of("response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete"),
        types.subList(types.size() - 4, types.size()));
    assertFalse(r.body().contains("[DONE]"));
  }

  @Test
  void aFunctionCallGoesBackWithItsOutputAsInputItems() {
    ResponseCreateParams.Builder ask = ResponseCreateParams.builder().model("tiny")
        .input("What is the weather in Paris for the next 3 days?")
        .addTool(GetWeather.class, JsonSchemaLocalValidation.YES)
        .maxOutputTokens(200).temperature(0.0);
    Response first = openai.responses().create(ask.toolChoice(ToolChoiceOptions.REQUIRED).build());
    assertEquals(ResponseStatus.COMPLETED, first.status().orElseThrow());
    ResponseFunctionToolCall call = first.output().stream().filter(ResponseOutputItem::isFunctionCall).findFirst()
        .orElseThrow(() -> new AssertionError(first.output().toString())).asFunctionCall();
    assertEquals("GetWeather", call.name());
    GetWeather args = call.arguments(GetWeather.class);
    assertNotNull(args.city, "the arguments match the function's schema");

    List<ResponseInputItem> turns = List.of(
        ResponseInputItem.ofEasyInputMessage(com.openai.models.responses.EasyInputMessage.builder()
            .role(com.openai.models.responses.EasyInputMessage.Role.USER).content("What is the weather in Paris?").build()),
        ResponseInputItem.ofFunctionCall(call),
        ResponseInputItem.ofFunctionCallOutput(ResponseInputItem.FunctionCallOutput.builder().callId(call.callId()).output("Sunny, 24 °C").build()));
    Response answer = openai.responses().create(ResponseCreateParams.builder().model("tiny").inputOfResponse(turns)
        .addTool(GetWeather.class, JsonSchemaLocalValidation.YES).toolChoice(ToolChoiceOptions.NONE)
        .maxOutputTokens(6).temperature(0.0).build());
    assertTrue(answer.output().getFirst().isMessage(), answer.output().toString());
    Response without = openai.responses().create(ResponseCreateParams.builder().model("tiny").inputOfResponse(turns.subList(0, 1))
        .addTool(GetWeather.class, JsonSchemaLocalValidation.YES).toolChoice(ToolChoiceOptions.NONE)
        .maxOutputTokens(6).temperature(0.0).build());
    assertTrue(answer.usage().orElseThrow().inputTokens() > without.usage().orElseThrow().inputTokens(),
        "the call and its output went through the chat template");
  }

  @Test
  void structuredOutputFromAJavaClass() {
    StructuredResponse<Person> r = openai.responses().create(ResponseCreateParams.builder().model("tiny")
        .input("Invent a person.").maxOutputTokens(300).temperature(0.0)
        .text(Person.class, JsonSchemaLocalValidation.YES).build());
    Person p = r.output().stream().flatMap(o -> o.message().stream()).flatMap(m -> m.content().stream())
        .flatMap(c -> c.outputText().stream()).findFirst().orElseThrow();
    assertNotNull(p.name);
  }

  /** LangChain4j's Responses API model, unchanged but for the base URL, runs an agent's tool. */
  @Test
  void aLangChain4jAgentOverTheResponsesApiCallsItsTool() {
    var model = dev.langchain4j.model.openai.OpenAiResponsesChatModel.builder()
        .baseUrl("http://127.0.0.1:" + deployment.port() + "/v1").apiKey("unused").modelName("tiny").maxOutputTokens(200)
        .toolChoice(dev.langchain4j.model.chat.request.ToolChoice.REQUIRED)
        .build();
    AgentClientsTest.WeatherTools tools = new AgentClientsTest.WeatherTools();
    AgentClientsTest.WeatherAgent agent = dev.langchain4j.service.AiServices.builder(AgentClientsTest.WeatherAgent.class)
        .chatModel(model).tools(tools).build();
    var result = agent.ask("Weather in Oslo this week?");
    assertEquals(1, tools.cities.size(), "the agent ran its tool with arguments the model produced");
    assertEquals("forecast", result.toolExecutions().getFirst().request().name());
  }

  /** What needs a stored response or a hosted tool is refused naming the field; nothing is dropped silently. */
  @Test
  void whatAServerThatStoresNothingCannotDoIsRefusedNamingTheField() throws Exception {
    String[][] cases = {
        {"{\"model\": \"tiny\", \"input\": \"hi\", \"previous_response_id\": \"resp_1\"}", "previous_response_id"},
        {"{\"model\": \"tiny\", \"input\": \"hi\", \"tools\": [{\"type\": \"web_search\"}]}", "tools[0].type"},
        {"{\"model\": \"tiny\", \"input\": [{\"role\": \"user\", \"content\": [{\"type\": \"input_image\", \"image_url\": \"x\"}]}]}", "input[0].content[0]"},
        {"{\"model\": \"tiny\", \"input\": [{\"type\": \"item_reference\", \"id\": \"msg_1\"}]}", "input[0].type"},
        {"{\"model\": \"tiny\", \"input\": \"hi\", \"reasoning\": {\"effort\": \"high\"}}", "reasoning.effort"},
        {"{\"model\": \"tiny\", \"input\": \"hi\", \"max_output_tokens\": -1}", "max_output_tokens"},
        {"{\"model\": \"tiny\"}", "input"},
    };
    HttpClient http = HttpClient.newHttpClient();
    for (String[] c : cases) {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + deployment.port() + "/v1/responses"))
          .POST(HttpRequest.BodyPublishers.ofString(c[0])).build(), HttpResponse.BodyHandlers.ofString());
      assertEquals(400, r.statusCode(), c[0] + " → " + r.body());
      JsonNode error = JSON.readTree(r.body()).path("error");
      assertEquals(c[1], error.path("param").asText(), r.body());
    }
    var e = assertThrows(BadRequestException.class, () -> openai.responses().create(text("hi", 4).previousResponseId("resp_1").build()));
    assertTrue(e.getMessage().contains("stores no responses"), e.getMessage());
    var missing = assertThrows(com.openai.errors.NotFoundException.class, () -> openai.responses().retrieve("resp_1"));
    assertTrue(missing.getMessage().contains("stores no responses"), missing.getMessage());
    // And the server goes on serving.
    assertFalse(openai.responses().create(text("still there?", 3).build()).output().isEmpty());
  }
}
