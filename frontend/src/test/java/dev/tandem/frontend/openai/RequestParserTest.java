package dev.tandem.frontend.openai;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.SamplingParams;
import dev.tandem.common.StructuredOutput;
import dev.tandem.engine.ModelFiles;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.http.ApiException;
import dev.tandem.frontend.text.ChatTemplate;
import dev.tandem.frontend.text.TextTokenizer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** OpenAI request bodies to specs: the defaults, the limits, and refusals that name the parameter. */
class RequestParserTest {
  private static final TextTokenizer TOKENIZER = TextTokenizer.fromJson(ModelFiles.bundledQwen3().tokenizerJson(), "qwen3");
  private static final ChatTemplate TEMPLATE = ChatTemplate.fromTokenizerConfig(ModelFiles.bundledQwen3().tokenizerConfigJson(), "qwen3");

  @AfterAll
  static void close() {
    TOKENIZER.close();
  }

  private static RequestParser parser(Set<String> features) {
    return new RequestParser(new ServedModel("m", 256, 151_936, "test", features, new int[] {151645}, TOKENIZER, TEMPLATE));
  }

  private static GenerationSpec chat(RequestParser p, String json) {
    return p.parseChat(RequestParser.parseBody(json.getBytes(StandardCharsets.UTF_8)));
  }

  private static final String HI = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";

  private static EmbeddingSpec embeddings(RequestParser p, String json) {
    return p.parseEmbeddings(RequestParser.parseBody(json.getBytes(StandardCharsets.UTF_8)));
  }

  private static ApiException embeddingsError(RequestParser p, String json) {
    return assertThrows(ApiException.class, () -> embeddings(p, json));
  }

  /** A model without a language-model head (the pooling_only feature) refuses generation, naming what it serves. */
  @Test
  void aModelWithoutAnLmHeadRefusesGeneration() {
    RequestParser p = parser(Set.of("embeddings", "pooling_only"));
    ApiException chatRefused = assertThrows(ApiException.class, () -> chat(p, "{\"model\":\"m\"," + HI + "}"));
    assertEquals("model", chatRefused.param());
    assertTrue(chatRefused.getMessage().contains("/v1/embeddings"), chatRefused.getMessage());
    ApiException completionRefused = assertThrows(ApiException.class, () -> p.parseCompletion(RequestParser.parseBody(
        "{\"model\":\"m\",\"prompt\":\"hi\"}".getBytes(StandardCharsets.UTF_8))));
    assertEquals("unsupported_model", completionRefused.code());
    assertEquals(1, embeddings(p, "{\"model\":\"m\",\"input\":\"hello\"}").inputs().size(), "embeddings still served");
    assertEquals(1, embeddings(p, "{\"model\":\"m\"," + HI + "}").inputs().size(), "a conversation embedded too");
    assertEquals(1, p.parseConversation(RequestParser.parseBody(("{\"model\":\"m\"," + HI + "}").getBytes(StandardCharsets.UTF_8)))
        .prompts().size(), "/tokenize's conversation");
    ApiException classifier = assertThrows(ApiException.class, () -> chat(parser(Set.of("cross_encoder", "pooling_only")),
        "{\"model\":\"m\"," + HI + "}"));
    assertTrue(classifier.getMessage().contains("sequence classifier"), classifier.getMessage());
  }

  @Test
  void embeddingsTakeOpenAIsInputShapesAndRefuseWhatCannotBeServed() {
    RequestParser p = parser(Set.of("embeddings"));
    EmbeddingSpec one = embeddings(p, "{\"model\":\"m\",\"input\":\"hello world\"}");
    assertEquals(1, one.inputs().size());
    assertArrayEquals(TOKENIZER.encode("hello world", true), one.inputs().getFirst());
    assertFalse(one.base64());
    assertEquals(0, one.dimensions());
    assertTrue(one.normalize(), "vLLM's default for embeddings");
    EmbeddingSpec many = embeddings(p, "{\"model\":\"m\",\"input\":[\"a\",[1,2,3]],\"encoding_format\":\"base64\",\"normalize\":false,"
        + "\"user\":\"u-1\"}");
    assertEquals(2, many.inputs().size());
    assertArrayEquals(new int[] {1, 2, 3}, many.inputs().get(1));
    assertTrue(many.base64());
    assertFalse(many.normalize());
    assertArrayEquals(new int[] {7, 8}, embeddings(p, "{\"model\":\"m\",\"input\":[7,8]}").inputs().getFirst());

    // What cannot be served is a 400 naming the field.
    assertEquals("input", embeddingsError(parser(Set.of()), "{\"model\":\"m\",\"input\":\"x\"}").param(), "an engine without embeddings");
    assertEquals("input", embeddingsError(p, "{\"model\":\"m\"}").param());
    assertEquals("input", embeddingsError(p, "{\"model\":\"m\",\"input\":[]}").param());
    assertEquals("input[1]", embeddingsError(p, "{\"model\":\"m\",\"input\":[\"a\",{}]}").param());
    assertEquals("encoding_format", embeddingsError(p, "{\"model\":\"m\",\"input\":\"x\",\"encoding_format\":\"int8\"}").param());
    assertEquals("dimensions", embeddingsError(p, "{\"model\":\"m\",\"input\":\"x\",\"dimensions\":8}").param(),
        "truncation needs a Matryoshka model");
    assertEquals(8, embeddings(parser(Set.of("embeddings", "matryoshka")), "{\"model\":\"m\",\"input\":\"x\",\"dimensions\":8}").dimensions());
    // vLLM's chat embeddings: the conversation as the chat template renders it, without a generation prompt unless asked.
    int[] rendered = chat(p, "{\"model\":\"m\"," + HI + ",\"add_generation_prompt\":false}").prompts().getFirst();
    assertArrayEquals(rendered, embeddings(p, "{\"model\":\"m\"," + HI + "}").inputs().getFirst());
    assertArrayEquals(chat(p, "{\"model\":\"m\"," + HI + "}").prompts().getFirst(),
        embeddings(p, "{\"model\":\"m\"," + HI + ",\"add_generation_prompt\":true}").inputs().getFirst());
    assertEquals("messages", embeddingsError(p, "{\"model\":\"m\"," + HI + ",\"input\":\"x\"}").param(), "both");
    String longChat = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"" + "word ".repeat(300) + "\"}]";
    assertEquals("context_length_exceeded", embeddingsError(p, longChat + "}").code());
    assertEquals(255, embeddings(p, longChat + ",\"truncate_prompt_tokens\":-1}").inputs().getFirst().length);
    assertEquals(404, embeddingsError(p, "{\"model\":\"other\",\"input\":\"x\"}").status());
    assertEquals("embed_dtype", embeddingsError(p, "{\"model\":\"m\",\"input\":\"x\",\"embed_dtype\":\"float16\"}").param());
    assertEquals("endianness", embeddingsError(p, "{\"model\":\"m\",\"input\":\"x\",\"endianness\":\"big\"}").param());
    assertEquals("chat_template", embeddingsError(p, "{\"model\":\"m\"," + HI + ",\"chat_template\":\"{{ x }}\"}").param(),
        "not dropped on the way to the chat template");
    embeddings(p, "{\"model\":\"m\",\"input\":\"x\",\"embed_dtype\":\"float32\",\"endianness\":\"native\"}");
    StringBuilder tooMany = new StringBuilder("{\"model\":\"m\",\"input\":[");
    for (int i = 0; i <= EmbeddingsRequest.MAX_INPUTS; i++) {
      tooMany.append(i == 0 ? "" : ",").append("\"x\"");
    }
    assertEquals("input", embeddingsError(p, tooMany.append("]}").toString()).param());
    String ids3000 = java.util.stream.IntStream.range(0, 3000).mapToObj(i -> "5").collect(java.util.stream.Collectors.joining(","));
    assertEquals("context_length_exceeded", embeddingsError(p, "{\"model\":\"m\",\"input\":[" + ids3000 + "]}").code(),
        "one input of 3,000 token ids is one input, too long");

    // The window less the one token the worker draws: 255 of this model's 256.
    String ids255 = java.util.stream.IntStream.range(0, 255).mapToObj(i -> "5").collect(java.util.stream.Collectors.joining(","));
    assertEquals(255, embeddings(p, "{\"model\":\"m\",\"input\":[" + ids255 + "]}").inputs().getFirst().length);
    ApiException tooLong = embeddingsError(p, "{\"model\":\"m\",\"input\":[\"a\",[" + ids255 + ",5]]}");
    assertEquals("input[1]", tooLong.param());
    assertEquals("context_length_exceeded", tooLong.code());
    assertEquals(255, embeddings(p, "{\"model\":\"m\",\"input\":[" + ids255 + ",5,6],\"truncate_prompt_tokens\":-1}")
        .inputs().getFirst().length, "-1: as much of the window as can be embedded");
  }

