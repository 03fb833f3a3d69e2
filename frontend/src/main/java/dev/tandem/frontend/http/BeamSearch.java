package dev.tandem.frontend.http;

import dev.tandem.common.TokenLogprob;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * vLLM's beam search over one prompt, a step at a time, with no I/O: each step extends every live
 * beam by the likeliest next tokens a worker reported for it (twice the width of them), keeps the
 * {@code width} extensions with the highest summed log-probability, and sets aside those that end
 * (an end token, unless fewer than {@code minTokens} came before it: then the extension is
 * dropped). After {@code maxTokens} steps, or once no beam is left, {@link #best()} ranks the
 * ended and the live beams by summed log-probability ÷ length^{@code lengthPenalty}, the length
 * counting the prompt and the output without its end token, as vLLM does.
 *
 * <p>Threading: one thread at a time (the request's event loop).
 */
final class BeamSearch {
  /**
   * A sequence found: the tokens after the prompt, each with its log-probability and the
   * alternatives its step reported (its rank among them), their summed log-probability, and whether
   * its last token ended it.
   */
  record Beam(int[] tokens, TokenLogprob[] logprobs, double logprob, boolean ended) {
    private Beam extend(int token, TokenLogprob logprob, boolean ends) {
      int[] t = Arrays.copyOf(tokens, tokens.length + 1);
      t[tokens.length] = token;
      TokenLogprob[] l = Arrays.copyOf(logprobs, logprobs.length + 1);
      l[logprobs.length] = logprob;
      return new Beam(t, l, this.logprob + logprob.logprob(), ends);
    }
  }

  private final int promptLength;
  private final int width;
  private final double lengthPenalty;
  private final int maxTokens;
  private final int minTokens;
  private final int[] endTokens;
  private List<Beam> live = List.of(new Beam(new int[0], new TokenLogprob[0], 0, false));
  private final List<Beam> ended = new ArrayList<>();
  private int steps;

  /**
   * @param endTokens the tokens that end a sequence (end-of-sequence unless ignored, the request's
   *     stop token ids)
   */
  BeamSearch(int promptLength, int width, double lengthPenalty, int maxTokens, int minTokens, int[] endTokens) {
    if (width < 1) {
      throw new IllegalArgumentException("beam width " + width);
    }
    this.promptLength = promptLength;
    this.width = width;
    this.lengthPenalty = lengthPenalty;
    this.maxTokens = maxTokens;
    this.minTokens = minTokens;
    this.endTokens = endTokens.clone();
    Arrays.sort(this.endTokens);
  }

  /** How many alternatives each step must report for a beam: twice the width, as vLLM asks. */
  int alternatives() {
    return 2 * width;
  }

  /** True once {@code maxTokens} steps are done or no beam is left to extend. */
  boolean done() {
    return live.isEmpty() || steps >= maxTokens;
  }

  /** The beams the next step extends, in the order {@link #advance} takes their results; empty once done. */
  List<Beam> live() {
    return done() ? List.of() : live;
  }

  /** The prompt followed by {@code beam}'s tokens: what a worker scores for its next token. */
  static int[] sequence(int[] prompt, Beam beam) {
    int[] s = Arrays.copyOf(prompt, prompt.length + beam.tokens().length);
    System.arraycopy(beam.tokens(), 0, s, prompt.length, beam.tokens().length);
    return s;
  }

  /**
   * One step: {@code next.get(i)} is what a worker reported for the token after {@code live().get(i)}
   * (its likeliest alternatives, most likely first). Ties keep the order in which they came.
   */
  void advance(List<TokenLogprob> next) {
    if (next.size() != live().size()) {
      throw new IllegalArgumentException(next.size() + " results for " + live().size() + " beams");
    }
    List<Beam> candidates = new ArrayList<>();
    for (int i = 0; i < live.size(); i++) {
      Beam beam = live.get(i);
      TokenLogprob lp = next.get(i);
      for (int k = 0; k < lp.topTokenIds().length; k++) {
        float logprob = lp.topLogprobs()[k];
        if (!Float.isFinite(logprob)) {
          continue; // a token the model cannot produce
        }
        int token = lp.topTokenIds()[k];
        TokenLogprob chosen = new TokenLogprob(logprob, lp.topTokenIds(), lp.topLogprobs(), k + 1);
        if (Arrays.binarySearch(endTokens, token) < 0) {
          candidates.add(beam.extend(token, chosen, false));
        } else if (beam.tokens().length >= minTokens) {
          ended.add(beam.extend(token, chosen, true));
        }
      }
    }
    candidates.sort(Comparator.comparingDouble(Beam::logprob).reversed()); // stable: ties keep their order
    live = List.copyOf(candidates.subList(0, Math.min(width, candidates.size())));
    steps++;
  }

  /** The {@code width} best sequences found, best first (fewer only if fewer were found). */
  List<Beam> best() {
    List<Beam> all = new ArrayList<>(ended);
    all.addAll(live);
    all.sort(Comparator.comparingDouble(this::score).reversed());
    return List.copyOf(all.subList(0, Math.min(width, all.size())));
  }

  /** vLLM's score: summed log-probability ÷ (prompt + output tokens, an end token not counted)^lengthPenalty. */
  double score(Beam beam) {
    int length = promptLength + beam.tokens().length - (beam.ended() ? 1 : 0);
    return beam.logprob() / Math.pow(length, lengthPenalty);
  }
}
