package dev.tandem.bench;

import dev.tandem.common.StructuredOutput;
import dev.tandem.engine.ModelFiles;
import dev.tandem.engine.grammar.GrammarException;
import dev.tandem.engine.grammar.GrammarState;
import dev.tandem.engine.grammar.OutputGrammars;
import dev.tandem.engine.grammar.TokenMasker;
import dev.tandem.engine.grammar.TokenVocabulary;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * What a client's structured output costs at worst: constraints a client can write that make the
 * matcher or the token masker do the most work (nested repetitions, ambiguous between levels or
 * not), beside an ordinary one. Two parts: the matcher's time per byte of output, and the time of
 * a token mask over the Qwen3 vocabulary (each step the first allowed token that is not the end),
 * the masks first (a matcher case abandoned past its time runs on beside the cases after it).
 * Each case stops at {@code secondsPerCase}, checked between bytes or masks.
 *
 * <p>Run with {@code benchmarks/scripts/grammar_worst_case.sh}.
 */
public final class GrammarWorstCaseBench {
  private GrammarWorstCaseBench() {}

  public static void main(String[] args) {
    long secondsPerCase = args.length > 0 ? Long.parseLong(args[0]) : 60;
    System.out.println("token masks over the Qwen3 vocabulary (151,936 ids): up to 20 masks, " + secondsPerCase + " s a case at most");
    TokenMasker masker = new TokenMasker(TokenVocabulary.fromTokenizerJson(
        ModelFiles.bundledQwen3().tokenizerJson(), 151_936, "bundled Qwen3 tokenizer"));
    Map<String, StructuredOutput> masked = new LinkedHashMap<>();
    masked.put("[a-z]{1,20}@[a-z]{1,20}\\.com (ordinary)", StructuredOutput.regex("[a-z]{1,20}@[a-z]{1,20}\\.com"));
    masked.put("8 nested {1,9} groups", StructuredOutput.regex(nested(8, "{1,9}")));
    masked.put("8 nested {0,9}b? groups", StructuredOutput.regex(nested(8, "{0,9}b?")));
    masked.put("6 nested {1,5}[a-c]? groups", StructuredOutput.regex(nested(6, "{1,5}[a-c]?")));
    for (String format : new String[] {"ipv6", "hostname", "duration"}) {
      masked.put("schema string, format " + format, StructuredOutput.jsonSchema("{\"type\":\"string\",\"format\":\"" + format + "\"}"));
    }
    masked.put("schema number, multipleOf 0.01", StructuredOutput.jsonSchema("{\"type\":\"number\",\"multipleOf\":0.01}"));
    masked.put("schema enum of 1,000 strings", StructuredOutput.jsonSchema(wide("enum", "\"%s\"")));
    masked.put("schema anyOf of 1,000 consts", StructuredOutput.jsonSchema(wide("anyOf", "{\"const\":\"%s\"}")));
    masked.put("schema anyOf of 1,000 patterns", StructuredOutput.jsonSchema(wide("anyOf", "{\"type\":\"string\",\"pattern\":\"^%s$\"}")));
    for (var e : masked.entrySet()) {
      System.out.printf(Locale.ROOT, "%-48s %s%n", e.getKey(), bounded(() -> masks(masker, e.getValue(), secondsPerCase), secondsPerCase));
    }
    Map<String, StructuredOutput> matcher = new LinkedHashMap<>();
    matcher.put("regex [a-z]{1,20}@[a-z]{1,20}\\.com (ordinary)", StructuredOutput.regex("[a-z]{1,20}@[a-z]{1,20}\\.com"));
    for (int depth : new int[] {8, 16, 30}) {
      matcher.put("regex, " + depth + " nested {0,9} groups", StructuredOutput.regex(nested(depth, "{0,9}")));
      matcher.put("regex, " + depth + " nested {1,9} groups", StructuredOutput.regex(nested(depth, "{1,9}")));
    }
    matcher.put("regex, 8 nested {0,9}b? groups", StructuredOutput.regex(nested(8, "{0,9}b?")));
    for (int depth : new int[] {4, 8, 16}) {
      matcher.put("schema pattern, " + depth + " nested {0,9} groups", StructuredOutput.jsonSchema(
          "{\"type\":\"string\",\"pattern\":\"^" + nested(depth, "{0,9}").replace("[a-z]", "a") + "$\"}"));
    }
    System.out.println("matcher: ms per byte of 'a' (100 bytes; a schema's after its opening quote), " + secondsPerCase + " s a case at most");
    for (var e : matcher.entrySet()) {
      System.out.printf(Locale.ROOT, "%-48s %s%n", e.getKey(), bounded(() -> perByte(e.getValue(), secondsPerCase), secondsPerCase));
    }

    System.exit(0); // a case still running past its time is abandoned, not awaited
  }

