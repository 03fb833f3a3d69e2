package dev.tandem.frontend.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.common.TokenChunk;
import dev.tandem.common.TokenLogprob;
import dev.tandem.frontend.openai.GenerationSpec;
import dev.tandem.frontend.openai.ResponseJson;
import dev.tandem.frontend.parse.ReasoningSplitter;
import dev.tandem.frontend.parse.ToolCall;
import dev.tandem.frontend.parse.ToolCallExtractor;
import dev.tandem.frontend.text.IncrementalDetokenizer;
import dev.tandem.frontend.text.StopStrings;
import dev.tandem.frontend.text.TextTokenizer;
import dev.tandem.router.Generation;
import dev.tandem.router.SplitPolicy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One generated sequence of a request: its generation on a worker, the text so far (detokenized
 * incrementally, checked for stop strings, split into reasoning, content and tool calls), token counts, log-probabilities not yet sent, and what
 * the worker said about serving it (for usage and timing).
 *
 * <p>Threading: the channel's event loop only.
 */
final class ChoiceStream {
  final int index;
  final int[] prompt;
  private final TextTokenizer tokenizer;
  private final IncrementalDetokenizer detokenizer;
  private final StopStrings stops;
  final StringBuilder text = new StringBuilder(); // content (non-streaming)
  final StringBuilder reasoning = new StringBuilder(); // non-streaming
  final List<ToolCall> toolCalls = new ArrayList<>();
  private final ReasoningSplitter reasoningSplitter;
  private final ToolCallExtractor toolCallExtractor;
  Generation call;
  String finishReason;
  int tokens;
  /** vLLM's {@code min_tokens}: a stop string ending within the first this many tokens stops nothing. */
  private final int minTokens;
  final it.unimi.dsi.fastutil.ints.IntArrayList generated = new it.unimi.dsi.fastutil.ints.IntArrayList(); // for migration
  int migrations; // times this choice moved to another worker
  int attempt; // which generation's callbacks count (older ones are ignored)
  int promptTokens;
  int cachedTokens;
  String workerId;
  long workerTtftUs = -1;
  String prefillWorkerId;
  String prefillFallback;
  SplitPolicy.Decision splitDecision;
  long kvTransferUs = -1;
  long kvTransferBytes;
  long kvExposedUs;
  long lastTokenNanos = -1;
  int predictedOverlapBlocks;
  double predictedCost = Double.NaN;
  String costName = "";
  final List<ResponseJson.LogprobEntry> logprobs = new ArrayList<>(); // not yet sent (stream) or all
  private int logprobTextOffset; // completions: text offset of the first entry in logprobs
  /** vLLM's {@code return_tokens_as_token_ids}: log-probabilities name each token {@code token_id:N}. */
  private final boolean tokensAsIds;
  private int tokenIdsSent; // stream, return_token_ids: generated[0, tokenIdsSent) went out
  private boolean promptIdsSent; // stream, completions' return_token_ids: the prompt's ids went out
  /** The prompt's log-probabilities as the worker sent them (position i: token i + 1's), once they came; null before. */
  TokenLogprob[] promptScores;
  private final int echoTop; // completions' echo with logprobs: alternatives per prompt token

  ChoiceStream(int index, int[] prompt, TextTokenizer tokenizer, GenerationSpec spec) {
    this.index = index;
    this.prompt = prompt;
    this.tokenizer = tokenizer;
    this.detokenizer = new IncrementalDetokenizer(tokenizer, tail(prompt), spec.skipSpecialTokens(),
        spec.parsers().toolCalls().markers().stream().mapToInt(tokenizer::specialTokenId).filter(id -> id >= 0).toArray());
    this.stops = new StopStrings(spec.stopStrings(), spec.includeStopString());
    this.minTokens = spec.stop().minTokens();
    this.promptTokens = prompt.length;
    this.tokensAsIds = spec.output().tokensAsIds();
    this.echoTop = Math.max(0, spec.logprobs());
    this.reasoningSplitter = new ReasoningSplitter(spec.parsers().reasoning());
    this.toolCallExtractor = new ToolCallExtractor(spec.parsers().toolCalls());
  }