  @Test
  void nChoicesWithoutMaxTokensShareABudgetInsteadOfTheWholeContextEach() {
    RequestParser big = new RequestParser(new ServedModel("m", 32_768, 151_936, "test", Set.of(), new int[] {151645}, TOKENIZER, TEMPLATE));
    assertEquals(4096 / 8, chat(big, "{\"model\":\"m\",\"n\":8," + HI + "}").stop().maxTokens());
    assertEquals(32, chat(big, "{\"model\":\"m\",\"n\":128," + HI + "}").stop().maxTokens());
    assertEquals(1000, chat(big, "{\"model\":\"m\",\"n\":8,\"max_tokens\":1000," + HI + "}").stop().maxTokens(), "an explicit value stands");
    GenerationSpec one = chat(big, "{\"model\":\"m\"," + HI + "}");
    assertEquals(32_768 - one.prompts().getFirst().length, one.stop().maxTokens(), "n = 1 keeps the rest of the window");
  }

  @Test
  void aRequestThatSetsNothingGetsTheSharedDefaults() {
    GenerationSpec spec = chat(parser(Set.of()), "{\"model\":\"m\"," + HI + "}");
    assertEquals(SamplingParams.DEFAULTS, spec.sampling(), "one place for the defaults: common's SamplingParams");
    assertEquals(1, spec.n());
    assertEquals(256 - spec.prompts().getFirst().length, spec.maxTokens(), "the rest of the context window");
    assertEquals(-1, spec.logprobs());
    assertTrue(spec.stopStrings().isEmpty());
  }

  @Test
  void aModelWithoutAChatTemplateServesCompletionsAndRefusesChatSayingHowToGiveOne() {
    RequestParser p = new RequestParser(new ServedModel("m", 256, 151_936, "test", Set.of(), new int[] {151645}, TOKENIZER, null));
    ApiException e = refused(p, "{\"model\":\"m\"," + HI + "}");
    assertEquals("messages", e.param());
    assertTrue(e.getMessage().contains("no chat template") && e.getMessage().contains("--chat-template FILE"), e.getMessage());
    var completion = p.parseCompletion(RequestParser.parseBody("{\"model\":\"m\",\"prompt\":\"hi\"}".getBytes(StandardCharsets.UTF_8)));
    assertEquals(1, completion.prompts().size());
  }

  @Test
  void theModelsSamplingDefaultsFillWhatARequestDoesNotSet() {
    Set<String> features = Set.of("top_p", "top_k");
    SamplingParams model = new SamplingParams(0.6f, 0.95f, 20, 0f, java.util.OptionalLong.empty(), 0f, 0f, 1f, -1);
    RequestParser p = new RequestParser(
        new ServedModel("m", 256, 151_936, "test", features, new int[] {151645}, TOKENIZER, TEMPLATE).withSamplingDefaults(model));
    assertEquals(model, chat(p, "{\"model\":\"m\"," + HI + "}").sampling());
    SamplingParams own = chat(p, "{\"model\":\"m\"," + HI + ",\"temperature\":0,\"top_k\":5}").sampling();
    assertEquals(0f, own.temperature(), "what the request sets stands");
    assertEquals(5, own.topK());
    assertEquals(0.95f, own.topP(), "what it does not set is the model's");
  }

  @Test
  void samplingAndStopParametersReachTheSpec() {
    GenerationSpec spec = chat(parser(Set.of("seed", "top_p", "top_k", "logprobs", "stop_token_ids")),
        "{\"model\":\"m\"," + HI + ",\"temperature\":0.5,\"top_p\":0.9,\"top_k\":40,\"seed\":7,\"max_tokens\":12,"
            + "\"stop\":[\"x\"],\"stop_token_ids\":[5],\"ignore_eos\":true,\"logprobs\":true,\"top_logprobs\":3,\"n\":2}");
    SamplingParams s = spec.sampling();
    assertEquals(0.5f, s.temperature());
    assertEquals(0.9f, s.topP());
    assertEquals(40, s.topK());
    assertEquals(7, s.seed().getAsLong());
    assertEquals(3, s.logprobs());
    assertEquals(12, spec.stop().maxTokens());
    assertEquals(5, spec.stop().stopTokenIds()[0]);
    assertTrue(spec.stop().ignoreEos());
    assertEquals("x", spec.stopStrings().getFirst());
    assertEquals(2, spec.choiceCount());
  }

  @Test
  void minTokensReachesTheWorkersWithinTheBudgetAndOnlyWhereTheEngineHonoursIt() {
    RequestParser p = parser(Set.of("min_tokens", "structured_outputs"));
    assertEquals(5, chat(p, "{\"model\":\"m\"," + HI + ",\"max_tokens\":12,\"min_tokens\":5}").stop().minTokens());
    assertEquals(0, chat(p, "{\"model\":\"m\"," + HI + ",\"max_tokens\":12}").stop().minTokens());
    ApiException over = assertThrows(ApiException.class, () -> chat(p, "{\"model\":\"m\"," + HI + ",\"max_tokens\":12,\"min_tokens\":13}"));
    assertEquals("min_tokens", over.param());
    assertTrue(over.getMessage().contains("'max_tokens' (12)"), over.getMessage());
    ApiException shaped = assertThrows(ApiException.class, () -> chat(p, "{\"model\":\"m\"," + HI
        + ",\"max_tokens\":12,\"min_tokens\":3,\"response_format\":{\"type\":\"json_object\"}}"));
    assertEquals("min_tokens", shaped.param(), "a structured output ends when its value does");
    ApiException unhonoured = assertThrows(ApiException.class, () -> chat(parser(Set.of()), "{\"model\":\"m\"," + HI + ",\"min_tokens\":3}"));
    assertEquals("min_tokens", unhonoured.param(), "an engine without it refuses it rather than ignoring it");
    assertEquals(0, chat(parser(Set.of()), "{\"model\":\"m\"," + HI + ",\"min_tokens\":0}").stop().minTokens());
  }

  @Test
  void promptLogprobsAskTheWorkersForTheMostAlternativesEitherParameterWants() {
    RequestParser p = parser(Set.of("logprobs"));
    GenerationSpec chat = chat(p, "{\"model\":\"m\"," + HI + ",\"prompt_logprobs\":3}");
    assertEquals(3, chat.output().promptLogprobs());
    assertEquals(3, chat.sampling().promptLogprobs(), "the workers compute them");
    GenerationSpec both = p.parseCompletion(RequestParser.parseBody(
        "{\"model\":\"m\",\"prompt\":\"hi\",\"echo\":true,\"logprobs\":4,\"prompt_logprobs\":1}".getBytes(StandardCharsets.UTF_8)));
    assertEquals(4, both.sampling().promptLogprobs(), "echo's 4 and prompt_logprobs' 1: the workers send 4");
    assertEquals(1, both.output().promptLogprobs());
    assertEquals(-1, chat(p, "{\"model\":\"m\"," + HI + "}").output().promptLogprobs());
    for (String bad : List.of("21", "-1", "\"2\"")) {
      assertEquals("prompt_logprobs", assertThrows(ApiException.class,
          () -> chat(p, "{\"model\":\"m\"," + HI + ",\"prompt_logprobs\":" + bad + "}")).param(), bad);
    }
    assertEquals("prompt_logprobs", assertThrows(ApiException.class,
        () -> chat(p, "{\"model\":\"m\"," + HI + ",\"stream\":true,\"prompt_logprobs\":1}")).param(), "not on a stream, as in vLLM");
    assertEquals("unsupported_parameter", assertThrows(ApiException.class,
        () -> chat(parser(Set.of()), "{\"model\":\"m\"," + HI + ",\"prompt_logprobs\":1}")).code(), "an engine without logprobs");
  }