  /**
   * What {@code run} answers, or that it had not answered within twice {@code seconds} (a single
   * byte or mask can take longer than a case's time; the case checks its time only between them).
   * An abandoned case keeps its thread busy, so the cases after it run beside it: the output says so.
   */
  private static String bounded(Supplier<String> run, long seconds) {
    CompletableFuture<String> answer = new CompletableFuture<>();
    Thread t = new Thread(() -> answer.complete(run.get()));
    t.setDaemon(true);
    t.start();
    try {
      return answer.get(2 * seconds, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      return "no answer in " + 2 * seconds + " s (abandoned: it runs on beside the cases after it)";
    } catch (InterruptedException | ExecutionException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A schema whose {@code keyword} lists 1,000 words (six random letters and a number), each written by {@code format}. */
  private static String wide(String keyword, String format) {
    StringBuilder schema = new StringBuilder("{\"" + keyword + "\":[");
    SplittableRandom random = new SplittableRandom(7);
    for (int i = 0; i < 1_000; i++) {
      StringBuilder word = new StringBuilder();
      for (int k = 0; k < 6; k++) {
        word.append((char) ('a' + random.nextInt(26)));
      }
      schema.append(i > 0 ? "," : "").append(String.format(Locale.ROOT, format, word.append(i)));
    }
    return schema.append("]}").toString();
  }

  /** {@code depth} groups around {@code [a-z]}, each closed with {@code quantifier}. */
  private static String nested(int depth, String quantifier) {
    return "(".repeat(depth) + "[a-z]" + (")" + quantifier).repeat(depth);
  }

  private static String perByte(StructuredOutput c, long seconds) {
    GrammarState s;
    try {
      s = OutputGrammars.compile(c).newState();
    } catch (GrammarException e) {
      return "refused: " + e.getMessage();
    }
    if (c.kind() == StructuredOutput.Kind.JSON_SCHEMA) {
      s.advance("\"".getBytes(StandardCharsets.UTF_8));
    }
    long deadline = System.nanoTime() + seconds * 1_000_000_000L;
    long t = System.nanoTime();
    int bytes = 0;
    while (bytes < 100 && System.nanoTime() < deadline && s.advance(new byte[] {'a'})) {
      s.accepting();
      bytes++;
    }
    if (bytes == 0) {
      return "no byte in " + seconds + " s";
    }
    return String.format(Locale.ROOT, "%.3f ms a byte (%d bytes)", (System.nanoTime() - t) / 1e6 / bytes, bytes);
  }

  private static String masks(TokenMasker masker, StructuredOutput c, long seconds) {
    GrammarState s;
    try {
      s = OutputGrammars.compile(c).newState();
    } catch (GrammarException e) {
      return "refused: " + e.getMessage();
    }
    long[] mask = new long[masker.maskWords()];
    int[] ends = {151_645};
    long deadline = System.nanoTime() + seconds * 1_000_000_000L;
    long worst = 0;
    long total = 0;
    int n = 0;
    while (n < 20 && System.nanoTime() < deadline) {
      long t = System.nanoTime();
      masker.mask(s, 1000, ends, mask);
      long dt = System.nanoTime() - t;
      worst = Math.max(worst, dt);
      total += dt;
      n++;
      int token = firstNotEnd(mask, ends[0]);
      if (token < 0 || !s.advance(masker.vocabulary().bytes(token))) {
        break;
      }
    }
    return String.format(Locale.ROOT, "%d masks, mean %.1f ms, worst %.1f ms", n, total / 1e6 / n, worst / 1e6);
  }

  private static int firstNotEnd(long[] mask, int end) {
    for (int w = 0; w < mask.length; w++) {
      for (long word = mask[w]; word != 0; word &= word - 1) {
        int id = w * 64 + Long.numberOfTrailingZeros(word);
        if (id != end) {
          return id;
        }
      }
    }
    return -1;
  }
}