  /** A piece of output text divided into reasoning, content and complete tool calls. */
  record Piece(String reasoning, String content, List<ToolCall> toolCalls) {
    boolean isEmpty() {
      return reasoning.isEmpty() && content.isEmpty() && toolCalls.isEmpty();
    }
  }

  /** Divides the next text; with {@code last}, also what the parsers held back. */
  Piece parse(String text, boolean last) {
    ReasoningSplitter.Split split = reasoningSplitter.add(text);
    ToolCallExtractor.Extracted x = toolCallExtractor.add(split.content());
    if (!last) {
      return new Piece(split.reasoning(), x.content(), x.calls());
    }
    ReasoningSplitter.Split end = reasoningSplitter.finish();
    ToolCallExtractor.Extracted more = toolCallExtractor.add(end.content());
    ToolCallExtractor.Extracted rest = toolCallExtractor.finish();
    List<ToolCall> calls = new ArrayList<>(x.calls());
    calls.addAll(more.calls());
    calls.addAll(rest.calls());
    return new Piece(split.reasoning() + end.reasoning(), x.content() + more.content() + rest.content(), calls);
  }

  /** The prompt as text (completions' {@code echo}). */
  String promptText() {
    return tokenizer.decode(prompt, false);
  }

  /** True once the output held a tool call (finish_reason tool_calls). */
  boolean calledTools() {
    return toolCallExtractor.calls() > 0;
  }

  private static int[] tail(int[] prompt) {
    return Arrays.copyOfRange(prompt, Math.max(0, prompt.length - 6), prompt.length);
  }

  boolean finished() {
    return finishReason != null;
  }

  /** Takes what the first chunk says about who served the request; true if it fell back to a local prefill. */
  boolean origin(TokenChunk.Origin o) {
    workerId = o.workerId();
    workerTtftUs = o.workerTtftMicros();
    if (o.split()) {
      prefillWorkerId = o.prefillWorkerId();
      kvTransferUs = o.kvTransferMicros();
      kvTransferBytes = o.kvTransferBytes();
      kvExposedUs = o.kvExposedMicros();
    }
    if (o.fellBack()) {
      prefillFallback = o.prefillFallback();
      return true;
    }
    return false;
  }

  /**
   * Puts the echoed prompt's log-probabilities first: its first token has none, each later one
   * its own given the tokens before it.
   */
  void promptLogprobs(TokenLogprob[] prompt) {
    List<ResponseJson.LogprobEntry> entries = new ArrayList<>();
    entries.add(new ResponseJson.LogprobEntry(tokenText(this.prompt[0]), null, null));
    for (int i = 0; i < prompt.length && i + 1 < this.prompt.length; i++) {
      entries.add(logprobEntry(this.prompt[i + 1], prompt[i], echoTop));
    }
    logprobs.addAll(0, entries);
  }

  /**
   * vLLM's {@code prompt_logprobs}: null for the first prompt token, then for each later one an
   * object keyed by token id — the prompt's token and the {@code top} likeliest — each with its
   * {@code logprob}, {@code rank} (1: the likeliest) and {@code decoded_token}.
   */
  com.fasterxml.jackson.databind.node.ArrayNode promptLogprobsJson(int top) {
    var out = ResponseJson.JSON.createArrayNode();
    out.addNull();
    for (int i = 0; promptScores != null && i < promptScores.length && i + 1 < prompt.length; i++) {
      TokenLogprob lp = promptScores[i];
      ObjectNode position = out.addObject();
      scored(position, prompt[i + 1], lp.logprob(), lp.rank());
      for (int k = 0; k < Math.min(top, lp.topTokenIds().length); k++) {
        if (!position.has(Integer.toString(lp.topTokenIds()[k]))) {
          scored(position, lp.topTokenIds()[k], lp.topLogprobs()[k], k + 1);
        }
      }
    }
    return out;
  }

