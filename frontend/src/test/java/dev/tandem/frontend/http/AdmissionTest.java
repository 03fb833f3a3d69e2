package dev.tandem.frontend.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.FinishReason;
import dev.tandem.frontend.FrontendMetrics;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** API keys, the in-flight limit, the connection cap, the request timeouts and runtime LoRA updates' switch, each at its own handler. */
class AdmissionTest {
  // Its own tokenizer: GenerationRunTest closes its one when it ends.
  private static final dev.tandem.frontend.text.TextTokenizer TOKENIZER = dev.tandem.frontend.text.TextTokenizer.fromJson(
      dev.tandem.engine.ModelFiles.bundledQwen3().tokenizerJson(), "qwen3");
  private static final dev.tandem.frontend.ServedModel MODEL = new dev.tandem.frontend.ServedModel("m", 4096, 151_936, "test",
      java.util.Set.of(), new int[] {151645}, TOKENIZER,
      dev.tandem.frontend.text.ChatTemplate.fromTokenizerConfig(dev.tandem.engine.ModelFiles.bundledQwen3().tokenizerConfigJson(), "qwen3"));

  @TempDir Path dir;

  @org.junit.jupiter.api.AfterAll
  static void close() {
    TOKENIZER.close();
  }

  private static Admission keys(boolean onMetrics, String... keys) {
    return new Admission(ApiKeys.of(List.of(keys)), onMetrics, 0, 0, Duration.ZERO, Duration.ZERO, false);
  }

  private static EmbeddedChannel channel(Admission admission, FrontendMetrics metrics) {
    var router = new GenerationRunTest.ScriptedRouter(l -> {
      l.onChunk(GenerationRunTest.chunk(TOKENIZER.encode("Hi", false), FinishReason.STOP));
      l.onCompleted();
    });
    return new EmbeddedChannel(new HttpApiHandler(MODEL, router, metrics, 0, Duration.ZERO, admission));
  }