  /**
   * vLLM's {@code truncate_prompt_tokens}: the prompt's last k tokens (after the chat template),
   * -1 the window; a prompt longer than the window is then served; 0, above the window or not an
   * integer is a 400 naming the field.
   */
  @Test
  void truncatePromptTokensKeepsThePromptsLastTokens() {
    RequestParser p = parser(Set.of());
    String longChat = "\"messages\":[{\"role\":\"user\",\"content\":\"" + "one two three four five six seven eight ".repeat(40) + "\"}]";
    int[] whole = chat(p, "{\"model\":\"m\"," + HI + "}").prompts().getFirst();
    int[] kept = chat(p, "{\"model\":\"m\"," + HI + ",\"truncate_prompt_tokens\":5}").prompts().getFirst();
    assertEquals(java.util.Arrays.toString(java.util.Arrays.copyOfRange(whole, whole.length - 5, whole.length)), java.util.Arrays.toString(kept),
        "the last five of the rendered, tokenized chat");
    assertEquals(whole.length, chat(p, "{\"model\":\"m\"," + HI + ",\"truncate_prompt_tokens\":200}").prompts().getFirst().length,
        "a shorter prompt stays whole");
    assertEquals("messages", refused(p, "{\"model\":\"m\"," + longChat + "}").param(), "over the 256-token window without truncation");
    GenerationSpec cut = chat(p, "{\"model\":\"m\"," + longChat + ",\"truncate_prompt_tokens\":100,\"max_tokens\":10}");
    assertEquals(100, cut.prompts().getFirst().length);
    assertEquals(156, chat(p, "{\"model\":\"m\"," + longChat + ",\"truncate_prompt_tokens\":100}").maxTokens(), "the rest of the window");
    ApiException full = refused(p, "{\"model\":\"m\"," + longChat + ",\"truncate_prompt_tokens\":-1}");
    assertEquals("context_length_exceeded", full.code(), "-1 keeps the whole window, which leaves no room to generate, as in vLLM");

    var completion = p.parseCompletion(RequestParser.parseBody(
        "{\"model\":\"m\",\"prompt\":[[5,6,7,8,9],\"hello there\"],\"truncate_prompt_tokens\":3}".getBytes(StandardCharsets.UTF_8)));
    assertEquals("[7, 8, 9]", java.util.Arrays.toString(completion.prompts().get(0)), "token ids: the last three");
    assertEquals(Math.min(3, TOKENIZER.encode("hello there", true).length), completion.prompts().get(1).length);

    for (String bad : List.of("0", "-2", "257", "2.5", "\"10\"")) {
      assertEquals("truncate_prompt_tokens", refused(p, "{\"model\":\"m\"," + HI + ",\"truncate_prompt_tokens\":" + bad + "}").param(), bad);
    }
    chat(p, "{\"model\":\"m\"," + HI + ",\"truncate_prompt_tokens\":null}");
  }

  @Test
  void aLargeBodyThatAsksForTruncationIsNotRefusedByTheScanOfItsLength() {
    RequestParser p = parser(Set.of());
    String text = "word ".repeat(256 * TOKENIZER.longestTokenChars() / 5 + 10); // more characters than the window can hold
    byte[] plain = ("{\"model\":\"m\",\"prompt\":\"" + text + "\"}").getBytes(StandardCharsets.UTF_8);
    assertEquals("context_length_exceeded", assertThrows(ApiException.class, () -> p.refuseIfPromptCannotFit(plain)).code());
    byte[] after = ("{\"model\":\"m\",\"prompt\":\"" + text + "\",\"truncate_prompt_tokens\":50}").getBytes(StandardCharsets.UTF_8);
    p.refuseIfPromptCannotFit(after); // named after the prompt: the scan reads on and finds it
    assertEquals(50, p.parseCompletion(RequestParser.parseBody(after)).prompts().getFirst().length);
  }

  @Test
  void vllmParametersTandemDoesNotHonourAreRefusedUnlessAtTheirDefault() {
    RequestParser p = parser(Set.of());
    for (String set : List.of("\"spaces_between_special_tokens\":false")) {
      ApiException e = assertThrows(ApiException.class, () -> chat(p, "{\"model\":\"m\"," + HI + "," + set + "}"), set);
      assertEquals(set.substring(1, set.indexOf('"', 1)), e.param(), set);
      assertEquals(400, e.status());
    }
    assertTrue(chat(p, "{\"model\":\"m\"," + HI + ",\"include_stop_str_in_output\":true}").includeStopString(), "honoured: it reaches the spec");
    GenerationSpec ids = chat(p, "{\"model\":\"m\"," + HI + ",\"return_token_ids\":true,\"return_tokens_as_token_ids\":true}");
    assertTrue(ids.output().tokenIds() && ids.output().tokensAsIds(), "honoured: both reach the spec");
    chat(p, "{\"model\":\"m\"," + HI + ",\"include_stop_str_in_output\":false,\"spaces_between_special_tokens\":true,\"bad_words\":[],"
        + "\"allowed_token_ids\":null,\"priority\":0,\"length_penalty\":1,\"use_beam_search\":false,\"cache_salt\":null,\"echo\":false}");
    assertEquals("tenant-a", chat(parser(Set.of("cache_salt")), "{\"model\":\"m\"," + HI + ",\"cache_salt\":\"tenant-a\"}").cacheSalt());
    RequestParser banning = parser(Set.of("bad_words", "structured_outputs"));
    var words = chat(banning, "{\"model\":\"m\"," + HI + ",\"bad_words\":[\"hello\"]}").sampling().badWords();
    assertTrue(!words.isEmpty() && words.size() <= 2, "the word, and after a space where that tokenizes apart: " + words);
    for (String bad : List.of("[\"\"]", "[7]", "\"hello\"")) {
      assertTrue(assertThrows(ApiException.class, () -> chat(banning, "{\"model\":\"m\"," + HI + ",\"bad_words\":" + bad + "}"))
          .param().startsWith("bad_words"), bad);
    }
    assertEquals("bad_words", assertThrows(ApiException.class, () -> chat(banning, "{\"model\":\"m\"," + HI
        + ",\"bad_words\":[\"x\"],\"response_format\":{\"type\":\"json_object\"}}")).param());
    assertEquals("unsupported_parameter", assertThrows(ApiException.class,
        () -> chat(p, "{\"model\":\"m\"," + HI + ",\"bad_words\":[\"x\"]}")).code(), "an engine without it refuses it");
    RequestParser allowing = parser(Set.of("allowed_token_ids", "structured_outputs"));
    assertEquals(List.of(3, 5), chat(allowing, "{\"model\":\"m\"," + HI + ",\"allowed_token_ids\":[3,5]}").sampling().allowedTokenIds());
    for (String bad : List.of("[]", "[\"a\"]", "[-1]", "[999999999]", "7")) {
      assertEquals("allowed_token_ids", assertThrows(ApiException.class,
          () -> chat(allowing, "{\"model\":\"m\"," + HI + ",\"allowed_token_ids\":" + bad + "}")).param(), bad);
    }
    assertEquals("allowed_token_ids", assertThrows(ApiException.class, () -> chat(allowing, "{\"model\":\"m\"," + HI
        + ",\"allowed_token_ids\":[3],\"response_format\":{\"type\":\"json_object\"}}")).param(), "a grammar chooses the tokens");
    assertEquals("unsupported_parameter", assertThrows(ApiException.class,
        () -> chat(p, "{\"model\":\"m\"," + HI + ",\"allowed_token_ids\":[3]}")).code(), "an engine without it refuses it");
    for (String bad : List.of("\"\"", "7")) {
      assertEquals("cache_salt", assertThrows(ApiException.class,
          () -> chat(parser(Set.of("cache_salt")), "{\"model\":\"m\"," + HI + ",\"cache_salt\":" + bad + "}")).param(), bad);
    }
    assertEquals("unsupported_parameter", assertThrows(ApiException.class,
        () -> chat(p, "{\"model\":\"m\"," + HI + ",\"cache_salt\":\"tenant-a\"}")).code(), "an engine without it refuses it");
    ApiException onCompletions = assertThrows(ApiException.class, () -> completion(p, "{\"model\":\"m\",\"prompt\":\"hi\","
        + "\"spaces_between_special_tokens\":false}"));
    assertEquals("spaces_between_special_tokens", onCompletions.param());
    assertTrue(onCompletions.getMessage().contains("at its default (true)"), onCompletions.getMessage());
  }

