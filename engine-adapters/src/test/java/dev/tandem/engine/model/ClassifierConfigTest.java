package dev.tandem.engine.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.engine.ModelFiles;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** vLLM's {@code --hf-overrides} for a two-way cross-encoder: the tokens found in tokenizer.json, everything else refused by name. */
class ClassifierConfigTest {
  @TempDir static Path dir;
  private static int no;
  private static int yes;
  private static final String QWEN3_RERANKER =
      "{\"architectures\": [\"Qwen3ForSequenceClassification\"], \"classifier_from_token\": [\"no\", \"yes\"], \"is_original_qwen3_reranker\": true}";

  @BeforeAll
  static void tokenizer() throws Exception {
    byte[] json = ModelFiles.bundledQwen3().tokenizerJson();
    Files.write(dir.resolve("tokenizer.json"), json);
    JsonNode vocab = new ObjectMapper().readTree(json).path("model").path("vocab");
    no = vocab.get("no").asInt();
    yes = vocab.get("yes").asInt();
  }

  private static String refusal(String overrides) {
    return assertThrows(IllegalArgumentException.class, () -> ClassifierConfig.parse(overrides, dir)).getMessage();
  }

  @Test
  void qwen3RerankersOverridesReadTheYesLogitLessTheNoLogit() {
    ClassifierConfig c = ClassifierConfig.parse(QWEN3_RERANKER, dir);
    assertEquals(no, c.falseToken());
    assertEquals(yes, c.trueToken());
    float[] logits = new float[Math.max(no, yes) + 1];
    logits[no] = 1.5f;
    logits[yes] = 4f;
    assertEquals(2.5f, c.logits(logits, null)[0]);
    assertEquals(1, c.labels());
    assertEquals(yes, ClassifierConfig.parse("{\"classifier_from_token\": [\"no\", \"yes\"], \"method\": \"from_2_way_softmax\"}", dir)
        .trueToken(), "mxbai-rerank-v2's form");
    assertNull(ClassifierConfig.parse(null, dir));
    assertNull(ClassifierConfig.parse(" ", dir));
    int added = ClassifierConfig.parse("{\"classifier_from_token\": [\"<|im_end|>\", \"yes\"], \"method\": \"from_2_way_softmax\"}", dir)
        .falseToken();
    assertEquals(151645, added, "an added token, by its content");
  }

  @Test
  void aScoreHeadReadsTheHiddenStateOneLogitALabel() {
    ClassifierConfig c = ClassifierConfig.ofScoreHead(new float[][] {{0.5f, -2f, 1f}, {1f, 0f, -1f}});
    assertEquals(2, c.labels());
    float[] logits = c.logits(null, new float[] {2, 0.25f, 3});
    assertEquals(0.5f * 2 - 2f * 0.25f + 3f, logits[0], 1e-6);
    assertEquals(2f - 3f, logits[1], 1e-6);
  }

  @Test
  void whatCannotBeServedIsRefusedNamingTheFlagAndField() {
    assertTrue(refusal("{\"max_position_embeddings\": 8192}").contains("'max_position_embeddings' is not supported"));
    assertTrue(refusal("{\"architectures\": [\"Qwen3ForCausalLM\"], \"classifier_from_token\": [\"no\", \"yes\"], "
        + "\"is_original_qwen3_reranker\": true}").contains("'architectures'"));
    assertTrue(refusal("{\"architectures\": [\"Qwen3ForSequenceClassification\"]}").contains("needs no --hf-overrides"));
    assertTrue(refusal("{\"classifier_from_token\": [\"no\", \"yes\"]}").contains("two-way"), "no method: vLLM's label logits");
    assertTrue(refusal("{\"classifier_from_token\": [\"a\", \"b\", \"c\"], \"method\": \"from_2_way_softmax\"}").contains("two token"));
    assertTrue(refusal("{\"classifier_from_token\": [\"no\", \"definitely-not-a-token\"], \"is_original_qwen3_reranker\": true}")
        .contains("'definitely-not-a-token' is not a token of " + dir.resolve("tokenizer.json")));
    assertTrue(refusal("{not json").contains("not valid JSON"));
    assertTrue(refusal("[1]").contains("a JSON object"));
    assertTrue(refusal(QWEN3_RERANKER.replace("}", ", \"x\": 1}")).startsWith("--hf-overrides: 'x'"));
    Path empty = dir.resolve("no-tokenizer");
    ModelFormatException missing = assertThrows(ModelFormatException.class, () -> ClassifierConfig.parse(QWEN3_RERANKER, empty));
    assertTrue(missing.getMessage().contains("tokenizer.json"), missing.getMessage());
  }
}
