package dev.tandem.frontend.openai;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.engine.ModelFiles;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.http.ApiException;
import dev.tandem.frontend.text.TextTokenizer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** Score and rerank bodies to the embeddings they run as: the pairings, the defaults, and errors naming the client's fields. */
class ScoreRequestTest {
  private static final TextTokenizer TOKENIZER = TextTokenizer.fromJson(ModelFiles.bundledQwen3().tokenizerJson(), "qwen3");
  private static final RequestParser PARSER =
      new RequestParser(new ServedModel("m", 64, 151_936, "test", Set.of("embeddings"), new int[] {151645}, TOKENIZER, null));

  @AfterAll
  static void close() {
    TOKENIZER.close();
  }

  private static ScoreSpec score(String json) {
    return PARSER.parseScore(RequestParser.parseBody(json.getBytes(StandardCharsets.UTF_8)));
  }

  private static ScoreSpec rerank(String json) {
    return PARSER.parseRerank(RequestParser.parseBody(json.getBytes(StandardCharsets.UTF_8)));
  }

  private static ApiException scoreError(String json) {
    return assertThrows(ApiException.class, () -> score(json));
  }

  private static ApiException rerankError(String json) {
    return assertThrows(ApiException.class, () -> rerank(json));
  }

  @Test
  void oneQueryAgainstManyIsEmbeddedOnceThenTheDocuments() {
    ScoreSpec s = score("{\"model\":\"m\",\"text_1\":\"what is a lighthouse\",\"text_2\":[\"a tower with a lamp\",\"a seashell\"],"
        + "\"priority\":0,\"request_id\":\"r-1\"}");
    assertEquals(1, s.queries());
    assertEquals(2, s.documents());
    assertFalse(s.rerank());
    List<int[]> inputs = s.inputs().inputs();
    assertEquals(3, inputs.size());
    assertArrayEquals(TOKENIZER.encode("what is a lighthouse", true), inputs.get(0));
    assertArrayEquals(TOKENIZER.encode("a seashell", true), inputs.get(2));
    assertTrue(s.inputs().normalize(), "cosine similarity: unit vectors");
    assertEquals(0, s.inputs().dimensions(), "whole vectors");
    assertEquals("r-1", s.inputs().requestId());
    ScoreSpec pairs = score("{\"model\":\"m\",\"text_1\":[\"a\",\"b\"],\"text_2\":[\"c\",\"d\"]}");
    assertEquals(2, pairs.queries(), "N:N pairs by index");
    assertEquals(4, pairs.inputs().inputs().size());
    assertEquals(1, score("{\"model\":\"m\",\"text_1\":[\"a\"],\"text_2\":\"c\"}").documents(), "1:1, one an array");
  }

  @Test
  void scoresAreCosinesOfUnitVectorsPairedAsTheRequestPairsThem() {
    ScoreSpec oneToMany = score("{\"model\":\"m\",\"text_1\":\"q\",\"text_2\":[\"a\",\"b\"]}");
    float[] q = {0.6f, 0.8f};
    assertArrayEquals(new double[] {1.0, 0.8}, oneToMany.scores(List.of(q, new float[] {0.6f, 0.8f}, new float[] {0, 1})), 1e-6);
    ScoreSpec byIndex = score("{\"model\":\"m\",\"text_1\":[\"a\",\"b\"],\"text_2\":[\"c\",\"d\"]}");
    assertArrayEquals(new double[] {0.0, -1.0},
        byIndex.scores(List.of(new float[] {1, 0}, new float[] {0, 1}, new float[] {0, 1}, new float[] {0, -1})), 1e-6,
        "text_1[j] against text_2[j]");
  }

  @Test
  void rerankTakesStringsOrTextObjectsAndItsOwnOptions() {
    ScoreSpec r = rerank("{\"model\":\"m\",\"query\":\"q\",\"documents\":[\"plain\",{\"text\":\"from an object\"}],\"top_n\":1}");
    assertTrue(r.rerank());
    assertEquals(List.of("plain", "from an object"), r.texts());
    assertArrayEquals(TOKENIZER.encode("from an object", true), r.inputs().inputs().get(2));
    assertEquals(1, r.topN());
    assertTrue(r.returnDocuments(), "Jina's and Cohere's default");
    assertFalse(rerank("{\"model\":\"m\",\"query\":\"q\",\"documents\":[\"d\"],\"return_documents\":false}").returnDocuments());
    assertEquals(0, rerank("{\"model\":\"m\",\"query\":\"q\",\"documents\":[\"d\"]}").topN(), "all of them");
  }

