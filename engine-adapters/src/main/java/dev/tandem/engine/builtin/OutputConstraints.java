package dev.tandem.engine.builtin;

import dev.tandem.common.StructuredOutput;
import dev.tandem.common.TokenIds;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.grammar.Grammar;
import dev.tandem.engine.grammar.GrammarException;
import dev.tandem.engine.grammar.GrammarState;
import dev.tandem.engine.grammar.OutputGrammars;
import dev.tandem.engine.grammar.TokenMasker;
import dev.tandem.engine.grammar.TokenVocabulary;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The built-in engine's constrained decoding: compiles each request's {@link StructuredOutput}
 * (compiled grammars cached by constraint), and before each constrained draw masks the logits of
 * every token that would leave the grammar. The vocabulary's bytes come from the model's {@code
 * tokenizer.json}, read on the first constrained request (about a second for a 150k vocabulary).
 *
 * <p>Threading: the engine thread only.
 */
final class OutputConstraints {
  private static final Logger LOG = LoggerFactory.getLogger(OutputConstraints.class);
  private static final int CACHED_GRAMMARS = 64;

  private final Path tokenizerJson;
  private final int vocabSize;
  private final int[] eosTokenIds;
  private TokenMasker masker;
  private long[] mask;
  private long nanos; // spent masking and advancing matchers
  private final Map<StructuredOutput, Grammar> grammars = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<StructuredOutput, Grammar> eldest) {
      return size() > CACHED_GRAMMARS;
    }
  };

  OutputConstraints(Path modelDir, int vocabSize, int[] eosTokenIds) {
    this.tokenizerJson = modelDir == null ? null : modelDir.resolve("tokenizer.json");
    this.vocabSize = vocabSize;
    this.eosTokenIds = eosTokenIds.clone();
  }

  /** True if this model can constrain its output (it has a tokenizer.json and an end token). */
  boolean available() {
    return tokenizerJson != null && Files.isRegularFile(tokenizerJson) && eosTokenIds.length > 0;
  }

  /**
   * The matcher for a request's constraint, or null when it has none.
   *
   * @throws IllegalArgumentException if the constraint cannot be compiled or this model cannot
   *     constrain its output
   */
  GrammarState start(EngineRequest request) {
    StructuredOutput c = request.structuredOutput();
    if (c == null) {
      return null;
    }
    if (!available()) {
      throw new IllegalArgumentException(
          "structured outputs need the model's tokenizer.json and an end-of-sequence token; " + tokenizerJson + " has none");
    }
    Grammar g = grammars.get(c);
    if (g == null) {
      try {
        g = OutputGrammars.compile(c);
      } catch (GrammarException e) {
        throw new IllegalArgumentException("structured output: " + e.getMessage(), e);
      }
      grammars.put(c, g);
    }
    masker();
    return g.newState();
  }

  /** Tokens that end a constrained output once it is complete. */
  int[] endTokens(EngineRequest request) {
    int[] stop = request.stop().stopTokenIds();
    int[] ends = java.util.Arrays.copyOf(eosTokenIds, eosTokenIds.length + stop.length);
    System.arraycopy(stop, 0, ends, eosTokenIds.length, stop.length);
    return ends;
  }

  /**
   * Sets the logits of disallowed tokens to −∞. {@code tokensLeft}: how many tokens the output may
   * still take, this one included.
   *
   * @return false if no token is allowed (the output cannot go on; end it)
   */
  boolean apply(GrammarState state, int tokensLeft, int[] ends, float[] logits) {
    long t0 = System.nanoTime();
    try {
      return applyMask(state, tokensLeft, ends, logits);
    } finally {
      nanos += System.nanoTime() - t0;
    }
  }

  /** Time spent on constrained decoding so far (masks and matchers), in nanoseconds. */
  long nanos() {
    return nanos;
  }

  private boolean applyMask(GrammarState state, int tokensLeft, int[] ends, float[] logits) {
    int n = masker.mask(state, tokensLeft, ends, mask);
    if (n == 0) {
      return false;
    }
    for (int w = 0; w < mask.length; w++) {
      long m = mask[w];
      if (m == -1L) {
        continue;
      }
      int base = w << 6;
      for (int b = 0; b < 64 && base + b < logits.length; b++) {
        if ((m & (1L << b)) == 0) {
          logits[base + b] = Float.NEGATIVE_INFINITY;
        }
      }
    }
    return true;
  }

  /** Moves the matcher past a drawn token (an end token leaves it as it is). */
  void accept(GrammarState state, int token, int[] ends) {
    if (TokenIds.contains(ends, token)) {
      return;
    }
    long t0 = System.nanoTime();
    byte[] bytes = masker.vocabulary().bytes(token);
    boolean ok = bytes != null && state.advance(bytes);
    nanos += System.nanoTime() - t0;
    if (!ok) {
      throw new IllegalStateException("token " + token + " is outside the output's grammar");
    }
  }

  /**
   * How many leading tokens of {@code tokens[0..count)} the output's grammar allows from {@code
   * state} (which is left as it is); an end token only where the output is complete, and nothing
   * after it.
   */
  int allowedPrefix(GrammarState state, int[] tokens, int count, int[] ends) {
    long t0 = System.nanoTime();
    GrammarState s = state.copy();
    int n = 0;
    try {
      for (; n < count; n++) {
        int token = tokens[n];
        if (TokenIds.contains(ends, token)) {
          return s.accepting() ? n + 1 : n;
        }
        byte[] bytes = masker.vocabulary().bytes(token);
        if (bytes == null || !s.advance(bytes)) {
          return n;
        }
      }
      return n;
    } finally {
      nanos += System.nanoTime() - t0;
    }
  }


  private TokenMasker masker() {
    if (masker == null) {
      long t0 = System.nanoTime();
      byte[] json;
      try {
        json = Files.readAllBytes(tokenizerJson);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + tokenizerJson, e);
      }
      masker = new TokenMasker(TokenVocabulary.fromTokenizerJson(json, vocabSize, tokenizerJson.toString()));
      mask = new long[masker.maskWords()];
      LOG.info("structured outputs: token trie of {} ids from {} ready in {} ms",
          vocabSize, tokenizerJson, (System.nanoTime() - t0) / 1_000_000);
    }
    return masker;
  }
}
