package dev.tandem.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.frontend.http.Admission;
import dev.tandem.frontend.http.FrontendServer;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where a served model's chat template comes from, over real HTTP: a directory whose
 * tokenizer_config.json has none serves completions and refuses chat; its chat_template.jinja
 * (how recent transformers releases save it) serves chat; {@code --chat-template} wins over both.
 */
@Tag("e2e")
class ChatTemplateFilesTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  @TempDir Path dir;

  /** The tiny model with the chat template taken out of its tokenizer_config.json. */
  private Path modelWithoutTemplate() throws Exception {
    Path model = TestDeployments.tinyModel(dir);
    ObjectNode config = (ObjectNode) JSON.readTree(model.resolve("tokenizer_config.json").toFile());
    config.remove("chat_template");
    JSON.writeValue(model.resolve("tokenizer_config.json").toFile(), config);
    return model;
  }

  private static LocalDeployment serve(Path model, String chatTemplateFlag) {
    return TestDeployments.builtin(model, 1, 2, new FrontendServer.Config("127.0.0.1", 0, 1 << 20, java.time.Duration.ZERO,
        Admission.open(), "auto", "auto", FrontendServer.DEFAULT_MIGRATION_LIMIT, "auto", chatTemplateFlag));
  }

  /** The prompt text a chat of one user message "hi" renders to: tokenized by the server, then decoded. */
  private static String rendered(LocalDeployment d) throws Exception {
    HttpResponse<String> t = TestDeployments.post(d, "/tokenize", "{\"model\":\"tiny\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    assertEquals(200, t.statusCode(), t.body());
    JsonNode tokens = JSON.readTree(t.body()).get("tokens");
    HttpResponse<String> text = TestDeployments.post(d, "/detokenize", "{\"model\":\"tiny\",\"tokens\":" + tokens + "}");
    assertEquals(200, text.statusCode(), text.body());
    return JSON.readTree(text.body()).get("prompt").asText();
  }

  @Test
  void withoutATemplateChatIsRefusedAndCompletionsServe() throws Exception {
    try (LocalDeployment d = serve(modelWithoutTemplate(), null)) {
      HttpResponse<String> chat = TestDeployments.post(d, "/v1/chat/completions",
          "{\"model\":\"tiny\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
      assertEquals(400, chat.statusCode(), chat.body());
      assertTrue(chat.body().contains("no chat template") && chat.body().contains("--chat-template"), chat.body());
      assertEquals(200, TestDeployments.post(d, "/v1/completions", "{\"model\":\"tiny\",\"max_tokens\":2,\"prompt\":\"hi\"}").statusCode());
    }
  }

  @Test
  void theDirectorysChatTemplateJinjaServesChatAndTheFlagWins() throws Exception {
    Path model = modelWithoutTemplate();
    Files.writeString(model.resolve("chat_template.jinja"), "{% for m in messages %}file says {{ m['content'] }}{% endfor %}\n");
    try (LocalDeployment d = serve(model, null)) {
      assertEquals("file says hi", rendered(d));
      HttpResponse<String> chat = TestDeployments.post(d, "/v1/chat/completions",
          "{\"model\":\"tiny\",\"max_tokens\":2,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
      assertEquals(200, chat.statusCode(), chat.body());
    }
    try (LocalDeployment d = serve(model, "{% for m in messages %}flag says {{ m['content'] }}{% endfor %}")) {
      assertEquals("flag says hi", rendered(d));
    }
  }
}