  private static GenerationSpec completion(RequestParser p, String json) {
    return p.parseCompletion(RequestParser.parseBody(json.getBytes(StandardCharsets.UTF_8)));
  }

  /**
   * vLLM's {@code use_beam_search}: {@code n} is the beam's width and {@code length_penalty} ranks
   * what it finds; temperature and seed do not apply to a search; what would change the
   * distribution searched, a grammar, or scoring the prompt is refused with it, naming the field.
   */
  @Test
  void beamSearchTakesTheWidthFromNAndRefusesWhatItCannotSearch() {
    RequestParser p = parser(Set.of("logprobs", "presence_penalty", "top_k", "seed", "structured_outputs"));
    String beam = "{\"model\":\"m\"," + HI + ",\"max_tokens\":5,\"use_beam_search\":true";
    assertEquals(new GenerationSpec.Beam(3, 0.5), chat(p, beam + ",\"n\":3,\"length_penalty\":0.5}").beam());
    assertEquals(new GenerationSpec.Beam(1, 1.0), chat(p, beam + ",\"temperature\":0.7,\"seed\":4,\"presence_penalty\":0,"
        + "\"top_k\":0,\"logit_bias\":{}}").beam(), "what changes nothing is accepted");
    assertEquals(null, chat(p, "{\"model\":\"m\"," + HI + ",\"use_beam_search\":false,\"length_penalty\":1}").beam());
    for (String[] bad : new String[][] {
        {",\"n\":11}", "n"},
        {",\"presence_penalty\":0.5}", "presence_penalty"},
        {",\"top_k\":5}", "top_k"},
        {",\"logit_bias\":{\"42\":5}}", "logit_bias"},
        {",\"response_format\":{\"type\":\"json_object\"}}", "use_beam_search"}}) {
      ApiException e = assertThrows(ApiException.class, () -> chat(p, beam + bad[0]), bad[0]);
      assertEquals(bad[1], e.param(), bad[0]);
      assertEquals(400, e.status());
    }
    assertEquals("unsupported_parameter", assertThrows(ApiException.class, () -> chat(parser(Set.of()), beam + "}")).code(),
        "an engine without log-probabilities cannot search");
    assertEquals("echo", assertThrows(ApiException.class, () -> completion(p, "{\"model\":\"m\",\"prompt\":\"hi\","
        + "\"use_beam_search\":true,\"echo\":true,\"logprobs\":1}")).param());
    ApiException alone = assertThrows(ApiException.class, () -> completion(p, "{\"model\":\"m\",\"prompt\":\"hi\",\"length_penalty\":2}"));
    assertEquals("length_penalty", alone.param());
    assertTrue(alone.getMessage().contains("use_beam_search"), alone.getMessage());
  }

  /**
   * vLLM's {@code add_special_tokens}: off for chat (the template writes its own), on for a
   * completion's text; here with Qwen3's tokenizer given a post-processor that starts every
   * encoding with {@code <|endoftext|>}, as a BOS-adding tokenizer would.
   */
  @Test
  void addSpecialTokensIsOffForChatAndOnForCompletionsUnlessTheRequestSays() throws Exception {
    var json = (com.fasterxml.jackson.databind.node.ObjectNode) new com.fasterxml.jackson.databind.ObjectMapper()
        .readTree(ModelFiles.bundledQwen3().tokenizerJson());
    json.set("post_processor", RequestParser.parseBody(("{\"type\":\"TemplateProcessing\","
        + "\"single\":[{\"SpecialToken\":{\"id\":\"<|endoftext|>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],"
        + "\"pair\":[{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"Sequence\":{\"id\":\"B\",\"type_id\":1}}],"
        + "\"special_tokens\":{\"<|endoftext|>\":{\"id\":\"<|endoftext|>\",\"ids\":[151643],\"tokens\":[\"<|endoftext|>\"]}}}")
        .getBytes(StandardCharsets.UTF_8)));
    try (TextTokenizer bos = TextTokenizer.fromJson(json.toString().getBytes(StandardCharsets.UTF_8), "bos")) {
      RequestParser p = new RequestParser(new ServedModel("m", 256, 151_936, "test", Set.of(), new int[] {151645}, bos, TEMPLATE));
      assertTrue(chat(p, "{\"model\":\"m\"," + HI + "}").prompts().getFirst()[0] != 151643, "chat: as the template writes it");
      assertEquals(151643, chat(p, "{\"model\":\"m\"," + HI + ",\"add_special_tokens\":true}").prompts().getFirst()[0]);
      assertEquals(151643, completion(p, "{\"model\":\"m\",\"prompt\":\"hi\"}").prompts().getFirst()[0], "a completion: as encoded");
      assertTrue(completion(p, "{\"model\":\"m\",\"prompt\":\"hi\",\"add_special_tokens\":false}").prompts().getFirst()[0] != 151643);
    }
  }

  /** vLLM's and OpenAI's parameters with no counterpart here are refused when set; those that change only the response's shape reach the spec. */
  @Test
  void vllmParametersWithNoCounterpartAreRefusedWhenSet() {
    RequestParser p = parser(Set.of());
    for (String set : List.of("\"chat_template\":\"{{ messages }}\"", "\"logits_processors\":[\"m.f\"]", "\"vllm_xargs\":{\"a\":1}",
        "\"kv_transfer_params\":{\"do_remote_decode\":true}", "\"mm_processor_kwargs\":{\"x\":1}", "\"prompt_embeds\":\"AAAA\"",
        "\"functions\":[{\"name\":\"f\"}]", "\"function_call\":\"auto\"", "\"prediction\":{\"type\":\"content\",\"content\":\"x\"}",
        "\"audio\":{\"voice\":\"alloy\"}", "\"modalities\":[\"text\",\"audio\"]", "\"verbosity\":\"low\"")) {
      ApiException e = assertThrows(ApiException.class, () -> chat(p, "{\"model\":\"m\"," + HI + "," + set + "}"), set);
      assertEquals(set.substring(1, set.indexOf('"', 1)), e.param(), set);
      assertEquals("unsupported_parameter", e.code());
    }
    assertTrue(assertThrows(ApiException.class, () -> chat(p, "{\"model\":\"m\"," + HI + ",\"functions\":[{\"name\":\"f\"}]}"))
        .getMessage().contains("'tools'"), "the error says what to send instead");
    GenerationSpec plain = chat(p, "{\"model\":\"m\"," + HI + ",\"chat_template\":null,\"vllm_xargs\":{},\"logits_processors\":[],"
        + "\"modalities\":[\"text\"],\"functions\":[]}");
    assertTrue(plain.output().includeReasoning());
    assertEquals(null, plain.output().requestId());
    GenerationSpec shaped = chat(p, "{\"model\":\"m\"," + HI + ",\"include_reasoning\":false,\"request_id\":\"abc-1\"}");
    assertFalse(shaped.output().includeReasoning());
    assertEquals("abc-1", shaped.output().requestId());
    assertEquals("request_id", refused(p, "{\"model\":\"m\"," + HI + ",\"request_id\":\"\"}").param());
    assertEquals("request_id", refused(p, "{\"model\":\"m\"," + HI + ",\"request_id\":7}").param());
  }

