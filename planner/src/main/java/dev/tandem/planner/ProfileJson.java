package dev.tandem.planner;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The profile's file format: {@code {"format": 1, "model", "engine", "kv_tokens", "max_num_seqs",
 * "prefill": [{"isl", "ttft_s"}], "decode": [{"batch", "context", "itl_s"}]}}. Reading checks every
 * field and names the file and the field in its error.
 */
public final class ProfileJson {
  public static final int FORMAT = 1;
  private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private ProfileJson() {}

  /**
   * Reads {@code file}; with {@code expectedModel} not null, refuses a profile of another model.
   *
   * @throws ProfileException naming the file and the field at fault
   */
  public static Profile read(Path file, String expectedModel) throws ProfileException {
    JsonNode root;
    try {
      root = JSON.readTree(Files.readString(file));
    } catch (NoSuchFileException e) {
      throw new ProfileException(file + ": no such profile file (write one with `tandem profile`)");
    } catch (JacksonException e) {
      throw new ProfileException(file + ": not valid JSON: " + e.getOriginalMessage());
    } catch (IOException e) {
      throw new ProfileException(file + ": cannot read: " + e.getMessage(), e);
    }
    if (root == null || !root.isObject()) {
      throw new ProfileException(file + ": a profile is a JSON object");
    }
    int format = (int) positive(file, root, "format");
    if (format != FORMAT) {
      throw new ProfileException(file + ": field format is " + format + ", this Tandem reads format " + FORMAT);
    }
    String model = text(file, root, "model");
    if (expectedModel != null && !expectedModel.equals(model)) {
      throw new ProfileException(file + ": field model is '" + model + "' but the workers serve '" + expectedModel + "'; profile this model");
    }
    String engine = text(file, root, "engine");
    long kvTokens = (long) positive(file, root, "kv_tokens");
    int maxNumSeqs = (int) positive(file, root, "max_num_seqs");
    List<Profile.PrefillPoint> prefill = new ArrayList<>();
    JsonNode p = array(file, root, "prefill");
    for (int i = 0; i < p.size(); i++) {
      String at = "prefill[" + i + "]";
      prefill.add(new Profile.PrefillPoint(number(file, p.get(i), at, "isl"), number(file, p.get(i), at, "ttft_s")));
    }
    List<Profile.DecodePoint> decode = new ArrayList<>();
    JsonNode d = array(file, root, "decode");
    for (int i = 0; i < d.size(); i++) {
      String at = "decode[" + i + "]";
      decode.add(new Profile.DecodePoint(
          number(file, d.get(i), at, "batch"), number(file, d.get(i), at, "context"), number(file, d.get(i), at, "itl_s")));
    }
    return new Profile(model, engine, kvTokens, maxNumSeqs, prefill, decode);
  }

  /** Writes {@code profile} to {@code file} in the format {@link #read} takes. */
  public static void write(Profile profile, Path file) throws IOException {
    ObjectNode root = JSON.createObjectNode();
    root.put("format", FORMAT);
    root.put("model", profile.model());
    root.put("engine", profile.engine());
    root.put("kv_tokens", profile.kvTokens());
    root.put("max_num_seqs", profile.maxNumSeqs());
    ArrayNode p = root.putArray("prefill");
    for (Profile.PrefillPoint pt : profile.prefill()) {
      p.addObject().put("isl", pt.isl()).put("ttft_s", pt.seconds());
    }
    ArrayNode d = root.putArray("decode");
    for (Profile.DecodePoint pt : profile.decode()) {
      d.addObject().put("batch", pt.batch()).put("context", pt.context()).put("itl_s", pt.itlSeconds());
    }
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Files.writeString(file, JSON.writeValueAsString(root) + "\n");
  }

  private static String text(Path file, JsonNode node, String field) throws ProfileException {
    JsonNode v = node.get(field);
    if (v == null || !v.isTextual() || v.asText().isBlank()) {
      throw new ProfileException(file + ": field " + field + " must be a non-empty string");
    }
    return v.asText();
  }

  private static JsonNode array(Path file, JsonNode node, String field) throws ProfileException {
    JsonNode v = node.get(field);
    if (v == null || !v.isArray() || v.isEmpty()) {
      throw new ProfileException(file + ": field " + field + " must be a non-empty array");
    }
    return v;
  }

  private static double positive(Path file, JsonNode node, String field) throws ProfileException {
    JsonNode v = node.get(field);
    if (v == null || !v.isNumber() || !(v.asDouble() > 0)) {
      throw new ProfileException(file + ": field " + field + " must be a positive number");
    }
    return v.asDouble();
  }

  private static double number(Path file, JsonNode node, String at, String field) throws ProfileException {
    if (node == null || !node.isObject()) {
      throw new ProfileException(file + ": " + at + " must be an object");
    }
    JsonNode v = node.get(field);
    if (v == null || !v.isNumber() || !(v.asDouble() > 0) || !Double.isFinite(v.asDouble())) {
      throw new ProfileException(file + ": field " + at + "." + field + " must be a positive number");
    }
    return v.asDouble();
  }
}
