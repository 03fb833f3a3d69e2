package dev.tandem.frontend.openai;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.frontend.ServedModel;
import dev.tandem.frontend.http.ApiException;
import dev.tandem.frontend.text.ChatTemplate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.StructuredOutput;
import dev.tandem.common.ThinkingBudget;
import dev.tandem.frontend.parse.OutputParsers;
import dev.tandem.frontend.parse.ReasoningFormat;
import dev.tandem.frontend.parse.ToolCallFormat;
import java.util.Set;

/**
 * Validates OpenAI chat and text completion requests and turns them into a {@link GenerationSpec}:
 * every parameter checked for type and range, parameters the engine cannot honour refused with a
 * 400 naming them, the prompt rendered and tokenized and checked against the context window.
 *
 * <p>One algorithm, kept whole on purpose (over 400 lines): the OpenAI parameter table, read top
 * to bottom in the order the API reference lists it.
 *
 * <p>Stateless apart from the served model; thread-safe.
 */
public final class RequestParser {
  // Strings as long as a body may be (the body limit bounds them), so that a long prompt is
  // refused for its length, not for Jackson's default 20M-character cap.
  private static final ObjectMapper JSON = new ObjectMapper(
      com.fasterxml.jackson.core.JsonFactory.builder()
          .streamReadConstraints(com.fasterxml.jackson.core.StreamReadConstraints.builder().maxStringLength(Integer.MAX_VALUE).build())
          .build())
      .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
  private static final Set<String> ROLES = Set.of("system", "developer", "user", "assistant", "tool");
  private static final int MAX_N = 128;
  /** Template variables the parser sets itself (passing them in kwargs would bypass its checks). */
  private static final List<String> RESERVED_TEMPLATE_VARIABLES =
      List.of("messages", "tools", "add_generation_prompt", "bos_token", "eos_token", "documents");
  static final int MAX_MESSAGES = 8192;
  /** OpenAI's values of {@code reasoning_effort}. */
  private static final List<String> REASONING_EFFORTS = List.of("none", "minimal", "low", "medium", "high");
  /**
   * Output tokens all choices of a request may produce together when it sets {@code n > 1} but no
   * {@code max_tokens}: without it, {@code n} choices each running to the end of the context
   * window fill the KV cache and delay everyone (each choice gets this ÷ n).
   */
  static final int DEFAULT_TOKENS_FOR_ALL_CHOICES = 4096;
  private static final int MAX_STOP_STRINGS = 16;
  private static final int MAX_LOGIT_BIAS = 1024;
  private static final int MAX_BAD_WORDS = 128;

  /** vLLM's parameter for keeping only a prompt's last tokens ({@link #truncation}). */
  static final String TRUNCATE_PROMPT_TOKENS = "truncate_prompt_tokens";

  /** vLLM's {@code request_id}: what the response's id ends with (null: a random one). */
  static String requestId(ObjectNode body) {
    JsonNode v = body.get("request_id");
    if (v == null || v.isNull()) {
      return null;
    }
    if (!v.isTextual()) {
      throw typeError("request_id", "a string", v);
    }
    String id = v.asText();
    if (id.isEmpty() || id.length() > 256 || id.chars().anyMatch(ch -> ch < 0x20 || ch == 0x7f)) {
      throw ApiException.invalid("request_id", "'request_id' must be 1 to 256 characters, none of them a control character.");
    }
    return id;
  }

  private final ServedModel model;
  /** Each reasoning format's thinking budget with its tags as this model's tokenizer writes them (tokenized once). */
  private final java.util.Map<ReasoningFormat, ThinkingBudget> budgetTags = new java.util.concurrent.ConcurrentHashMap<>();

  public RequestParser(ServedModel model) {
    this.model = model;
  }

  /**
   * A parsed JSON body, or a 400 if it is not well-formed UTF-8 (overlong forms and lone
   * surrogates included, which Jackson alone lets through) or not exactly one JSON object.
   */
  public static ObjectNode parseBody(byte[] body) {
    JsonNode node;
    String text;
    try {
      text = java.nio.charset.StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
          .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
          .decode(java.nio.ByteBuffer.wrap(body))
          .toString();
    } catch (java.nio.charset.CharacterCodingException e) {
      throw ApiException.invalid(null, "The request body is not valid UTF-8.", "invalid_json");
    }
    try {
      node = JSON.readTree(text);
    } catch (java.io.IOException e) {
      throw ApiException.invalid(
          null,
          "We could not parse the JSON body of your request: " + firstLine(e.getMessage()),
          "invalid_json");
    }
    if (node == null || !node.isObject()) {
      throw ApiException.invalid(null, "The request body must be a JSON object.", "invalid_json");
    }
    return (ObjectNode) node;
  }

  private static String firstLine(String s) {
    if (s == null) {
      return "malformed JSON";
    }
    int nl = s.indexOf('\n');
    return nl < 0 ? s : s.substring(0, nl);
  }

  /**
   * vLLM's {@code documents} for retrieval-augmented chat: a list of objects of strings (such as
   * {@code {"title", "text"}}), passed to the chat template as the variable of that name, as vLLM
   * does; refused where this model's template does not read it, rather than ignored.
   */
  private void documents(ObjectNode body, Map<String, Object> kwargs) {
    JsonNode docs = body.get("documents");
    if (docs == null || docs.isNull()) {
      return;
    }
    if (!docs.isArray()) {
      throw typeError("documents", "an array", docs);
    }
    List<Map<String, Object>> out = new ArrayList<>();
    for (int i = 0; i < docs.size(); i++) {
      JsonNode d = docs.get(i);
      if (!d.isObject() || !d.valueStream().allMatch(JsonNode::isTextual)) {
        throw ApiException.invalid("documents[" + i + "]", "Each of 'documents' must be an object whose values are strings "
            + "(such as {\"title\": ..., \"text\": ...}).");
      }
      out.add(toJava(d));
    }
    if (!model.chatTemplate().mentions("documents")) {
      throw ApiException.unsupportedParameter("documents", "'documents' are passed to the chat template, and this model's template "
          + "does not read them: put them in a message, or serve the model with a --chat-template that reads 'documents'.");
    }
    kwargs.put("documents", out);
  }

  public GenerationSpec parseChat(ObjectNode body) {
    refuseGenerationIfPoolingOnly(body);
    return parseConversation(body);
  }

