package dev.tandem.frontend.openai;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.engine.ModelFiles;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.http.ApiException;
import dev.tandem.frontend.text.ChatTemplate;
import dev.tandem.frontend.text.TextTokenizer;
import java.util.Set;

/**
 * Fuzz targets for what a client controls: the request body (bytes as they arrive), the chat
 * messages and tools the template renders, and the text the tokenizer encodes. Every input is
 * either accepted or refused with a 4xx {@link ApiException}; any other exception is a finding.
 * The committed inputs ({@code RequestFuzzTestInputs/}) run with every test run; {@code .ci/fuzz}
 * fuzzes each target for a bounded time.
 */
class RequestFuzzTest {
  private static final TextTokenizer TOKENIZER = TextTokenizer.fromJson(ModelFiles.bundledQwen3().tokenizerJson(), "qwen3");
  private static final ChatTemplate TEMPLATE = ChatTemplate.fromTokenizerConfig(ModelFiles.bundledQwen3().tokenizerConfigJson(), "qwen3");
  private static final RequestParser PARSER = new RequestParser(new ServedModel("m", 2048, 151_936, "test",
      Set.of("logprobs", "seed", "structured_outputs", "logit_bias", "embeddings", "matryoshka"), new int[] {151645}, TOKENIZER,
      TEMPLATE));
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String[] ROLES = {"system", "developer", "user", "assistant", "tool", "function", ""};

  /** A refusal must be the client's fault (4xx), never the server's. */
  private static void refusedCleanly(ApiException e) {
    assertTrue(e.status() >= 400 && e.status() < 500, "status " + e.status() + ": " + e.getMessage());
    assertTrue(e.getMessage() != null && !e.getMessage().isBlank(), "a refusal says why");
  }

  @FuzzTest(maxDuration = "30s")
  void chatCompletionBody(byte[] body) {
    try {
      PARSER.parseChat(RequestParser.parseBody(body));
    } catch (ApiException e) {
      refusedCleanly(e);
    }
  }

  @FuzzTest(maxDuration = "30s")
  void completionBody(byte[] body) {
    try {
      PARSER.parseCompletion(RequestParser.parseBody(body));
    } catch (ApiException e) {
      refusedCleanly(e);
    }
  }

  /** An embeddings body: OpenAI's input shapes or vLLM's chat messages, through to the tokenized inputs. */
  @FuzzTest(maxDuration = "30s")
  void embeddingsBody(byte[] body) {
    try {
      PARSER.parseEmbeddings(RequestParser.parseBody(body));
    } catch (ApiException e) {
      refusedCleanly(e);
    }
  }

  /** A score or rerank body, through to the embeddings it runs as. */
  @FuzzTest(maxDuration = "30s")
  void scoreBody(byte[] body) {
    try {
      ObjectNode json = RequestParser.parseBody(body);
      if (json.has("query")) {
        PARSER.parseRerank(json);
      } else {
        PARSER.parseScore(json);
      }
    } catch (ApiException e) {
      refusedCleanly(e);
    }
  }

  /** A Responses API body, through the translation to chat and the chat parser, as {@code POST /v1/responses} runs it. */
  @FuzzTest(maxDuration = "30s")
  void responsesBody(byte[] body) {
    try {
      ResponsesRequest request = ResponsesRequest.parse(RequestParser.parseBody(body));
      try {
        PARSER.parseChat(request.chat());
      } catch (ApiException e) {
        throw ResponsesRequest.renamed(e);
      }
    } catch (ApiException e) {
      refusedCleanly(e);
    }
  }

  /** Well-formed JSON with fuzzed messages, tools and response formats: reaches the template and the schema compiler. */
  @FuzzTest(maxDuration = "30s")
  void chatMessagesAndTools(FuzzedDataProvider data) {
    ObjectNode body = JSON.createObjectNode().put("model", "m");
    ArrayNode messages = body.putArray("messages");
    int n = data.consumeInt(0, 6);
    for (int i = 0; i < n; i++) {
      ObjectNode m = messages.addObject();
      m.put("role", data.pickValue(ROLES));
      switch (data.consumeInt(0, 3)) {
        case 0 -> m.put("content", data.consumeString(200));
        case 1 -> m.putArray("content").addObject().put("type", "text").put("text", data.consumeString(100));
        case 2 -> m.putNull("content");
        default -> m.putArray("tool_calls").addObject().put("id", data.consumeString(8)).put("type", "function")
            .putObject("function").put("name", data.consumeString(16)).put("arguments", data.consumeString(60));
      }
    }
    if (data.consumeBoolean()) {
      ObjectNode fn = body.putArray("tools").addObject().put("type", "function").putObject("function");
      fn.put("name", data.consumeString(16));
      parseInto(fn, "parameters", data.consumeString(200));
    }
    if (data.consumeBoolean()) {
      ObjectNode format = body.putObject("response_format").put("type", "json_schema");
      ObjectNode schema = format.putObject("json_schema").put("name", "x");
      parseInto(schema, "schema", data.consumeString(300));
    }
    if (data.consumeBoolean()) {
      body.put("max_tokens", data.consumeInt(-2, 5000));
    }
    if (data.consumeBoolean()) {
      body.put("tool_choice", data.pickValue(new String[] {"auto", "none", "required", "other"}));
    }
    try {
      PARSER.parseChat(body);
    } catch (ApiException e) {
      refusedCleanly(e);
    }
  }

  /** Any text encodes; any token ids decode or are refused as out of range. */
  @FuzzTest(maxDuration = "30s")
  void tokenizerRoundTrip(FuzzedDataProvider data) {
    String text = data.consumeString(500);
    int[] ids = TOKENIZER.encode(text, data.consumeBoolean());
    TOKENIZER.decode(ids, false);
    int[] random = data.consumeInts(32);
    try {
      TOKENIZER.decode(random, data.consumeBoolean());
    } catch (IllegalArgumentException e) {
      assertTrue(e.getMessage() != null, "a refused id says why");
    }
  }

  private static void parseInto(ObjectNode parent, String field, String json) {
    try {
      parent.set(field, JSON.readTree(json));
    } catch (java.io.IOException e) {
      parent.put(field, json); // not JSON: a string where an object belongs, which the parser must refuse
    }
  }
}