  @Test
  void aCrossEncoderReadsEachQueryAndDocumentAsOnePair() {
    RequestParser p = new RequestParser(new ServedModel("m", 64, 151_936, "test", Set.of("cross_encoder"), new int[] {151645}, TOKENIZER,
        null));
    ScoreSpec s = p.parseScore(RequestParser.parseBody(
        "{\"model\":\"m\",\"text_1\":[\"q1\",\"q2\"],\"text_2\":[\"d1\",\"d2\"]}".getBytes(StandardCharsets.UTF_8)));
    assertTrue(s.crossEncoder());
    assertEquals(0, s.queries());
    assertEquals(2, s.documents());
    assertArrayEquals(TOKENIZER.encode("q2d2", true), s.inputs().inputs().get(1), "by index, the two texts joined as vLLM joins them");
    assertFalse(s.inputs().normalize(), "a logit, not a vector to normalize");
    assertTrue(s.activation(), "vLLM's default: the sigmoid");
    assertArrayEquals(new double[] {0.5, 1 / (1 + Math.exp(-2))}, s.scores(List.of(new float[] {0}, new float[] {2})), 1e-9);
    ScoreSpec raw = p.parseRerank(RequestParser.parseBody(
        "{\"model\":\"m\",\"query\":\"q\",\"documents\":[\"d\"],\"use_activation\":false}".getBytes(StandardCharsets.UTF_8)));
    assertFalse(raw.activation());
    assertArrayEquals(new double[] {2.0}, raw.scores(List.of(new float[] {2})), 1e-9);
    String longText = "\"" + "lighthouse ".repeat(80) + "\"";
    ApiException tooLong = assertThrows(ApiException.class, () -> p.parseRerank(RequestParser.parseBody(
        ("{\"model\":\"m\",\"query\":\"q\",\"documents\":[\"d\"," + longText + "]}").getBytes(StandardCharsets.UTF_8))));
    assertEquals("documents[1]", tooLong.param());
    assertEquals("context_length_exceeded", tooLong.code());
    ScoreSpec kept = p.parseRerank(RequestParser.parseBody(
        ("{\"model\":\"m\",\"query\":\"q\",\"documents\":[" + longText + "],\"truncate_prompt_tokens\":-1}").getBytes(StandardCharsets.UTF_8)));
    assertEquals(63, kept.inputs().inputs().getFirst().length, "-1: the window less the drawn token");
    String many = "[" + "\"d\",".repeat(EmbeddingsRequest.MAX_INPUTS) + "\"d\"]";
    assertEquals("documents", assertThrows(ApiException.class, () -> p.parseRerank(RequestParser.parseBody(
        ("{\"model\":\"m\",\"query\":\"q\",\"documents\":" + many + "}").getBytes(StandardCharsets.UTF_8)))).param(),
        "at most as many pairs as an embeddings request's inputs");
  }

  /** The score template this repository ships for Qwen3-Reranker writes the prompt its model card gives, for each pair. */
  @Test
  void aScoreTemplateWritesQwen3RerankersPrompt() throws Exception {
    String template = java.nio.file.Files.readString(java.nio.file.Path.of("../deploy/score-templates/qwen3-reranker.jinja"));
    RequestParser p = new RequestParser(new ServedModel("m", 4096, 151_936, "test", Set.of("cross_encoder"), new int[] {151645}, TOKENIZER,
        dev.tandem.frontend.text.ChatTemplate.forModel(ModelFiles.bundledQwen3().tokenizerConfigJson(), null, template, "test")));
    String prefix = "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. "
        + "Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n";
    String suffix = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";
    ScoreSpec s = p.parseRerank(RequestParser.parseBody(
        "{\"model\":\"m\",\"query\":\"What is the capital of China?\",\"documents\":[\"Beijing.\",\"Gravity.\"]}".getBytes(StandardCharsets.UTF_8)));
    String expected = prefix + "<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n"
        + "<Query>: What is the capital of China?\n<Document>: Gravity." + suffix;
    assertEquals(expected, TOKENIZER.decode(s.inputs().inputs().get(1), false), "the default instruction");
    assertArrayEquals(TOKENIZER.encode(expected, true), s.inputs().inputs().get(1));
    ScoreSpec instructed = p.parseScore(RequestParser.parseBody(("{\"model\":\"m\",\"text_1\":\"q\",\"text_2\":\"d\","
        + "\"chat_template_kwargs\":{\"instruction\":\"Find code\"}}").getBytes(StandardCharsets.UTF_8)));
    assertEquals(prefix + "<Instruct>: Find code\n<Query>: q\n<Document>: d" + suffix,
        TOKENIZER.decode(instructed.inputs().inputs().getFirst(), false), "chat_template_kwargs' instruction");
    ApiException noTemplate = assertThrows(ApiException.class, () -> new RequestParser(new ServedModel("m", 4096, 151_936, "test",
        Set.of("cross_encoder"), new int[] {151645}, TOKENIZER, null)).parseScore(RequestParser.parseBody(("{\"model\":\"m\","
        + "\"text_1\":\"q\",\"text_2\":\"d\",\"chat_template_kwargs\":{\"instruction\":\"x\"}}").getBytes(StandardCharsets.UTF_8))));
    assertEquals("chat_template_kwargs", noTemplate.param());
    assertEquals("chat_template_kwargs", scoreError("{\"model\":\"m\",\"text_1\":\"a\",\"text_2\":\"b\","
        + "\"chat_template_kwargs\":{\"instruction\":\"x\"}}").param(), "an embedding model has no score template");
  }