  /**
   * A chat request read as {@link #parseChat} reads it, whatever the model serves: a pooling
   * request's conversation (vLLM's chat embeddings, {@code /classify}) or {@code /tokenize}'s.
   */
  public GenerationSpec parseConversation(ObjectNode body) {
    checkModelAndParameters(body);
    List<Map<String, Object>> messages = messages(body);
    List<Map<String, Object>> tools = tools(body);
    StructuredOutputs.ToolChoice toolChoice = StructuredOutputs.toolChoice(body.get("tool_choice"), body.get("tools"));
    if (toolChoice.kind() == StructuredOutputs.ToolChoice.Kind.NONE) {
      tools = null; // not offered to the model
    }
    Map<String, Object> kwargs = templateKwargs(body);
    boolean addGenerationPrompt = bool(body, "add_generation_prompt", true);
    boolean continueFinal = bool(body, "continue_final_message", false);
    if (continueFinal && addGenerationPrompt) {
      throw ApiException.invalid("continue_final_message",
          "'continue_final_message' and 'add_generation_prompt' cannot both be true: set 'add_generation_prompt' to false to continue the final message.");
    }
    int logprobs = -1;
    if (body.has("logprobs") && bool(body, "logprobs", false)) {
      requireFeature("logprobs", "logprobs");
      logprobs = 0;
    }
    if (body.has("top_logprobs") && !body.get("top_logprobs").isNull()) {
      int top = integer(body, "top_logprobs", 0, 0, 20);
      if (!bool(body, "logprobs", false)) {
        throw ApiException.invalid("top_logprobs", "top_logprobs requires logprobs to be true.");
      }
      if (top > 0) {
        requireFeature("top_logprobs", "logprobs");
      }
      logprobs = top;
    }
    int keep = truncation(body);
    if (keep == 0) {
      checkLengthBeforeTokenizing(contentChars(body), "messages");
    }
    if (!model.hasChatTemplate()) {
      throw ApiException.invalid("messages", "This model has no chat template (none in tokenizer_config.json, no chat_template.jinja), "
          + "so it serves /v1/completions only; to serve chat, start the frontend with --chat-template FILE.");
    }
    reasoningEffort(body, kwargs);
    documents(body, kwargs);
    String text;
    try {
      text = model.chatTemplate().render(messages, tools, addGenerationPrompt, kwargs);
      if (continueFinal) {
        text = ChatTemplate.openFinalMessage(text, (String) messages.getLast().get("content")); // parts are joined by now
      }
    } catch (ChatTemplate.TemplateFailure e) {
      throw ApiException.invalid("messages", "The chat template rejected the conversation: " + e.getMessage());
    }
    int[] prompt = truncated(model.tokenizer().encode(text, bool(body, "add_special_tokens", false)), keep);
    String maxTokensParam = body.has("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    int maxTokens = maxTokens(body, prompt.length, "messages", maxTokensParam);
    boolean thinking = !Boolean.FALSE.equals(kwargs.get("enable_thinking"));
    ReasoningFormat reasoning = thinking ? model.parsers().reasoning() : ReasoningFormat.NONE;
    if (reasoning == ReasoningFormat.QWEN3 && text.stripTrailing().endsWith("<think>")) {
      // The template opened the reasoning itself (Qwen3 thinking-2507, QwQ): the output starts inside it.
      reasoning = ReasoningFormat.DEEPSEEK_R1;
    }
    StructuredOutput forced = null;
    if (toolChoice.forced()) {
      requireFeature("tool_choice", "structured_outputs");
      forced = StructuredOutputs.forcedCall(toolChoice, body.get("tools"), model.parsers().toolCalls())
          .withReasoning(reasoning.constraintAfter());
      StructuredOutputs.check(forced, "tool_choice", maxTokens, maxTokensParam, model.tokenizer());
    }
    OutputParsers parsers = new OutputParsers(
        reasoning,
        tools != null ? model.parsers().toolCalls() : ToolCallFormat.NONE);
    GenerationSpec spec = common(body, GenerationSpec.Kind.CHAT, List.of(prompt), maxTokens, logprobs, maxTokensParam, forced, parsers)
        .withOneToolCall(!bool(body, "parallel_tool_calls", true))
        .withIncludeReasoning(bool(body, "include_reasoning", true))
        .withEchoedMessage(echoedMessage(body, messages, addGenerationPrompt));
    if (spec.constraint() == null && toolChoice.kind() == StructuredOutputs.ToolChoice.Kind.AUTO && tools != null
        && model.parsers().constrainedCalls() && model.supports("structured_outputs") && !spec.stop().ignoreEos()
        && spec.stop().minTokens() == 0 && !spec.sampling().restrictsTokens() && spec.sampling().badWords().isEmpty()
        && !bool(body, "use_beam_search", false)) {
      // Nothing else constrains the output: the calls the model may write are held to the tools (--tool-call-constraint).
      StructuredOutput calls = StructuredOutputs.autoCalls(body.get("tools"), parsers.toolCalls(), spec.oneToolCall());
      if (calls != null) {
        spec = spec.withConstraint(calls.withReasoning(reasoning.constraintAfter()));
      }
    }
    ThinkingBudget budget = thinkingBudget(body, reasoning);
    return beamSearch(body, budget == null ? spec : spec.withSampling(spec.sampling().withThinkingBudget(budget)));
  }

  /**
   * vLLM's {@code thinking_token_budget}: the most output tokens the reasoning may take before its
   * closing tag is forced; null when not set, or when this request's output has no reasoning
   * ({@code enable_thinking: false}: nothing to bound).
   */
  private ThinkingBudget thinkingBudget(ObjectNode body, ReasoningFormat reasoning) {
    JsonNode v = body.get("thinking_token_budget");
    if (v == null || v.isNull()) {
      return null;
    }
    int tokens = integer(body, "thinking_token_budget", 0, 0, Integer.MAX_VALUE);
    if (model.parsers().reasoning() == ReasoningFormat.NONE) {
      throw ApiException.invalid("thinking_token_budget", "'thinking_token_budget' needs a reasoning model's output to be read for its "
          + "reasoning, and this server reads none: start it with --reasoning-parser qwen3 or deepseek_r1.");
    }
    requireFeature("thinking_token_budget", "thinking_budget");
    return reasoning == ReasoningFormat.NONE ? null
        : budgetTags.computeIfAbsent(reasoning, r -> r.thinkingBudget(0, model.tokenizer())).withMaxTokens(tokens);
  }

  /**
   * {@code reasoning_effort}, passed to the chat template as the variable of that name (as vLLM
   * does: gpt-oss's template reads it); refused where this model's template does not read it, rather
   * than ignored.
   */
  private void reasoningEffort(ObjectNode body, Map<String, Object> kwargs) {
    JsonNode effort = body.get("reasoning_effort");
    if (effort == null || effort.isNull()) {
      return;
    }
    if (!effort.isTextual() || !REASONING_EFFORTS.contains(effort.asText())) {
      throw ApiException.invalid("reasoning_effort", "'reasoning_effort' must be one of " + String.join(", ", REASONING_EFFORTS) + ".");
    }
    if (!model.chatTemplate().mentions("reasoning_effort")) {
      throw ApiException.unsupportedParameter("reasoning_effort", "'reasoning_effort' is passed to the chat template, and this model's "
          + "template does not read it. Bound the reasoning with 'thinking_token_budget', or turn it off with "
          + "'chat_template_kwargs': {\"enable_thinking\": false} where the template reads that.");
    }
    kwargs.put("reasoning_effort", effort.asText());
  }

  /** The widest beam search: each step asks a worker for 2 × the width likeliest tokens, and it gives at most this many. */
  static final int MAX_BEAM_WIDTH = SamplingParams.MAX_LOGPROBS / 2;

  /**
   * Parameters that change the distribution a sample is drawn from: a beam search reads the model's
   * raw log-probabilities, so a request that sets one of these with {@code use_beam_search} is
   * refused rather than searched as if it had not. In this order, so that the error names the same
   * field every time; an empty list or object is not set, nor is a number at its value in {@link
   * #NEUTRAL}.
   */
  private static final List<String> NOT_SEARCHED = List.of("presence_penalty", "frequency_penalty", "repetition_penalty", "top_p",
      "top_k", "min_p", "logit_bias", "allowed_token_ids", "bad_words", "thinking_token_budget", "prompt_logprobs");

  /** The values of {@link #NOT_SEARCHED}'s numbers that change nothing (top_k's 0 too). */
  private static final Map<String, Double> NEUTRAL = Map.of(
      "presence_penalty", 0.0, "frequency_penalty", 0.0, "repetition_penalty", 1.0, "top_p", 1.0, "top_k", -1.0, "min_p", 0.0);

  /**
   * vLLM's {@code use_beam_search} (the beam as wide as {@code n}) and {@code length_penalty},
   * which ranks the sequences found; {@code spec} searched instead of sampled. Temperature and seed
   * do not apply to a search (nor do they in vLLM); what would change the distribution searched
   * ({@link #NOT_SEARCHED}), a grammar or the prompt's log-probabilities are refused with it.
   */
  private GenerationSpec beamSearch(ObjectNode body, GenerationSpec spec) {
    boolean on = bool(body, "use_beam_search", false);
    double lengthPenalty = number(body, "length_penalty", 1.0, -10.0, 10.0);
    if (!on) {
      if (lengthPenalty != 1.0) {
        throw ApiException.invalid("length_penalty", "'length_penalty' ranks the sequences a beam search finds: set 'use_beam_search' "
            + "to true, or leave it out.");
      }
      return spec;
    }
    requireFeature("use_beam_search", "logprobs");
    if (spec.n() > MAX_BEAM_WIDTH) {
      throw ApiException.invalid("n", "With 'use_beam_search', 'n' is the beam's width: at most " + MAX_BEAM_WIDTH
          + " (each step asks for twice as many likeliest tokens, and a worker gives at most " + SamplingParams.MAX_LOGPROBS + ").",
          "invalid_value");
    }
    for (String param : NOT_SEARCHED) {
      JsonNode v = body.get(param);
      Double neutral = NEUTRAL.get(param);
      boolean set = NotHonoured.isSet(v)
          && !(neutral != null && v.isNumber() && (v.doubleValue() == neutral || param.equals("top_k") && v.doubleValue() == 0));
      if (set) {
        throw ApiException.invalid(param, "'" + param + "' cannot be combined with 'use_beam_search': the search ranks sequences by "
            + "the model's own log-probabilities.");
      }
    }
    if (spec.constraint() != null) {
      throw ApiException.invalid("use_beam_search", "'use_beam_search' cannot be combined with structured outputs or a forced tool "
          + "call: the output's grammar chooses its tokens.");
    }
    if (spec.sampling().promptLogprobs() >= 0) {
      throw ApiException.invalid("echo", "'echo' with 'logprobs' cannot be combined with 'use_beam_search': it scores the prompt, "
          + "which a search does not compute in full.");
    }
    return spec.withBeam(new GenerationSpec.Beam(spec.n(), lengthPenalty));
  }

  public GenerationSpec parseCompletion(ObjectNode body) {
    refuseGenerationIfPoolingOnly(body);
    checkModelAndParameters(body);
    if (body.has("thinking_token_budget") && !body.get("thinking_token_budget").isNull()) {
      throw ApiException.invalid("thinking_token_budget",
          "'thinking_token_budget' applies to chat requests, whose output is read for its reasoning; completions are not.");
    }
    for (String unsupported : List.of("suffix")) {
      JsonNode v = body.get(unsupported);
      if (v != null && !v.isNull() && !(v.isTextual() && v.asText().isEmpty())) {
        throw unsupported(unsupported, "is not supported yet");
      }
    }
    boolean echo = bool(body, "echo", false);
    if (body.has("best_of") && !body.get("best_of").isNull()) {
      int bestOf = integer(body, "best_of", 1, 1, MAX_N);
      if (bestOf != integer(body, "n", 1, 1, MAX_N)) {
        throw unsupported("best_of", "other than n is not supported");
      }
    }
    JsonNode lp = body.get("logprobs");
    int logprobs = -1;
    if (lp != null && !lp.isNull()) {
      logprobs = integer(body, "logprobs", 0, 0, 5);
      requireFeature("logprobs", "logprobs");
    }
    List<int[]> prompts = prompts(body, "prompt");
    int longest = prompts.stream().mapToInt(p -> p.length).max().orElse(0);
    int maxTokens = maxTokens(body, longest, "prompt", "max_tokens");
    if (!body.has("max_tokens") || body.get("max_tokens").isNull()) {
      maxTokens = Math.min(maxTokens, 16); // OpenAI's default for completions
    }
    GenerationSpec spec =
        common(body, GenerationSpec.Kind.COMPLETION, prompts, maxTokens, logprobs, "max_tokens", null, OutputParsers.NONE);
    if (echo && logprobs >= 0) { // the prompt's log-probabilities too, as OpenAI's legacy API gives them
      spec = spec.withSampling(spec.sampling().withPromptLogprobs(Math.max(logprobs, spec.sampling().promptLogprobs())));
    }
    return beamSearch(body, spec.withEcho(echo));
  }

  /** {@code chat_template_kwargs}: the template variables a request sets (none of those its own parameters set), in order. */
  static Map<String, Object> templateKwargs(ObjectNode body) {
    Map<String, Object> kwargs = new LinkedHashMap<>();
    JsonNode kw = body.get("chat_template_kwargs");
    if (kw != null && !kw.isNull()) {
      if (!kw.isObject()) {
        throw typeError("chat_template_kwargs", "an object", kw);
      }
      kwargs.putAll(toJava(kw));
      for (String reserved : RESERVED_TEMPLATE_VARIABLES) {
        if (kwargs.containsKey(reserved)) {
          throw ApiException.invalid("chat_template_kwargs." + reserved,
              "'" + reserved + "' cannot be set through 'chat_template_kwargs'; it comes from the request's own parameters.");
        }
      }
    }
    return kwargs;
  }

  /**
   * An embeddings request ({@code POST /v1/embeddings}; {@link EmbeddingsRequest#parse}).
   *
   * @throws ApiException naming the field, for a model that serves no embeddings too
   */
  public EmbeddingSpec parseEmbeddings(ObjectNode body) {
    return EmbeddingsRequest.parse(this, model, body);
  }

  /**
   * vLLM's classification request ({@code POST /classify}; {@link EmbeddingsRequest#parseClassify}).
   *
   * @throws ApiException naming the field, for a model that is not a sequence classifier too
   */
  public ClassifySpec parseClassify(ObjectNode body) {
    return EmbeddingsRequest.parseClassify(this, model, body);
  }

  /**
   * vLLM's score request ({@code POST /score}, {@code /v1/score}; {@link ScoreRequest#parseScore}).
   *
   * @throws ApiException naming the field, for a model that serves no embeddings too
   */
  public ScoreSpec parseScore(ObjectNode body) {
    return ScoreRequest.parseScore(this, model, body);
  }

  /**
   * A rerank request ({@code POST /rerank}, {@code /v1/rerank}, {@code /v2/rerank}; {@link ScoreRequest#parseRerank}).
   *
   * @throws ApiException naming the field, for a model that serves no embeddings too
   */
  public ScoreSpec parseRerank(ObjectNode body) {
    return ScoreRequest.parseRerank(this, model, body);
  }

  private GenerationSpec common(ObjectNode body, GenerationSpec.Kind kind, List<int[]> prompts, int maxTokens, int logprobs,
      String maxTokensParam, StructuredOutput forcedCall, OutputParsers parsers) {
    int n = integer(body, "n", 1, 1, MAX_N);
    boolean unset = (!body.has("max_tokens") || body.get("max_tokens").isNull())
        && (!body.has("max_completion_tokens") || body.get("max_completion_tokens").isNull());
    if (n > 1 && unset) {
      maxTokens = Math.min(maxTokens, DEFAULT_TOKENS_FOR_ALL_CHOICES / n);
    }
    boolean stream = bool(body, "stream", false);
    boolean includeUsage = false;
    boolean continuousUsage = false; // vLLM's, which it honours only with include_usage
    JsonNode so = body.get("stream_options");
    if (so != null && !so.isNull()) {
      if (!stream) {
        throw ApiException.invalid(
            "stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
      }
      if (!so.isObject()) {
        throw typeError("stream_options", "an object", so);
      }
      includeUsage = bool((ObjectNode) so, "include_usage", false, "stream_options.include_usage");
      continuousUsage = bool((ObjectNode) so, "continuous_usage_stats", false, "stream_options.continuous_usage_stats") && includeUsage;
    }
    StructuredOutput constraint = StructuredOutputs.responseFormat(body.get("response_format"));
    StructuredOutputs.Requested vllm = StructuredOutputs.vllmStructuredOutputs(body);
    if (vllm != null) {
      if (constraint != null) {
        throw ApiException.invalid(vllm.param(), "'" + vllm.param() + "' cannot be combined with 'response_format'.");
      }
      if (forcedCall != null) {
        throw ApiException.invalid(vllm.param(), "'" + vllm.param() + "' cannot be combined with a forced 'tool_choice'.");
      }
      requireFeature(vllm.param(), "structured_outputs");
      constraint = vllm.constraint().withReasoning(parsers.reasoning().constraintAfter());
      StructuredOutputs.check(constraint, vllm.param(), maxTokens, maxTokensParam, model.tokenizer());
    } else if (constraint != null) {
      if (forcedCall != null) {
        throw ApiException.invalid("response_format", "'response_format' cannot be combined with a forced 'tool_choice'.");
      }
      requireFeature("response_format", "structured_outputs");
      String param = constraint.kind() == StructuredOutput.Kind.JSON_SCHEMA && constraint != StructuredOutput.JSON_OBJECT
          ? "response_format.json_schema.schema" : "response_format";
      constraint = constraint.withReasoning(parsers.reasoning().constraintAfter());
      StructuredOutputs.check(constraint, param, maxTokens, maxTokensParam, model.tokenizer());
    } else {
      constraint = forcedCall;
    }
    SamplingParams sampling = sampling(body).withLogprobs(logprobs).withLogitBias(logitBias(body))
        .withAllowedTokenIds(allowedTokenIds(body))
        .withBadWords(badWords(body));
    if (constraint != null && sampling.restrictsTokens()) {
      throw chosenByGrammar("allowed_token_ids");
    }
    if (constraint != null && !sampling.badWords().isEmpty()) {
      throw chosenByGrammar("bad_words");
    }
    List<String> stops = stopStrings(body);
    int[] stopIds = stopTokenIds(body);
    boolean ignoreEos = bool(body, "ignore_eos", false);
    if (ignoreEos && constraint != null) {
      throw endsWithItsValue("ignore_eos");
    }
    int minTokens = integer(body, "min_tokens", 0, 0, Integer.MAX_VALUE);
    if (minTokens > 0) {
      if (minTokens > maxTokens) {
        throw ApiException.invalid("min_tokens", "'min_tokens' (" + minTokens + ") must not be more than the output's budget, '"
            + maxTokensParam + "' (" + maxTokens + ").", "invalid_value");
      }
      if (constraint != null) {
        throw endsWithItsValue("min_tokens");
      }
      requireFeature("min_tokens", "min_tokens");
    }
    boolean skipSpecial = bool(body, "skip_special_tokens", true);
    ObjectNode options = tandem(body);
    boolean timing = options != null && bool(options, "timing", false, "tandem.timing");
    String pinned = pinnedWorker(body);
    String requested = body.get("model").asText(); // checked: the served model or one of its LoRA adapters
    return new GenerationSpec(
        kind, requested, prompts, n, sampling, new StopConditions(maxTokens, stopIds, ignoreEos, minTokens), stops, skipSpecial,
        stream, includeUsage, timing, pinned, constraint, parsers)
        .withLora(requested.equals(model.name()) ? null : requested)
        .withIncludeStopString(bool(body, "include_stop_str_in_output", false))
        .withTokenIds(bool(body, "return_token_ids", false), bool(body, "return_tokens_as_token_ids", false))
        .withPriority(priority(body))
        .withCacheSalt(cacheSalt(body))
        .withContinuousUsage(continuousUsage)
        .withPromptLogprobs(promptLogprobs(body, stream))
        .withRequestId(requestId(body));
  }

  /** Tandem's own options ({@code "tandem": {...}}), or null when the request has none. */
  private static ObjectNode tandem(ObjectNode body) {
    JsonNode t = body.get("tandem");
    if (t == null || t.isNull()) {
      return null;
    }
    if (!t.isObject()) {
      throw typeError("tandem", "an object", t);
    }
    return (ObjectNode) t;
  }

  /** {@code tandem.worker_id}: the worker the request must run on, or null. */
  static String pinnedWorker(ObjectNode body) {
    ObjectNode t = tandem(body);
    JsonNode w = t == null ? null : t.get("worker_id");
    if (w == null || w.isNull()) {
      return null;
    }
    if (!w.isTextual()) {
      throw typeError("tandem.worker_id", "a string", w);
    }
    return w.asText();
  }

  /**
   * vLLM's {@code prompt_logprobs}: how many likeliest alternatives to give beside each prompt
   * token's own log-probability and rank (-1 when not set); as in vLLM, not on a stream.
   */
  private int promptLogprobs(ObjectNode body, boolean stream) {
    JsonNode v = body.get("prompt_logprobs");
    if (v == null || v.isNull()) {
      return -1;
    }
    int top = integer(body, "prompt_logprobs", 0, 0, SamplingParams.MAX_LOGPROBS);
    if (stream) {
      throw ApiException.invalid("prompt_logprobs", "'prompt_logprobs' are not available when 'stream' is true.");
    }
    requireFeature("prompt_logprobs", "logprobs");
    return top;
  }

  /**
   * vLLM's {@code cache_salt}: a non-empty string (null when not set) that only requests carrying
   * the same one share cached prompt blocks with — refused where a worker's engine would not honour it.
   */
  private String cacheSalt(ObjectNode body) {
    JsonNode v = body.get("cache_salt");
    if (v == null || v.isNull()) {
      return null;
    }
    if (!v.isTextual()) {
      throw typeError("cache_salt", "a string", v);
    }
    if (v.asText().isEmpty()) {
      throw ApiException.invalid("cache_salt", "'cache_salt' must be a non-empty string if provided.", "invalid_value");
    }
    requireFeature("cache_salt", "cache_salt");
    return v.asText();
  }

  /**
   * vLLM's {@code echo} on chat: the final message's text when the reply is in its role — here
   * always the assistant's, so an assistant message (with {@code continue_final_message}, the one
   * being continued); with a generation prompt after another role, nothing, as in vLLM.
   */
  private static String echoedMessage(ObjectNode body, List<Map<String, Object>> messages, boolean addGenerationPrompt) {
    if (!bool(body, "echo", false)) {
      return null;
    }
    Map<String, Object> last = messages.getLast();
    if ("assistant".equals(last.get("role"))) {
      return (String) last.get("content");
    }
    if (!addGenerationPrompt) {
      throw unsupported("echo", "of a final '" + last.get("role") + "' message is not supported: Tandem replies as the assistant "
          + "(vLLM would reply in that message's role)");
    }
    return null;
  }

  /** vLLM's {@code priority} (any integer, lower first): only where the workers schedule by it. */
  int priority(ObjectNode body) {
    int p = integer(body, "priority", 0, Integer.MIN_VALUE, Integer.MAX_VALUE);
    if (p != 0 && !model.supports("priority")) {
      throw unsupported("priority", "needs workers that schedule by priority (start them with --scheduling-policy priority, as vLLM's); "
          + "these serve first come, first served");
    }
    return p;
  }

  /** OpenAI's {@code logit_bias}: token id (as a string key) → −100…100. */
  private Map<Integer, Float> logitBias(ObjectNode body) {
    JsonNode bias = body.get("logit_bias");
    if (bias == null || bias.isNull() || (bias.isObject() && bias.isEmpty())) {
      return Map.of();
    }
    if (!bias.isObject()) {
      throw typeError("logit_bias", "an object of token id → bias", bias);
    }
    if (bias.size() > MAX_LOGIT_BIAS) {
      throw ApiException.invalid("logit_bias", "At most " + MAX_LOGIT_BIAS + " tokens may be biased.");
    }
    requireFeature("logit_bias", "logit_bias");
    Map<Integer, Float> out = new LinkedHashMap<>();
    for (var it = bias.fields(); it.hasNext(); ) {
      var e = it.next();
      int id;
      try {
        id = Integer.parseInt(e.getKey());
      } catch (NumberFormatException x) {
        throw ApiException.invalid("logit_bias", "Invalid key in 'logit_bias': '" + e.getKey() + "' is not a token id.");
      }
      if (id < 0 || id >= model.vocabSize()) {
        throw ApiException.invalid("logit_bias", "Invalid key in 'logit_bias': token id " + id + " is not in the vocabulary [0, "
            + model.vocabSize() + ").");
      }
      JsonNode v = e.getValue();
      if (!v.isNumber() || v.asDouble() < -100 || v.asDouble() > 100 || Double.isNaN(v.asDouble())) {
        throw ApiException.invalid("logit_bias", "Invalid value in 'logit_bias' for token " + id + ": expected a number from -100 to 100.");
      }
      out.put(id, (float) v.asDouble());
    }
    return out;
  }

  private SamplingParams sampling(ObjectNode body) {
    SamplingParams d = model.samplingDefaults();
    float temperature = number(body, "temperature", d.temperature(), 0.0, 2.0);
    float topP = number(body, "top_p", d.topP(), Double.MIN_VALUE, 1.0);
    int topK = integer(body, "top_k", d.topK(), -1, Integer.MAX_VALUE);
    float minP = number(body, "min_p", d.minP(), 0.0, 1.0);
    float presence = number(body, "presence_penalty", d.presencePenalty(), -2.0, 2.0);
    float frequency = number(body, "frequency_penalty", d.frequencyPenalty(), -2.0, 2.0);
    float repetition = number(body, "repetition_penalty", d.repetitionPenalty(), Double.MIN_VALUE, 2.0);
    OptionalLong seed = d.seed();
    JsonNode s = body.get("seed");
    if (s != null && !s.isNull()) {
      if (!s.isIntegralNumber() || !s.canConvertToLong()) {
        throw typeError("seed", "an integer", s);
      }
      seed = OptionalLong.of(s.asLong());
      requireFeature("seed", "seed");
    }
    if (temperature > 0 && topP < 1f) {
      requireFeature("top_p", "top_p");
    }
    if (temperature > 0 && topK > 0) {
      requireFeature("top_k", "top_k");
    }
    if (minP > 0f) {
      requireFeature("min_p", "min_p");
    }
    if (presence != 0f) {
      requireFeature("presence_penalty", "presence_penalty");
    }
    if (frequency != 0f) {
      requireFeature("frequency_penalty", "frequency_penalty");
    }
    if (repetition != SamplingParams.NO_REPETITION_PENALTY) {
      requireFeature("repetition_penalty", "repetition_penalty");
    }
    return new SamplingParams(temperature, topP, topK, minP, seed, presence, frequency, repetition, SamplingParams.NO_LOGPROBS);
  }

  private void requireFeature(String param, String feature) {
    if (!model.supports(feature)) {
      throw new ApiException(
          400,
          "'" + param + "' is not supported by this deployment's engine (" + model.engine() + ").",
          "invalid_request_error",
          param,
          "unsupported_parameter");
    }
  }

  /** {@code param} would choose tokens a structured output's grammar chooses. */
  private static ApiException chosenByGrammar(String param) {
    return ApiException.invalid(param, "'" + param + "' cannot be combined with structured outputs: the output's grammar chooses its tokens.");
  }

  /** {@code param} would hold a structured output past its end. */
  private static ApiException endsWithItsValue(String param) {
    return ApiException.invalid(param, "'" + param + "' cannot be combined with structured outputs: the output ends when its value is complete.");
  }

  static ApiException unsupported(String param, String what) {
    return new ApiException(
        400, "'" + param + "' " + what + ".", "invalid_request_error", param, "unsupported_parameter");
  }

  /** What chat and completion requests check first: the model named, then vLLM's parameters Tandem does not honour. */
  private void checkModelAndParameters(ObjectNode body) {
    checkModel(body);
    NotHonoured.refuse(body);
  }

  /** A generation request to a model that only pools (no LM head, or a sequence classifier's): a 400 saying what it serves. */
  private void refuseGenerationIfPoolingOnly(ObjectNode body) {
    if (model.supports("pooling_only")) {
      checkModel(body);
      throw new ApiException(400, model.supports(ScoreRequest.CROSS_ENCODER) || model.supports(EmbeddingsRequest.CLASSIFY)
          ? "This model is a sequence classifier (its checkpoint's score.weight): it serves /score, /rerank or /classify, not generation."
          : model.supports(EmbeddingsRequest.ENCODER)
          ? "This model is an encoder (BERT-style, no language-model head): it serves /v1/embeddings, /score and /rerank, not generation."
          : "This model has no language-model head (its checkpoint has no lm_head.weight and does not tie the embeddings): it serves "
              + "/v1/embeddings, /score and /rerank, not generation.", "invalid_request_error", "model", "unsupported_model");
    }
  }

  void checkModel(ObjectNode body) {
    JsonNode m = body.get("model");
    if (m == null || m.isNull()) {
      throw ApiException.invalid("model", "You must provide a model parameter.", "missing_required_parameter");
    }
    if (!m.isTextual()) {
      throw typeError("model", "a string", m);
    }
    if (!model.serves(m.asText())) {
      throw new ApiException(
          404,
          "The model `" + m.asText() + "` does not exist. This server serves " + model.servedNames() + ".",
          "invalid_request_error",
          "model",
          "model_not_found");
    }
  }

  private int maxTokens(ObjectNode body, int promptTokens, String promptParam, String param) {
    int context = model.maxContextLength();
    if (promptTokens >= context) {
      throw ApiException.invalid(
          promptParam,
          "This model's maximum context length is "
              + context
              + " tokens. However, your request has "
              + promptTokens
              + " input tokens. Please reduce the length of the input.",
          "context_length_exceeded");
    }
    JsonNode v = body.get(param);
    if (v == null || v.isNull()) {
      return context - promptTokens;
    }
    if (!v.isIntegralNumber() || !v.canConvertToInt()) {
      throw typeError(param, "an integer", v);
    }
    int max = v.asInt();
    if (max < 1) {
      throw ApiException.invalid(param, "Invalid '" + param + "': integer below minimum value. Expected a value >= 1, but got " + max + " instead.", "integer_below_min_value");
    }
    if ((long) promptTokens + max > context) {
      throw ApiException.invalid(
          param,
          "This model's maximum context length is "
              + context
              + " tokens. However, you requested "
              + ((long) promptTokens + max)
              + " tokens ("
              + promptTokens
              + " in the input, "
              + max
              + " in the completion). Please reduce the length of the input or the completion.",
          "context_length_exceeded");
    }
    return max;
  }

  private List<Map<String, Object>> messages(ObjectNode body) {
    JsonNode ms = body.get("messages");
    if (ms == null || ms.isNull()) {
      throw ApiException.invalid("messages", "Missing required parameter: 'messages'.", "missing_required_parameter");
    }
    if (!ms.isArray()) {
      throw typeError("messages", "an array", ms);
    }
    if (ms.isEmpty()) {
      throw ApiException.invalid("messages", "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", "empty_array");
    }
    if (ms.size() > MAX_MESSAGES) {
      throw ApiException.invalid("messages", "Invalid 'messages': at most " + MAX_MESSAGES + " messages, got " + ms.size() + ".");
    }
    List<Map<String, Object>> out = new ArrayList<>();
    for (int i = 0; i < ms.size(); i++) {
      String at = "messages[" + i + "]";
      JsonNode m = ms.get(i);
      if (!m.isObject()) {
        throw typeError(at, "an object", m);
      }
      JsonNode role = m.get("role");
      if (role == null || !role.isTextual() || !ROLES.contains(role.asText())) {
        throw ApiException.invalid(at + ".role", "Invalid value for '" + at + ".role': expected one of system, developer, user, assistant, tool.");
      }
      JsonNode calls = m.get("tool_calls");
      if (calls != null && !calls.isNull()) {
        if (!role.asText().equals("assistant")) {
          throw ApiException.invalid(at + ".tool_calls", "Only assistant messages carry 'tool_calls'.");
        }
        if (!calls.isArray()) {
          throw typeError(at + ".tool_calls", "an array", calls);
        }
        for (int k = 0; k < calls.size(); k++) {
          JsonNode f = calls.get(k).path("function");
          if (!f.path("name").isTextual() || !(f.path("arguments").isTextual() || f.path("arguments").isObject())) {
            throw ApiException.invalid(at + ".tool_calls[" + k + "]",
                "Each tool call needs a function with a 'name' and its 'arguments' (a JSON string).");
          }
        }
      }
      Map<String, Object> message = toJava(m);
      if (role.asText().equals("developer")) {
        message.put("role", "system");
      }
      JsonNode content = m.get("content");
      if (content == null || content.isNull()) {
        if (!role.asText().equals("assistant") || !m.has("tool_calls")) {
          throw ApiException.invalid(at + ".content", "Missing content in '" + at + "'.");
        }
        message.put("content", "");
      } else if (content.isArray()) {
        StringBuilder text = new StringBuilder();
        for (int p = 0; p < content.size(); p++) {
          JsonNode part = content.get(p);
          if (!"text".equals(part.path("type").asText()) || !part.path("text").isTextual()) {
            throw unsupported(at + ".content[" + p + "]", "of type '" + part.path("type").asText() + "' is not supported; only text parts are");
          }
          text.append(part.get("text").asText());
        }
        message.put("content", text.toString());
      } else if (!content.isTextual()) {
        throw typeError(at + ".content", "a string or an array of content parts", content);
      }
      out.add(message);
    }
    return out;
  }

  private List<Map<String, Object>> tools(ObjectNode body) {
    JsonNode ts = body.get("tools");
    if (ts == null || ts.isNull()) {
      return null;
    }
    if (!ts.isArray()) {
      throw typeError("tools", "an array", ts);
    }
    List<Map<String, Object>> out = new ArrayList<>();
    for (int i = 0; i < ts.size(); i++) {
      JsonNode t = ts.get(i);
      if (!t.isObject() || !t.path("function").path("name").isTextual()) {
        throw ApiException.invalid("tools[" + i + "]", "Each tool needs a function with a name.");
      }
      if (t.has("type") && !"function".equals(t.get("type").asText())) {
        throw ApiException.invalid("tools[" + i + "].type", "Invalid value for 'tools[" + i + "].type': only 'function' tools are supported.");
      }
      JsonNode params = t.get("function").get("parameters");
      if (params != null && !params.isNull()) {
        if (!params.isObject()) {
          throw typeError("tools[" + i + "].function.parameters", "an object (a JSON schema)", params);
        }
        SchemaSanity.check(params, "tools[" + i + "].function.parameters");
      }
      out.add(toJava(t));
    }
    return out;
  }

  /** Completions' {@code prompt} (or embeddings' {@code input}, {@code param}): tokenized, truncated as the request asks. */
  List<int[]> prompts(ObjectNode body, String param) {
    JsonNode p = body.get(param);
    if (p == null || p.isNull()) {
      throw ApiException.invalid(param, "Missing required parameter: '" + param + "'.", "missing_required_parameter");
    }
    int keep = truncation(body);
    boolean special = bool(body, "add_special_tokens", true); // vLLM's: a text prompt's BOS and the like, as the tokenizer adds them
    List<int[]> out = new ArrayList<>();
    if (p.isTextual()) {
      out.add(encode(p.asText(), param, keep, special));
    } else if (p.isArray() && !p.isEmpty() && p.get(0).isIntegralNumber()) {
      out.add(tokenIds(p, param));
    } else if (p.isArray() && !p.isEmpty()) {
      for (int i = 0; i < p.size(); i++) {
        JsonNode e = p.get(i);
        String at = param + "[" + i + "]";
        if (e.isTextual()) {
          out.add(encode(e.asText(), at, keep, special));
        } else if (e.isArray()) {
          out.add(tokenIds(e, at));
        } else {
          throw typeError(at, "a string or an array of token ids", e);
        }
      }
    } else {
      throw typeError(param, "a non-empty string, array of strings, or array of token ids", p);
    }
    out.replaceAll(ids -> truncated(ids, keep));
    return out;
  }

  /**
   * vLLM's {@code truncate_prompt_tokens}: how many of the prompt's last tokens to keep (left
   * truncation, after the chat template and tokenizer), 0 when unset; -1 asks for the context
   * window. Above the window, or 0, is a 400: vLLM refuses the first too.
   */
  int truncation(ObjectNode body) {
    JsonNode v = body.get(TRUNCATE_PROMPT_TOKENS);
    if (v == null || v.isNull()) {
      return 0;
    }
    if (!v.isIntegralNumber() || !v.canConvertToInt()) {
      throw typeError(TRUNCATE_PROMPT_TOKENS, "an integer", v);
    }
    int k = v.asInt();
    int context = model.maxContextLength();
    if (k == -1) {
      return context;
    }
    if (k < 1) {
      throw ApiException.invalid(TRUNCATE_PROMPT_TOKENS,
          "Invalid '" + TRUNCATE_PROMPT_TOKENS + "': " + k + "; expected -1 (the context window) or a number of tokens from 1.", "invalid_value");
    }
    if (k > context) {
      throw ApiException.invalid(TRUNCATE_PROMPT_TOKENS, TRUNCATE_PROMPT_TOKENS + " value (" + k + ") is greater than this model's"
          + " maximum context length (" + context + "). Please select a smaller truncation size.", "invalid_value");
    }
    return k;
  }

  /** The last {@code keep} tokens of {@code ids} (all of them when {@code keep} is 0 or not fewer). */
  static int[] truncated(int[] ids, int keep) {
    return keep == 0 || ids.length <= keep ? ids : Arrays.copyOfRange(ids, ids.length - keep, ids.length);
  }

  /**
   * Refuses a body whose prompt text cannot fit the context window, by a streaming scan that
   * builds nothing: the characters of {@code messages[].content} (and their text parts), of
   * {@code prompt} strings, or of every string under a Responses request's {@code input} and
   * {@code instructions} are counted as they go by, and the scan stops as soon as they are
   * too many — unless the body asks to truncate its prompt ({@code truncate_prompt_tokens}), which
   * the scan then reads on to find. Used on large bodies before they are parsed; a body that is not
   * JSON is left to {@link #parseBody} to refuse.
   */
  public void refuseIfPromptCannotFit(byte[] body) {
    long bound = (long) model.maxContextLength() * Math.max(1, model.tokenizer().longestTokenChars());
    long chars = 0;
    ApiException tooLong = null;
    try (com.fasterxml.jackson.core.JsonParser p = JSON.getFactory().createParser(body)) {
      int depth = 0;
      String top = null;
      for (var t = p.nextToken(); t != null; t = p.nextToken()) {
        switch (t) {
          case START_OBJECT, START_ARRAY -> depth++;
          case END_OBJECT, END_ARRAY -> depth--;
          case FIELD_NAME -> {
            if (depth == 1) {
              top = p.currentName();
              if (TRUNCATE_PROMPT_TOKENS.equals(top)) {
                return; // the prompt may be longer than the window: parsing checks what is kept
              }
            }
          }
          case VALUE_STRING -> {
            String field = p.currentName();
            boolean prompt = "prompt".equals(top) || "input".equals(top) || "instructions".equals(top) // the last two: /v1/responses
                || ("messages".equals(top) && ("content".equals(field) || "text".equals(field)));
            if (prompt && tooLong == null) {
              chars += p.getTextLength();
              if (chars > bound) {
                try {
                  checkLengthBeforeTokenizing(chars, "messages".equals(top) ? "messages" : "prompt".equals(top) ? "prompt" : "input");
                } catch (ApiException e) {
                  tooLong = e; // refused at the end, unless the body asks for truncation after its prompt
                }
              }
            }
          }
          default -> { }
        }
      }
    } catch (java.io.IOException e) {
      // not JSON: parseBody says why
    }
    if (tooLong != null) {
      throw tooLong;
    }
  }

  /**
   * Refuses {@code chars} characters of prompt text in {@code param} when they cannot fit the
   * context window whatever they say (for {@link PromptTextCounter}'s count as a body arrives).
   *
   * @throws ApiException 400 {@code context_length_exceeded}
   */
  public void refuseIfCannotFit(long chars, String param) {
    checkLengthBeforeTokenizing(chars, param);
  }

  /**
   * Refuses a prompt that cannot fit before rendering or tokenizing it (both cost time in its
   * length): every token stands for at most {@code longestTokenChars} characters.
   */
  private void checkLengthBeforeTokenizing(long chars, String param) {
    if (chars < model.maxContextLength()) {
      return; // fewer characters than the window has tokens: it may fit (every token is at least one)
    }
    long atLeast = chars / Math.max(1, model.tokenizer().longestTokenChars());
    if (atLeast >= model.maxContextLength()) {
      throw ApiException.invalid(param, "This model's maximum context length is " + model.maxContextLength()
          + " tokens. However, your request has at least " + atLeast + " input tokens (" + chars
          + " characters). Please reduce the length of the input.", "context_length_exceeded");
    }
  }

  /** Characters of text in the messages (a lower bound on what the template renders). */
  private static long contentChars(ObjectNode body) {
    long n = 0;
    for (JsonNode m : body.path("messages")) {
      JsonNode c = m.get("content");
      if (c != null && c.isTextual()) {
        n += c.asText().length();
      } else if (c != null && c.isArray()) {
        for (JsonNode part : c) {
          n += part.path("text").asText("").length();
        }
      }
    }
    return n;
  }

  private int[] encode(String text, String param, int keep, boolean addSpecialTokens) {
    if (keep == 0) { // a prompt to truncate may be longer than the window
      checkLengthBeforeTokenizing(text.length(), param);
    }
    int[] ids = model.tokenizer().encode(text, addSpecialTokens);
    if (ids.length == 0) {
      throw ApiException.invalid(param, "The prompt is empty.");
    }
    return ids;
  }

  private int[] tokenIds(JsonNode array, String param) {
    if (array.isEmpty()) {
      throw ApiException.invalid(param, "The prompt is empty.");
    }
    int[] ids = new int[array.size()];
    for (int i = 0; i < ids.length; i++) {
      JsonNode t = array.get(i);
      if (!t.isIntegralNumber() || t.asLong() < 0 || t.asLong() >= model.vocabSize()) {
        throw ApiException.invalid(param, "Token id " + t + " at position " + i + " is not in the vocabulary [0, " + model.vocabSize() + ").");
      }
      ids[i] = t.asInt();
    }
    return ids;
  }

  private List<String> stopStrings(ObjectNode body) {
    JsonNode s = body.get("stop");
    if (s == null || s.isNull()) {
      return List.of();
    }
    List<String> out = new ArrayList<>();
    if (s.isTextual()) {
      out.add(s.asText());
    } else if (s.isArray()) {
      for (JsonNode e : s) {
        if (!e.isTextual()) {
          throw typeError("stop", "a string or an array of strings", s);
        }
        out.add(e.asText());
      }
    } else {
      throw typeError("stop", "a string or an array of strings", s);
    }
    if (out.size() > MAX_STOP_STRINGS) {
      throw ApiException.invalid("stop", "At most " + MAX_STOP_STRINGS + " stop sequences are allowed.");
    }
    if (out.stream().anyMatch(String::isEmpty)) {
      throw ApiException.invalid("stop", "Stop sequences must not be empty.");
    }
    return out;
  }

  /**
   * vLLM's {@code bad_words}: strings the output may not hold, each as its tokens at the start of
   * the text and, where a leading space makes other tokens of the same count, after a space.
   */
  private List<List<Integer>> badWords(ObjectNode body) {
    JsonNode v = body.get("bad_words");
    if (v == null || v.isNull() || (v.isArray() && v.isEmpty())) {
      return List.of();
    }
    if (!v.isArray()) {
      throw typeError("bad_words", "an array of strings", v);
    }
    if (v.size() > MAX_BAD_WORDS) {
      throw ApiException.invalid("bad_words", "At most " + MAX_BAD_WORDS + " bad words may be given.");
    }
    requireFeature("bad_words", "bad_words");
    List<List<Integer>> out = new ArrayList<>();
    for (int i = 0; i < v.size(); i++) {
      JsonNode w = v.get(i);
      String param = "bad_words[" + i + "]";
      if (!w.isTextual() || w.asText().isBlank()) {
        throw ApiException.invalid(param, "'" + param + "' must be a non-empty string.");
      }
      String word = w.asText().stripLeading();
      int[] plain = model.tokenizer().encode(word, false);
      int[] spaced = model.tokenizer().encode(" " + word, false);
      if (plain.length == 0 || spaced.length == 0) {
        throw ApiException.invalid(param, "'" + param + "' has no tokens under this model's tokenizer.");
      }
      out.add(java.util.Arrays.stream(plain).boxed().toList());
      if (spaced.length == plain.length && spaced[0] != plain[0]) {
        out.add(java.util.Arrays.stream(spaced).boxed().toList());
      }
    }
    return out;
  }

  /** vLLM's {@code allowed_token_ids}: the only tokens the output may hold (empty: any). */
  private List<Integer> allowedTokenIds(ObjectNode body) {
    JsonNode a = body.get("allowed_token_ids");
    if (a == null || a.isNull()) {
      return List.of();
    }
    if (!a.isArray()) {
      throw typeError("allowed_token_ids", "an array of token ids", a);
    }
    if (a.isEmpty()) {
      throw ApiException.invalid("allowed_token_ids", "'allowed_token_ids' must hold at least one token id (leave it out to allow any).",
          "empty_array");
    }
    requireFeature("allowed_token_ids", "allowed_token_ids");
    List<Integer> ids = new ArrayList<>();
    for (int id : tokenIds(a, "allowed_token_ids")) {
      ids.add(id);
    }
    return ids;
  }

  private int[] stopTokenIds(ObjectNode body) {
    JsonNode s = body.get("stop_token_ids");
    if (s == null || s.isNull() || (s.isArray() && s.isEmpty())) {
      return new int[0];
    }
    if (!s.isArray()) {
      throw typeError("stop_token_ids", "an array of token ids", s);
    }
    requireFeature("stop_token_ids", "stop_token_ids");
    return tokenIds(s, "stop_token_ids");
  }

  // ---- typed field access with OpenAI-style errors ----

  static ApiException typeError(String param, String expected, JsonNode got) {
    return ApiException.invalid(
        param,
        "Invalid type for '" + param + "': expected " + expected + ", but got " + describe(got) + " instead.",
        "invalid_type");
  }

  private static String describe(JsonNode n) {
    if (n.isTextual()) {
      return "a string";
    }
    if (n.isBoolean()) {
      return "a boolean";
    }
    if (n.isNumber()) {
      return n.isIntegralNumber() ? "an integer" : "a decimal";
    }
    if (n.isArray()) {
      return "an array";
    }
    if (n.isObject()) {
      return "an object";
    }
    return "null";
  }

  static boolean bool(ObjectNode body, String field, boolean dflt) {
    return bool(body, field, dflt, field);
  }

  private static boolean bool(ObjectNode body, String field, boolean dflt, String param) {
    JsonNode v = body.get(field);
    if (v == null || v.isNull()) {
      return dflt;
    }
    if (!v.isBoolean()) {
      throw typeError(param, "a boolean", v);
    }
    return v.asBoolean();
  }

  private static float number(ObjectNode body, String field, double dflt, double min, double max) {
    JsonNode v = body.get(field);
    if (v == null || v.isNull()) {
      return (float) dflt;
    }
    if (!v.isNumber()) {
      throw typeError(field, "a number", v);
    }
    double d = v.asDouble();
    if (d < min || d > max || Double.isNaN(d)) {
      String lo = min == Double.MIN_VALUE ? "> 0" : ">= " + min;
      throw ApiException.invalid(
          field, "Invalid '" + field + "': " + d + " is out of range; expected a value " + lo + " and <= " + max + ".", "invalid_value");
    }
    return (float) d;
  }

  static int integer(ObjectNode body, String field, int dflt, int min, int max) {
    JsonNode v = body.get(field);
    if (v == null || v.isNull()) {
      return dflt;
    }
    if (!v.isIntegralNumber() || !v.canConvertToInt()) {
      throw typeError(field, "an integer", v);
    }
    int i = v.asInt();
    if (i < min || i > max) {
      throw ApiException.invalid(
          field, "Invalid '" + field + "': " + i + " is out of range; expected a value between " + min + " and " + max + ".", "invalid_value");
    }
    return i;
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> toJava(JsonNode node) {
    return JSON.convertValue(node, LinkedHashMap.class);
  }

}