  private void scored(ObjectNode position, int token, float logprob, int rank) {
    ObjectNode e = position.putObject(Integer.toString(token));
    e.put("logprob", logprob);
    if (rank > 0) {
      e.put("rank", rank);
    } else {
      e.putNull("rank");
    }
    e.put("decoded_token", tokenizer.decode(new int[] {token}, false));
  }

  /** One token's text, after stop strings (empty while a stop string may be starting). */
  String token(int token, TokenLogprob logprob) {
    if (logprob != null) {
      logprobs.add(logprobEntry(token, logprob, logprob.topTokenIds().length));
    }
    tokens++;
    generated.add(token);
    return stops.add(detokenizer.add(token), tokens >= minTokens);
  }

  /** True once a stop string matched: the sequence ends with the text before it. */
  boolean stopped() {
    return stops.stopped();
  }

  /** The text held back at the end of the sequence. */
  String flush() {
    return stops.add(detokenizer.flush(), tokens >= minTokens) + stops.flush();
  }

  /** Attaches the log-probabilities not yet sent to a streamed chunk's choice. */
  void attachLogprobs(GenerationSpec.Kind kind, ObjectNode chunk) {
    if (logprobs.isEmpty()) {
      return;
    }
    ((ObjectNode) chunk.get("choices").get(0)).set("logprobs", ResponseJson.logprobs(kind, logprobs, logprobTextOffset));
    for (ResponseJson.LogprobEntry e : logprobs) {
      logprobTextOffset += e.token().length();
    }
    logprobs.clear();
  }

  /**
   * vLLM's {@code return_token_ids} on a streamed chunk's choice: the ids of the tokens generated
   * since the last chunk that carried them (the text of some may still be held back, by a stop
   * string that may be starting or a parser), and on a completion choice's first chunk its prompt's.
   */
  void attachTokenIds(GenerationSpec.Kind kind, ObjectNode chunk) {
    ObjectNode choice = (ObjectNode) chunk.get("choices").get(0);
    if (kind == GenerationSpec.Kind.COMPLETION && !promptIdsSent) {
      promptIdsSent = true;
      ids(choice.putArray("prompt_token_ids"), prompt, prompt.length);
    }
    var ids = choice.putArray("token_ids");
    for (int i = tokenIdsSent; i < generated.size(); i++) {
      ids.add(generated.getInt(i));
    }
    tokenIdsSent = generated.size();
  }

  /** vLLM's {@code return_token_ids} on a whole response's choice: every generated token's id, and a completion's prompt's. */
  void putTokenIds(GenerationSpec.Kind kind, ObjectNode choice) {
    if (kind == GenerationSpec.Kind.COMPLETION) {
      ids(choice.putArray("prompt_token_ids"), prompt, prompt.length);
    }
    ids(choice.putArray("token_ids"), generated.elements(), generated.size());
  }

  static void ids(com.fasterxml.jackson.databind.node.ArrayNode to, int[] ids, int count) {
    for (int i = 0; i < count; i++) {
      to.add(ids[i]);
    }
  }

  private ResponseJson.LogprobEntry logprobEntry(int token, TokenLogprob lp, int alternatives) {
    List<ResponseJson.Alternative> top = new ArrayList<>();
    for (int i = 0; i < Math.min(alternatives, lp.topTokenIds().length); i++) {
      top.add(new ResponseJson.Alternative(tokenText(lp.topTokenIds()[i]), lp.topLogprobs()[i]));
    }
    return new ResponseJson.LogprobEntry(tokenText(token), lp.logprob(), top);
  }

  /** One token on its own, as logprobs show it (a part of a character decodes to U+FFFD). */
  private String tokenText(int token) {
    return tokensAsIds ? "token_id:" + token : tokenizer.decode(new int[] {token}, false);
  }
}
