package dev.tandem.engine.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.tandem.common.GenerationConfig;
import dev.tandem.common.SamplingParams;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalDouble;
import java.util.OptionalInt;

/** Reads and checks a model directory's {@code generation_config.json} (optional: none is {@link GenerationConfig#NONE}). */
public final class GenerationConfigFile {
  public static final String NAME = "generation_config.json";

  private GenerationConfigFile() {}

  /**
   * @throws ModelFormatException naming the file and the field that is malformed, or out of the
   *     range a request could give it
   */
  public static GenerationConfig read(Path dir) {
    Path file = dir.resolve(NAME);
    if (!Files.isRegularFile(file)) {
      return GenerationConfig.NONE;
    }
    try {
      return parse(Files.readAllBytes(file), file.toString());
    } catch (IOException e) {
      throw new ModelFormatException(file + ": cannot be read: " + e.getMessage());
    }
  }

  /** The file's bytes; {@code file} names it in errors. */
  public static GenerationConfig parse(byte[] json, String file) {
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(json);
    } catch (IOException e) {
      throw new ModelFormatException(file + ": not valid JSON: " + e.getMessage());
    }
    if (root == null || !root.isObject()) {
      throw new ModelFormatException(file + ": not a JSON object");
    }
    return new GenerationConfig(
        number(file, root, "temperature", 0, 2, true),
        number(file, root, "top_p", 0, 1, false),
        topK(file, root),
        number(file, root, "min_p", 0, 1, true),
        number(file, root, "repetition_penalty", 0, 2, false),
        tokenIds(file, root.path("eos_token_id")));
  }

  /**
   * A number in [lo, hi] (lo itself only where {@code loIncluded}) as the float requests carry (a
   * top_p of 1e-50 is 0 there), or empty when absent or null.
   */
  private static OptionalDouble number(String file, JsonNode root, String field, double lo, double hi, boolean loIncluded) {
    JsonNode v = root.get(field);
    if (v == null || v.isNull()) {
      return OptionalDouble.empty();
    }
    float x = (float) v.asDouble();
    if (!v.isNumber() || !(loIncluded ? x >= lo : x > lo) || !(x <= hi)) {
      throw new ModelFormatException(
          file + ": field '" + field + "' must be a number " + (loIncluded ? "from " : "above ") + lo + " to " + hi + ", was " + v);
    }
    return OptionalDouble.of(x);
  }

  /** top_k: a positive count, or 0 / -1 for off (Hugging Face's and vLLM's spellings). */
  private static OptionalInt topK(String file, JsonNode root) {
    JsonNode v = root.get("top_k");
    if (v == null || v.isNull()) {
      return OptionalInt.empty();
    }
    if (!v.isIntegralNumber() || !v.canConvertToInt() || v.asInt() < -1) {
      throw new ModelFormatException(file + ": field 'top_k' must be a positive integer, or 0 or -1 for none, was " + v);
    }
    return OptionalInt.of(v.asInt() <= 0 ? SamplingParams.NO_TOP_K : v.asInt());
  }

  /** {@code eos_token_id} as config.json and generation_config.json both give it: an id, a list of them, or null. */
  static int[] tokenIds(String file, JsonNode node) {
    if (node.isMissingNode() || node.isNull()) {
      return new int[0];
    }
    JsonNode[] ids = node.isArray() ? new JsonNode[node.size()] : new JsonNode[] {node};
    for (int i = 0; node.isArray() && i < ids.length; i++) {
      ids[i] = node.get(i);
    }
    int[] out = new int[ids.length];
    for (int i = 0; i < ids.length; i++) {
      if (!ids[i].isIntegralNumber() || !ids[i].canConvertToInt() || ids[i].asInt() < 0) {
        throw new ModelFormatException(file + ": field 'eos_token_id' must be a token id or a list of them, has " + ids[i]);
      }
      out[i] = ids[i].asInt();
    }
    return out;
  }
}