  private static FullHttpResponse get(EmbeddedChannel ch, String path, String authorization) {
    var r = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, path);
    if (authorization != null) {
      r.headers().set(HttpHeaderNames.AUTHORIZATION, authorization);
    }
    ch.writeInbound(r);
    ch.runPendingTasks();
    return ch.readOutbound();
  }

  @Test
  void withKeysEveryEndpointButLiveAndHealthNeedsOne() {
    EmbeddedChannel ch = channel(keys(false, "sk-one", "sk-two"), new FrontendMetrics());
    FullHttpResponse none = get(ch, "/v1/models", null);
    assertEquals(401, none.status().code());
    assertEquals("Bearer", none.headers().get(HttpHeaderNames.WWW_AUTHENTICATE));
    assertTrue(none.content().toString(StandardCharsets.UTF_8).contains("\"code\":\"invalid_api_key\""));
    assertEquals(401, get(ch, "/v1/models", "Bearer sk-three").status().code());
    assertEquals(401, get(ch, "/v1/models", "Basic sk-one").status().code());
    assertEquals(401, get(ch, "/v1/models", "Bearer sk-on").status().code(), "a prefix of a key is no key");
    assertEquals(200, get(ch, "/v1/models", "Bearer sk-two").status().code());
    assertEquals(200, get(ch, "/v1/models", "bearer sk-one").status().code());
    assertEquals(200, get(ch, "/live", null).status().code());
    assertEquals(200, get(ch, "/metrics", null).status().code(), "metrics open unless asked");
    EmbeddedChannel strict = channel(keys(true, "sk-one"), new FrontendMetrics());
    assertEquals(401, get(strict, "/metrics", null).status().code());
    assertEquals(200, get(strict, "/metrics", "Bearer sk-one").status().code());
  }

  @Test
  void retrievingAModelNeedsTheKeyAndCountsUnderOneEndpointWhateverTheName() {
    FrontendMetrics metrics = new FrontendMetrics();
    EmbeddedChannel ch = channel(keys(false, "sk-one"), metrics);
    assertEquals(401, get(ch, "/v1/models/m", null).status().code());
    FullHttpResponse found = get(ch, "/v1/models/m", "Bearer sk-one");
    assertEquals(200, found.status().code());
    assertTrue(found.content().toString(java.nio.charset.StandardCharsets.UTF_8).contains("\"id\":\"m\""));
    FullHttpResponse other = get(ch, "/v1/models/org/other-model", "Bearer sk-one");
    assertEquals(404, other.status().code());
    assertTrue(other.content().toString(java.nio.charset.StandardCharsets.UTF_8).contains("model_not_found"));
    String scrape = metrics.scrape();
    assertTrue(scrape.contains("endpoint=\"models_retrieve\"") && !scrape.contains("other-model"), "one label for every name asked for");
  }

  @Test
  void aGenerationNeedsTheKeyToo() throws Exception {
    EmbeddedChannel ch = channel(keys(false, "sk-one"), new FrontendMetrics());
    GenerationRunTest.post(ch, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    assertEquals(401, GenerationRunTest.drain(ch).status());
  }

  @Test
  void loadingLoraAdaptersIsOffUnlessAllowedAndNeedsTheKeyWhenAllowed() throws Exception {
    EmbeddedChannel off = channel(Admission.open(), new FrontendMetrics());
    GenerationRunTest.post(off, "/v1/load_lora_adapter", "{\"lora_name\":\"sql\",\"lora_path\":\"/adapters/sql\"}");
    GenerationRunTest.Written refused = GenerationRunTest.drain(off);
    assertEquals(404, refused.status());
    assertTrue(refused.body().contains("--allow-runtime-lora-updating"), refused.body());
    GenerationRunTest.post(off, "/v1/unload_lora_adapter", "{\"lora_name\":\"sql\"}");
    assertEquals(404, GenerationRunTest.drain(off).status());

    EmbeddedChannel keyed = channel(keys(false, "sk-one").withLoraUpdates(true), new FrontendMetrics());
    GenerationRunTest.post(keyed, "/v1/load_lora_adapter", "{\"lora_name\":\"sql\",\"lora_path\":\"/adapters/sql\"}");
    assertEquals(401, GenerationRunTest.drain(keyed).status(), "an admin call like any other: the key first");

    EmbeddedChannel on = channel(Admission.open().withLoraUpdates(true), new FrontendMetrics());
    GenerationRunTest.post(on, "/v1/load_lora_adapter", "{\"lora_name\":\"sql\",\"lora_path\":\"\"}");
    GenerationRunTest.Written empty = GenerationRunTest.drain(on);
    assertEquals(400, empty.status());
    assertTrue(empty.body().contains("\"param\":\"lora_path\""), empty.body());
    GenerationRunTest.post(on, "/v1/unload_lora_adapter", "{\"lora_name\":7}");
    GenerationRunTest.Written number = GenerationRunTest.drain(on);
    assertEquals(400, number.status());
    assertTrue(number.body().contains("\"param\":\"lora_name\""), number.body());
  }

  @Test
  void keyFilesSkipCommentsAndAnEmptyOneIsRefusedNamingIt() throws Exception {
    Path file = dir.resolve("keys.txt");
    Files.writeString(file, "# team A\nsk-a\n\n  sk-b  \n");
    ApiKeys keys = ApiKeys.fromFile(file);
    assertEquals(2, keys.count());
    Files.writeString(file, "# nothing\n");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ApiKeys.fromFile(file));
    assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> ApiKeys.fromFile(dir.resolve("missing.txt")));
  }

  @Test
  void pastTheInflightLimitA429WithRetryAfter() throws Exception {
    FrontendMetrics metrics = new FrontendMetrics();
    metrics.inflightChange(2); // two generations running
    EmbeddedChannel ch = channel(new Admission(ApiKeys.none(), false, 2, 0, Duration.ZERO, Duration.ZERO, false), metrics);
    var r = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/v1/completions",
        Unpooled.copiedBuffer("{\"model\":\"m\",\"prompt\":\"hi\",\"max_tokens\":2}", StandardCharsets.UTF_8));
    r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
    ch.writeInbound(r);
    FullHttpResponse response = ch.readOutbound();
    assertEquals(429, response.status().code());
    assertEquals("1", response.headers().get(HttpHeaderNames.RETRY_AFTER));
    assertTrue(response.content().toString(StandardCharsets.UTF_8).contains("rate_limit_exceeded"));
    assertEquals(200, get(ch, "/v1/models", null).status().code(), "only generations count");
    metrics.inflightChange(-1);
    GenerationRunTest.post(ch, "{\"model\":\"m\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    GenerationRunTest.Written w = GenerationRunTest.drain(ch);
    assertEquals(200, w.status(), w.body());
  }

  @Test
  void theConnectionCapClosesTheOneTooMany() {
    ConnectionLimit limit = new ConnectionLimit(2);
    EmbeddedChannel a = new EmbeddedChannel(limit);
    EmbeddedChannel b = new EmbeddedChannel(limit);
    EmbeddedChannel c = new EmbeddedChannel(limit);
    assertTrue(a.isActive() && b.isActive());
    assertFalse(c.isActive(), "the third connection is closed");
    a.close();
    EmbeddedChannel d = new EmbeddedChannel(limit);
    assertTrue(d.isActive(), "room again once one closed");
    assertEquals(2, limit.open());
  }

  @Test
  void aRequestThatDoesNotArriveWholeGetsA408AndTheConnectionCloses() {
    EmbeddedChannel ch = new EmbeddedChannel(new RequestTimeouts(Duration.ofSeconds(5), Duration.ZERO));
    var head = new DefaultHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/v1/completions");
    head.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, 100); // and never the body
    ch.writeInbound(head);
    ch.advanceTimeBy(4, TimeUnit.SECONDS);
    ch.runScheduledPendingTasks();
    assertTrue(ch.isActive(), "still within its 5 s");
    ch.advanceTimeBy(2, TimeUnit.SECONDS);
    ch.runScheduledPendingTasks();
    FullHttpResponse r = ch.readOutbound();
    assertEquals(408, r.status().code());
    assertFalse(ch.isActive());
  }

  @Test
  void anIdleConnectionIsClosedButNotWhileAResponseIsPending() {
    EmbeddedChannel ch = new EmbeddedChannel(new RequestTimeouts(Duration.ZERO, Duration.ofSeconds(10)));
    ch.writeInbound(new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/v1/models"));
    ch.advanceTimeBy(30, TimeUnit.SECONDS);
    ch.runScheduledPendingTasks();
    assertTrue(ch.isActive(), "a request being answered keeps the connection");
    ch.writeOutbound(new io.netty.handler.codec.http.DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
        io.netty.handler.codec.http.HttpResponseStatus.OK));
    ch.advanceTimeBy(11, TimeUnit.SECONDS);
    ch.runScheduledPendingTasks();
    assertFalse(ch.isActive(), "idle 10 s after its response");
  }

  @Test
  void aMalformedRequestIsAnsweredAndTheConnectionClosed() {
    EmbeddedChannel ch = channel(Admission.open(), new FrontendMetrics());
    var r = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET, "/v1/models");
    r.setDecoderResult(io.netty.handler.codec.DecoderResult.failure(new IllegalArgumentException("bad header")));
    ch.writeInbound(r);
    ch.runPendingTasks();
    FullHttpResponse response = ch.readOutbound();
    assertEquals(400, response.status().code());
    assertFalse(ch.isActive(), "keep-alive does not survive a malformed request");
  }
}