  @Test
  void continueFinalMessageLeavesTheAssistantsTextOpenAndNeedsNoGenerationPrompt() {
    RequestParser p = parser(Set.of());
    String prefill = "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"Hello there, \"}]";
    ApiException both = assertThrows(ApiException.class, () -> chat(p, "{\"model\":\"m\"," + prefill + ",\"continue_final_message\":true}"));
    assertEquals("continue_final_message", both.param(), "add_generation_prompt defaults to true, as in vLLM");
    GenerationSpec open = chat(p, "{\"model\":\"m\"," + prefill + ",\"continue_final_message\":true,\"add_generation_prompt\":false}");
    GenerationSpec closed = chat(p, "{\"model\":\"m\"," + prefill + ",\"add_generation_prompt\":false}");
    String openText = TOKENIZER.decode(open.prompts().getFirst(), false);
    assertTrue(openText.endsWith("Hello there, "), openText);
    assertTrue(TOKENIZER.decode(closed.prompts().getFirst(), false).startsWith(openText), "the same conversation, cut after the text");
    ApiException noText = assertThrows(ApiException.class, () -> chat(p, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},"
        + "{\"role\":\"assistant\",\"content\":\"\"}],\"continue_final_message\":true,\"add_generation_prompt\":false}"));
    assertEquals("messages", noText.param());
    assertEquals("Hello there, ", chat(p, "{\"model\":\"m\"," + prefill
        + ",\"continue_final_message\":true,\"add_generation_prompt\":false,\"echo\":true}").echoedMessage(), "echo: the message continued");
    assertEquals(null, open.echoedMessage());
    assertEquals(null, chat(p, "{\"model\":\"m\"," + HI + ",\"echo\":true}").echoedMessage(), "a user's message is not the reply's role");
    ApiException userEcho = assertThrows(ApiException.class,
        () -> chat(p, "{\"model\":\"m\"," + HI + ",\"echo\":true,\"add_generation_prompt\":false}"));
    assertEquals("echo", userEcho.param(), "vLLM would reply as the user here; Tandem replies as the assistant");
  }

  @Test
  void priorityReachesTheWorkersOnlyWhereTheyScheduleByIt() {
    assertEquals(-3, chat(parser(Set.of("priority")), "{\"model\":\"m\"," + HI + ",\"priority\":-3}").priority());
    ApiException fcfs = assertThrows(ApiException.class, () -> chat(parser(Set.of()), "{\"model\":\"m\"," + HI + ",\"priority\":2}"));
    assertEquals("priority", fcfs.param());
    assertTrue(fcfs.getMessage().contains("--scheduling-policy priority"), fcfs.getMessage());
    assertEquals(0, chat(parser(Set.of()), "{\"model\":\"m\"," + HI + ",\"priority\":0}").priority(), "the default is fine anywhere");
  }

  @Test
  void refusalsNameTheParameter() {
    RequestParser p = parser(Set.of());
    ApiException seed = assertThrows(ApiException.class, () -> chat(p, "{\"model\":\"m\"," + HI + ",\"seed\":1}"));
    assertEquals("seed", seed.param(), "an engine without seeds refuses them, it does not ignore them");
    ApiException temperature = assertThrows(ApiException.class, () -> chat(p, "{\"model\":\"m\"," + HI + ",\"temperature\":3}"));
    assertEquals("temperature", temperature.param());
    ApiException zero = assertThrows(ApiException.class, () -> chat(p, "{\"model\":\"m\"," + HI + ",\"max_tokens\":0}"));
    assertEquals("max_tokens", zero.param());
    assertEquals(400, zero.status());
    ApiException tooLong = assertThrows(ApiException.class, () -> chat(p, "{\"model\":\"m\"," + HI + ",\"max_tokens\":1000}"));
    assertTrue(tooLong.getMessage().contains("maximum context length is 256"), tooLong.getMessage());
  }

  private static final String TOOL = "{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":"
      + "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},\"required\":[\"n\"]}}}";

  private static ApiException refused(RequestParser p, String json) {
    return assertThrows(ApiException.class, () -> chat(p, json));
  }

  @Test
  void structuredOutputsAreCheckedBeforeAnythingRuns() {
    RequestParser p = parser(Set.of("structured_outputs"));
    GenerationSpec spec = chat(p, "{\"model\":\"m\",\"max_tokens\":50," + HI
        + ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"strict\":true,\"schema\":{\"type\":\"integer\"}}}}");
    assertEquals("{\"type\":\"integer\"}", spec.constraint().spec());
    assertEquals(dev.tandem.common.StructuredOutput.JSON_OBJECT,
        constraint(p, "{\"model\":\"m\",\"max_tokens\":50," + HI + ",\"response_format\":{\"type\":\"json_object\"}}"));
    assertEquals(null, chat(p, "{\"model\":\"m\",\"max_tokens\":50," + HI + ",\"response_format\":{\"type\":\"text\"}}").constraint());

    ApiException keyword = refused(p, "{\"model\":\"m\",\"max_tokens\":50," + HI
        + ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"type\":\"number\",\"not\":{\"const\":2}}}}}");
    assertEquals("response_format.json_schema.schema", keyword.param());
    assertTrue(keyword.getMessage().contains("'not'"), keyword.getMessage());
    assertEquals("response_format", refused(parser(Set.of()), "{\"model\":\"m\"," + HI
        + ",\"response_format\":{\"type\":\"json_object\"}}").param(), "an engine without constrained decoding refuses");
    assertEquals("response_format", refused(p, "{\"model\":\"m\"," + HI + ",\"response_format\":{\"type\":\"yaml\"}}").param());
    assertEquals("ignore_eos", refused(p, "{\"model\":\"m\",\"ignore_eos\":true," + HI
        + ",\"response_format\":{\"type\":\"json_object\"}}").param());
    ApiException tooShort = refused(p, "{\"model\":\"m\",\"max_tokens\":3," + HI
        + ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"const\":\"a long constant that needs tokens\"}}}}");
    assertEquals("max_tokens", tooShort.param());
  }

  private static final StructuredOutput.Reasoning QWEN3_THINKING = new StructuredOutput.Reasoning("<think>", "</think>", false);

  /** A chat request's constraint, which on this Qwen3 model starts after an optional reasoning; without it. */
  private static StructuredOutput constraint(RequestParser p, String json) {
    StructuredOutput c = chat(p, json).constraint();
    if (c == null) {
      return null;
    }
    assertEquals(QWEN3_THINKING, c.reasoning(), json);
    return c.withReasoning(StructuredOutput.Reasoning.NONE);
  }

  @Test
  void reasoningEffortGoesToATemplateThatReadsItAndIsRefusedByOneThatDoesNot() {
    String base = "{\"model\":\"m\",\"max_tokens\":50," + HI;
    ApiException qwen3 = refused(parser(Set.of()), base + ",\"reasoning_effort\":\"low\"}");
    assertEquals("reasoning_effort", qwen3.param(), "Qwen3's template does not read it: refused, not ignored");
    assertTrue(qwen3.getMessage().contains("thinking_token_budget"), qwen3.getMessage());
    ChatTemplate reads = ChatTemplate.forModel(ModelFiles.bundledQwen3().tokenizerConfigJson(), null,
        "{% for m in messages %}{{ m.content }}{% endfor %}<effort:{{ reasoning_effort | default('unset') }}>", "test");
    RequestParser p = new RequestParser(new ServedModel("m", 256, 151_936, "test", Set.of(), new int[] {151645}, TOKENIZER, reads));
    assertEquals("hi<effort:low>", TOKENIZER.decode(chat(p, base + ",\"reasoning_effort\":\"low\"}").prompts().getFirst(), false));
    assertEquals("hi<effort:unset>", TOKENIZER.decode(chat(p, base + "}").prompts().getFirst(), false));
    assertEquals("reasoning_effort", refused(p, base + ",\"reasoning_effort\":\"extreme\"}").param());
  }

  /** vLLM's {@code documents}: given to a template that reads them; refused by one that does not, and when not objects of strings. */
  @Test
  void documentsGoToATemplateThatReadsThemAndAreRefusedByOneThatDoesNot() {
    String base = "{\"model\":\"m\",\"max_tokens\":50," + HI;
    String docs = ",\"documents\":[{\"title\":\"A\",\"text\":\"one\"},{\"title\":\"B\",\"text\":\"two\"}]}";
    ApiException qwen3 = refused(parser(Set.of()), base + docs);
    assertEquals("documents", qwen3.param(), "Qwen3's template does not read them: refused, not ignored");
    assertEquals("unsupported_parameter", qwen3.code());
    ChatTemplate reads = ChatTemplate.forModel(ModelFiles.bundledQwen3().tokenizerConfigJson(), null,
        "{% for d in documents | default([]) %}[{{ d.title }}: {{ d.text }}]{% endfor %}{% for m in messages %}{{ m.content }}{% endfor %}",
        "test");
    RequestParser p = new RequestParser(new ServedModel("m", 256, 151_936, "test", Set.of(), new int[] {151645}, TOKENIZER, reads));
    assertEquals("[A: one][B: two]hi", TOKENIZER.decode(chat(p, base + docs).prompts().getFirst(), false));
    assertEquals("hi", TOKENIZER.decode(chat(p, base + "}").prompts().getFirst(), false));
    assertEquals("documents[1]", refused(p, base + ",\"documents\":[{\"text\":\"one\"},{\"text\":2}]}").param());
    assertEquals("documents", refused(p, base + ",\"documents\":\"one\"}").param());
    assertEquals("chat_template_kwargs.documents", refused(p, base + ",\"chat_template_kwargs\":{\"documents\":[]}}").param(),
        "the request's own parameter, not a template variable");
  }

  @Test
  void aThinkingBudgetBoundsTheReasoningWithItsTagsAsThisTokenizerWritesThem() {
    RequestParser p = parser(Set.of("thinking_budget"));
    String base = "{\"model\":\"m\",\"max_tokens\":50," + HI;
    dev.tandem.common.ThinkingBudget b = chat(p, base + ",\"thinking_token_budget\":64}").sampling().thinkingBudget();
    assertEquals(new dev.tandem.common.ThinkingBudget(64, new int[] {151_667}, new int[] {151_668}, false), b,
        "Qwen3's <think> and </think> are one token each; its output may open the reasoning");
    assertEquals(null, chat(p, base + "}").sampling().thinkingBudget());
    assertEquals(null, chat(p, base + ",\"thinking_token_budget\":null}").sampling().thinkingBudget());
    assertEquals(null, chat(p, base + ",\"chat_template_kwargs\":{\"enable_thinking\":false},\"thinking_token_budget\":8}")
        .sampling().thinkingBudget(), "thinking off: no reasoning to bound");
    ServedModel served = new ServedModel("m", 256, 151_936, "test", Set.of("thinking_budget"), new int[] {151645}, TOKENIZER, TEMPLATE);
    assertEquals(true, chat(new RequestParser(served.withParsers("deepseek_r1", "auto")), base + ",\"thinking_token_budget\":0}")
        .sampling().thinkingBudget().opened(), "DeepSeek-R1's output starts inside the reasoning");

    assertEquals("thinking_token_budget", refused(p, base + ",\"thinking_token_budget\":-1}").param());
    assertEquals("thinking_token_budget", refused(p, base + ",\"thinking_token_budget\":\"lots\"}").param());
    ApiException noParser = refused(new RequestParser(served.withParsers("none", "auto")), base + ",\"thinking_token_budget\":8}");
    assertTrue(noParser.getMessage().contains("--reasoning-parser"), noParser.getMessage());
    assertEquals("thinking_token_budget", refused(parser(Set.of()), base + ",\"thinking_token_budget\":8}").param(),
        "an engine that cannot force the tag (the mocker) refuses");
    ApiException completion = assertThrows(ApiException.class, () -> p.parseCompletion(RequestParser.parseBody(
        "{\"model\":\"m\",\"prompt\":\"hi\",\"thinking_token_budget\":8}".getBytes(StandardCharsets.UTF_8))));
    assertEquals("thinking_token_budget", completion.param());
  }

  @Test
  void aReasoningModelsConstraintStartsAfterItsReasoning() {
    RequestParser p = parser(Set.of("structured_outputs"));
    String schema = ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"schema\":{\"type\":\"integer\"}}}";
    String thinking = "{\"model\":\"m\",\"max_tokens\":50," + HI;
    assertEquals(QWEN3_THINKING, chat(p, thinking + schema + "}").constraint().reasoning(),
        "Qwen3's template writes <think>: the output may reason first");
    assertEquals(QWEN3_THINKING, chat(p, thinking + ",\"guided_choice\":[\"a\",\"b\"]}").constraint().reasoning());
    assertEquals(QWEN3_THINKING, chat(p, thinking + ",\"tool_choice\":\"required\",\"tools\":[" + TOOL + "]}").constraint().reasoning(),
        "a forced tool call too");
    assertEquals(StructuredOutput.Reasoning.NONE,
        chat(p, thinking + ",\"chat_template_kwargs\":{\"enable_thinking\":false}" + schema + "}").constraint().reasoning(),
        "thinking turned off: the constraint applies from the first token");
    assertEquals(StructuredOutput.Reasoning.NONE, p.parseCompletion(RequestParser.parseBody(
        "{\"model\":\"m\",\"prompt\":\"hi\",\"max_tokens\":10,\"guided_regex\":\"a+\"}".getBytes(StandardCharsets.UTF_8)))
        .constraint().reasoning(), "completions parse no reasoning");
    ServedModel base = new ServedModel("m", 256, 151_936, "test", Set.of("structured_outputs"), new int[] {151645}, TOKENIZER, TEMPLATE);
    assertEquals(StructuredOutput.Reasoning.NONE,
        chat(new RequestParser(base.withParsers("none", "auto")), thinking + schema + "}").constraint().reasoning(),
        "--reasoning-parser none");
    assertEquals(new StructuredOutput.Reasoning("<think>", "</think>", true),
        chat(new RequestParser(base.withParsers("deepseek_r1", "auto")), thinking + schema + "}").constraint().reasoning(),
        "DeepSeek-R1's output starts inside its reasoning");
    ApiException tooShort = refused(new RequestParser(base.withParsers("deepseek_r1", "auto")),
        "{\"model\":\"m\",\"max_tokens\":2," + HI + ",\"guided_choice\":[\"yes\"]}");
    assertTrue(tooShort.getMessage().contains("takes 2 tokens"), "</think> and yes, then the end: " + tooShort.getMessage());
  }

  @Test
  void aStructuralTagIsTakenAsVllmTakesItAndCheckedBeforeAnythingRuns() throws Exception {
    RequestParser p = parser(Set.of("structured_outputs"));
    String base = "{\"model\":\"m\",\"max_tokens\":50," + HI + ",";
    String tag = "{\"structures\":[{\"begin\":\"<f=a>\",\"schema\":{\"type\":\"integer\"},\"end\":\"</f>\"}],\"triggers\":[\"<f=\"]}";
    StructuredOutput expected = StructuredOutput.structuralTag(tag);
    assertEquals(expected, constraint(p, base + "\"response_format\":{\"type\":\"structural_tag\"," + tag.substring(1) + "}"));
    assertEquals(expected, constraint(p, base + "\"structured_outputs\":{\"structural_tag\":"
        + new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(tag) + "}}"), "vLLM's field takes the tag's JSON text");
    assertEquals(expected, constraint(p, base + "\"structured_outputs\":{\"structural_tag\":" + tag + "}}"), "or the object");

    ApiException begin = refused(p, base + "\"response_format\":{\"type\":\"structural_tag\"," + tag.substring(1).replace("<f=a>", "<g=a>") + "}");
    assertEquals("response_format", begin.param());
    assertTrue(begin.getMessage().startsWith("Invalid structural tag in 'response_format (at /structures/0/begin)': '<g=a>' starts with"
        + " none of the triggers"), begin.getMessage());
    ApiException schema = refused(p, base + "\"structured_outputs\":{\"structural_tag\":"
        + tag.replace("\"integer\"", "\"number\",\"not\":{\"const\":3}") + "}}");
    assertEquals("structured_outputs.structural_tag", schema.param());
    assertTrue(schema.getMessage().contains("(at /structures/0/schema/not)"), schema.getMessage());
    assertEquals("response_format.format", refused(p, base + "\"response_format\":{\"type\":\"structural_tag\",\"format\":"
        + "{\"type\":\"triggered_tags\"}}}").param(), "xgrammar's later form is refused by name");
    assertEquals("response_format", refused(parser(Set.of()), base + "\"response_format\":{\"type\":\"structural_tag\","
        + tag.substring(1) + "}").param(), "an engine without constrained decoding refuses");
  }

  @Test
  void vllmStructuredOutputsAndTheGuidedFieldsTheyReplacedGiveOneConstraint() {
    RequestParser p = parser(Set.of("structured_outputs"));
    String base = "{\"model\":\"m\",\"max_tokens\":50," + HI + ",";
    StructuredOutput choice = constraint(p, base + "\"structured_outputs\":{\"choice\":[\"yes\",\"no\"]}}");
    assertEquals(StructuredOutput.choice("[\"yes\",\"no\"]"), choice);
    assertEquals(choice, constraint(p, base + "\"guided_choice\":[\"yes\",\"no\"],\"guided_decoding_backend\":\"xgrammar\"}"),
        "vLLM's older field, its backend choice accepted without effect");
    assertEquals(StructuredOutput.regex("\\d+"), constraint(p, base + "\"structured_outputs\":{\"regex\":\"\\\\d+\"}}"));
    assertEquals(StructuredOutput.grammar("root ::= \"a\""),
        constraint(p, base + "\"guided_grammar\":\"root ::= \\\"a\\\"\"}"));
    assertEquals(StructuredOutput.jsonSchema("{\"type\":\"integer\"}"),
        constraint(p, base + "\"structured_outputs\":{\"json\":{\"type\":\"integer\"},\"disable_fallback\":true}}"));
    assertEquals(StructuredOutput.jsonSchema("{\"type\":\"integer\"}"),
        constraint(p, base + "\"guided_json\":\"{\\\"type\\\":\\\"integer\\\"}\"}"), "a schema as text");
    assertEquals(StructuredOutput.JSON_OBJECT, constraint(p, base + "\"structured_outputs\":{\"json_object\":true}}"));
    assertEquals(null, constraint(p, base + "\"structured_outputs\":{\"regex\":null,\"json_object\":false}}"));

    ApiException regex = refused(p, base + "\"structured_outputs\":{\"regex\":\"(?<=a)b\"}}");
    assertEquals("structured_outputs.regex", regex.param());
    assertTrue(regex.getMessage().startsWith("Invalid regular expression in 'structured_outputs.regex'"), regex.getMessage());
    ApiException grammar = refused(p, base + "\"structured_outputs\":{\"grammar\":\"root ::= x\"}}");
    assertTrue(grammar.getMessage().contains("line 1, column 10: the rule 'x' is used but never defined"), grammar.getMessage());
    assertEquals("structured_outputs.choice", refused(p, base + "\"structured_outputs\":{\"choice\":[]}}").param());
    assertEquals("guided_choice", refused(p, base + "\"guided_choice\":[1]}").param());
    assertEquals("structured_outputs.regex", refused(p, base + "\"structured_outputs\":{\"json\":{},\"regex\":\"a\"}}").param(),
        "one kind at a time");
    assertEquals("guided_regex", refused(p, base + "\"structured_outputs\":{\"json\":{}},\"guided_regex\":\"a\"}").param());
    assertEquals("structured_outputs.choice", refused(p, base + "\"structured_outputs\":{\"choice\":[\"a\"]},"
        + "\"response_format\":{\"type\":\"json_object\"}}").param());
    assertEquals("structured_outputs.structural_tag", refused(p, base + "\"structured_outputs\":{\"structural_tag\":\"{}\"}}").param());
    assertEquals("structured_outputs.disable_any_whitespace",
        refused(p, base + "\"structured_outputs\":{\"json_object\":true,\"disable_any_whitespace\":true}}").param());
    assertEquals("guided_whitespace_pattern", refused(p, base + "\"guided_json\":{},\"guided_whitespace_pattern\":\" *\"}").param());
    assertEquals("structured_outputs.regx", refused(p, base + "\"structured_outputs\":{\"regx\":\"a\"}}").param());
    assertEquals("structured_outputs.regex", refused(parser(Set.of()), base + "\"structured_outputs\":{\"regex\":\"a\"}}").param(),
        "an engine without constrained decoding refuses");
    assertEquals("max_tokens", refused(p, "{\"model\":\"m\",\"max_tokens\":2," + HI
        + ",\"structured_outputs\":{\"choice\":[\"a very long answer of many tokens\", \"another long answer of tokens\"]}}").param());
  }

  @Test
  void toolChoiceIsCheckedAgainstTheOfferedTools() throws Exception {
    RequestParser p = parser(Set.of("structured_outputs"));
    GenerationSpec auto = chat(p, "{\"model\":\"m\"," + HI + ",\"tools\":[" + TOOL + "]}");
    assertEquals(dev.tandem.frontend.parse.ToolCallFormat.HERMES, auto.parsers().toolCalls(), "Qwen3's template writes <tool_call>");
    var json = new com.fasterxml.jackson.databind.ObjectMapper();
    assertEquals(StructuredOutput.Kind.STRUCTURAL_TAG, auto.constraint().kind(), "under auto, the calls the model may write are held to the tools");
    var tag = json.readTree(auto.constraint().spec());
    assertEquals("<tool_call>", tag.at("/triggers/0").asText());
    assertEquals("<tool_call>\n", tag.at("/structures/0/begin").asText());
    assertEquals("\n</tool_call>", tag.at("/structures/0/end").asText());
    assertEquals("f", tag.at("/structures/0/schema/properties/name/const").asText());
    assertEquals("integer", tag.at("/structures/0/schema/properties/arguments/properties/n/type").asText());
    assertFalse(tag.has("stop_after_first"));
    assertEquals(new StructuredOutput.Reasoning("<think>", "</think>", false), auto.constraint().reasoning(), "after Qwen3's reasoning");
    String autoBody = "{\"model\":\"m\",\"max_tokens\":100," + HI + ",\"tools\":[" + TOOL + "]";
    assertTrue(json.readTree(chat(p, autoBody + ",\"parallel_tool_calls\":false}").constraint().spec()).get("stop_after_first").asBoolean(),
        "one call at most: the output ends with it");
    assertEquals(null, chat(p, autoBody + ",\"ignore_eos\":true}").constraint(), "ignore_eos: left free");
    assertEquals(StructuredOutput.JSON_OBJECT.withReasoning(auto.constraint().reasoning()),
        chat(p, autoBody + ",\"response_format\":{\"type\":\"json_object\"}}").constraint(), "the request's own constraint instead");
    assertEquals(null, chat(parser(Set.of()), autoBody + "}").constraint(), "an engine without structured outputs: left free");
    assertEquals(null, chat(new RequestParser(new ServedModel("m", 256, 151_936, "test", Set.of("structured_outputs"), new int[] {151645},
        TOKENIZER, TEMPLATE).withParsers("auto", "auto", false)), autoBody + "}").constraint(), "--tool-call-constraint none");
    GenerationSpec none = chat(p, "{\"model\":\"m\"," + HI + ",\"tool_choice\":\"none\",\"tools\":[" + TOOL + "]}");
    assertEquals(dev.tandem.frontend.parse.ToolCallFormat.NONE, none.parsers().toolCalls());
    GenerationSpec required = chat(p, "{\"model\":\"m\",\"max_tokens\":100," + HI + ",\"tool_choice\":\"required\",\"tools\":[" + TOOL + "]}");
    assertEquals("<tool_call>\n", required.constraint().prefix());

    assertEquals("tool_choice", refused(p, "{\"model\":\"m\"," + HI
        + ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}},\"tools\":[" + TOOL + "]}").param());
    assertEquals("tool_choice", refused(p, "{\"model\":\"m\"," + HI + ",\"tool_choice\":\"required\"}").param());
    assertEquals("tool_choice", refused(p, "{\"model\":\"m\"," + HI + ",\"tool_choice\":\"always\",\"tools\":[" + TOOL + "]}").param());
    assertEquals("tools[0].function.parameters", refused(p, "{\"model\":\"m\"," + HI
        + ",\"tool_choice\":\"required\",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":"
        + "{\"type\":\"object\",\"properties\":{\"n\":{\"not\":{}}}}}}]}").param());
    assertEquals("tools[0].function.parameters", refused(p, "{\"model\":\"m\"," + HI
        + ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":\"n\"}}]}").param());
    ApiException malformed = refused(p, "{\"model\":\"m\"," + HI
        + ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":"
        + "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"strin\"}}}}}]}");
    assertEquals("tools[0].function.parameters", malformed.param(), "an invalid schema is refused even with tool_choice auto");
    assertTrue(malformed.getMessage().contains("/properties/n/type"), malformed.getMessage());
    assertEquals(null, chat(p, "{\"model\":\"m\"," + HI + ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":"
        + "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"number\",\"not\":{\"const\":3}}}}}}]}").constraint(),
        "valid, merely unconstrainable: fine for auto, and its calls left free");
    assertEquals("tool_choice", refused(parser(Set.of()), "{\"model\":\"m\"," + HI
        + ",\"tool_choice\":\"required\",\"tools\":[" + TOOL + "]}").param(), "forcing a call needs constrained decoding");
    RequestParser mistral = new RequestParser(new ServedModel("m", 256, 151_936, "test", Set.of("structured_outputs"),
        new int[] {151645}, TOKENIZER, TEMPLATE).withParsers("none", "mistral"));
    assertEquals("tool_choice", refused(mistral, "{\"model\":\"m\"," + HI + ",\"tool_choice\":\"required\",\"tools\":[" + TOOL + "]}").param());
  }

  @Test
  void logitBiasIsCheckedAndReachesTheSampler() {
    RequestParser p = parser(Set.of("logit_bias"));
    assertEquals(java.util.Map.of(42, -100f, 7, 2.5f),
        chat(p, "{\"model\":\"m\"," + HI + ",\"logit_bias\":{\"42\":-100,\"7\":2.5}}").sampling().logitBias());
    assertEquals("logit_bias", refused(p, "{\"model\":\"m\"," + HI + ",\"logit_bias\":{\"42\":101}}").param());
    assertEquals("logit_bias", refused(p, "{\"model\":\"m\"," + HI + ",\"logit_bias\":{\"999999\":1}}").param());
    assertEquals("logit_bias", refused(p, "{\"model\":\"m\"," + HI + ",\"logit_bias\":{\"x\":1}}").param());
    assertEquals("logit_bias", refused(p, "{\"model\":\"m\"," + HI + ",\"logit_bias\":[1]}").param());
    assertEquals("logit_bias", refused(parser(Set.of()), "{\"model\":\"m\"," + HI + ",\"logit_bias\":{\"1\":1}}").param());
    assertTrue(chat(parser(Set.of()), "{\"model\":\"m\"," + HI + ",\"logit_bias\":{}}").sampling().logitBias().isEmpty());
  }

  @Test
  void laxInputIsRefusedNamingTheProblem() {
    RequestParser p = parser(Set.of());
    assertThrows(ApiException.class, () -> RequestParser.parseBody("{\"model\":\"m\"} trailing".getBytes(StandardCharsets.UTF_8)));
    byte[] overlong = {'{', '"', 'a', '"', ':', '"', (byte) 0xC0, (byte) 0xAF, '"', '}'};
    ApiException utf8 = assertThrows(ApiException.class, () -> RequestParser.parseBody(overlong));
    assertTrue(utf8.getMessage().contains("UTF-8"), utf8.getMessage());
    assertEquals("messages[0].tool_calls", refused(p, "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"content\":null,"
        + "\"tool_calls\":\"call f\"}]}").param());
    assertEquals("messages[0].tool_calls[0]", refused(p, "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"content\":null,"
        + "\"tool_calls\":[{\"function\":{\"arguments\":\"{}\"}}]}]}").param());
    assertEquals("chat_template_kwargs.tools", refused(p, "{\"model\":\"m\"," + HI
        + ",\"chat_template_kwargs\":{\"tools\":[{\"function\":{}}]}}").param());
    StringBuilder many = new StringBuilder("{\"model\":\"m\",\"messages\":[");
    for (int i = 0; i <= RequestParser.MAX_MESSAGES; i++) {
      many.append(i == 0 ? "" : ",").append("{\"role\":\"user\",\"content\":\"x\"}");
    }
    assertEquals("messages", refused(p, many.append("]}").toString()).param());
  }

  @Test
  void aBodyWhosePromptCannotFitIsRefusedByAScanThatBuildsNothing() {
    RequestParser p = parser(Set.of()); // context 256 tokens, Qwen3's longest token 128 characters
    String ok = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"" + "x".repeat(256 * 128) + "\"}]}";
    p.refuseIfPromptCannotFit(ok.getBytes(StandardCharsets.UTF_8));
    String parts = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\""
        + "x".repeat(256 * 64) + "\"},{\"type\":\"text\",\"text\":\"" + "x".repeat(256 * 64 + 1) + "\"}]}]}";
    ApiException e = assertThrows(ApiException.class, () -> p.refuseIfPromptCannotFit(parts.getBytes(StandardCharsets.UTF_8)));
    assertEquals("messages", e.param());
    assertEquals("context_length_exceeded", e.code());
    String prompt = "{\"model\":\"m\",\"prompt\":[\"" + "y".repeat(256 * 128) + "\", \"z\"]}";
    assertEquals("prompt", assertThrows(ApiException.class, () -> p.refuseIfPromptCannotFit(prompt.getBytes(StandardCharsets.UTF_8))).param());
    p.refuseIfPromptCannotFit("{not json".getBytes(StandardCharsets.UTF_8)); // left to parseBody
    String other = "{\"model\":\"m\",\"messages\":[],\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"description\":\""
        + "d".repeat(256 * 200) + "\"}}}";
    p.refuseIfPromptCannotFit(other.getBytes(StandardCharsets.UTF_8)); // not prompt text
  }

  @Test
  void aTemplateThatOpensTheReasoningMakesTheOutputStartInsideIt() {
    // Qwen3's own template with thinking on: the output opens <think> itself.
    assertEquals(dev.tandem.frontend.parse.ReasoningFormat.QWEN3, chat(parser(Set.of()), "{\"model\":\"m\"," + HI + "}").parsers().reasoning());
    // A template ending its generation prompt with <think> (Qwen3 thinking-2507 style).
    ChatTemplate opening = ChatTemplate.fromTokenizerConfig(
        ("{\"chat_template\": \"{% for m in messages %}{{ m.content }}{% endfor %}<think>\\n\"}").getBytes(StandardCharsets.UTF_8), "test");
    RequestParser p = new RequestParser(new ServedModel("m", 256, 151_936, "test", Set.of(), new int[] {151645}, TOKENIZER, opening)
        .withParsers("qwen3", "none"));
    assertEquals(dev.tandem.frontend.parse.ReasoningFormat.DEEPSEEK_R1, chat(p, "{\"model\":\"m\"," + HI + "}").parsers().reasoning());
  }
}