  @Test
  void badBodiesAreRefusedNamingTheClientsField() {
    assertEquals("text_2", scoreError("{\"model\":\"m\",\"text_1\":[\"a\",\"b\"],\"text_2\":[\"c\",\"d\",\"e\"]}").param(), "2:3");
    assertEquals("text_1", scoreError("{\"model\":\"m\",\"text_2\":\"c\"}").param());
    assertEquals("text_2", scoreError("{\"model\":\"m\",\"text_1\":\"a\",\"text_2\":[]}").param());
    assertEquals("text_2[1]", scoreError("{\"model\":\"m\",\"text_1\":\"a\",\"text_2\":[\"c\",7]}").param());
    assertEquals("use_activation", scoreError("{\"model\":\"m\",\"text_1\":\"a\",\"text_2\":\"b\",\"use_activation\":true}").param());
    assertEquals("mm_processor_kwargs", rerankError("{\"model\":\"m\",\"query\":\"q\",\"documents\":[\"d\"],"
        + "\"mm_processor_kwargs\":{\"x\":1}}").param());
    assertEquals("query", rerankError("{\"model\":\"m\",\"documents\":[\"d\"]}").param());
    assertEquals("documents", rerankError("{\"model\":\"m\",\"query\":\"q\",\"documents\":[]}").param());
    assertEquals("documents[0].text", rerankError("{\"model\":\"m\",\"query\":\"q\",\"documents\":[{\"title\":\"t\"}]}").param());
    assertEquals("top_n", rerankError("{\"model\":\"m\",\"query\":\"q\",\"documents\":[\"d\"],\"top_n\":-1}").param());
    assertEquals(404, rerankError("{\"model\":\"other\",\"query\":\"q\",\"documents\":[\"d\"]}").status());
    String longText = "\"" + "lighthouse ".repeat(80) + "\"";
    ApiException tooLong = rerankError("{\"model\":\"m\",\"query\":\"q\",\"documents\":[\"d\"," + longText + "]}");
    assertEquals("documents[1]", tooLong.param(), tooLong.getMessage());
    assertEquals("context_length_exceeded", tooLong.code());
    assertEquals("text_1", scoreError("{\"model\":\"m\",\"text_1\":" + longText + ",\"text_2\":\"d\"}").param());
    ScoreSpec truncated = score("{\"model\":\"m\",\"text_1\":" + longText + ",\"text_2\":\"d\",\"truncate_prompt_tokens\":8}");
    assertEquals(8, truncated.inputs().inputs().getFirst().length, "vLLM's truncate_prompt_tokens, per text");
    RequestParser noEmbeddings = new RequestParser(new ServedModel("m", 64, 151_936, "mocker", Set.of(), new int[] {151645}, TOKENIZER, null));
    ApiException mocker = assertThrows(ApiException.class, () -> noEmbeddings.parseRerank(RequestParser.parseBody(
        "{\"model\":\"m\",\"query\":\"q\",\"documents\":[\"d\"]}".getBytes(StandardCharsets.UTF_8))));
    assertTrue(mocker.getMessage().contains("mocker"), mocker.getMessage());
  }
}
