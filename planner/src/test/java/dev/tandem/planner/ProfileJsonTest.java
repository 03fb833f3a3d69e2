package dev.tandem.planner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A profile round-trips, and every bad file is refused naming the file and the field. */
class ProfileJsonTest {
  @TempDir Path dir;

  @Test
  void roundTrips() throws Exception {
    Profile p = Profiles.linear(40_000, 1e-3);
    Path file = dir.resolve("profile.json");
    ProfileJson.write(p, file);
    Profile back = ProfileJson.read(file, "test-model");
    assertEquals(p, back);
    assertEquals(0.075, back.prefillSeconds(3000), 1e-9);
  }

  private String error(String json, String model) throws Exception {
    Path file = dir.resolve("bad.json");
    Files.writeString(file, json);
    ProfileException e = assertThrows(ProfileException.class, () -> ProfileJson.read(file, model));
    assertTrue(e.getMessage().startsWith(file.toString()), e.getMessage());
    return e.getMessage();
  }

  @Test
  void missingFile() {
    ProfileException e = assertThrows(ProfileException.class, () -> ProfileJson.read(dir.resolve("none.json"), null));
    assertTrue(e.getMessage().contains("none.json") && e.getMessage().contains("tandem profile"), e.getMessage());
  }

  @Test
  void malformedJson() throws Exception {
    assertTrue(error("{\"format\": 1,", null).contains("not valid JSON"));
  }

  @Test
  void aBadPointNamesItsIndexAndField() throws Exception {
    String json = """
        {"format": 1, "model": "m", "engine": "mocker", "kv_tokens": 1000, "max_num_seqs": 8,
         "prefill": [{"isl": 100, "ttft_s": 0.01}, {"isl": 200, "ttft_s": "fast"}],
         "decode": [{"batch": 1, "context": 100, "itl_s": 0.01}]}""";
    assertTrue(error(json, null).contains("field prefill[1].ttft_s"), error(json, null));
    assertTrue(error(json.replace("\"kv_tokens\": 1000,", ""), null).contains("field kv_tokens"));
    assertTrue(error(json.replace("\"format\": 1", "\"format\": 2"), null).contains("field format"));
  }

  @Test
  void anotherModelIsRefused() throws Exception {
    String json = """
        {"format": 1, "model": "llama", "engine": "mocker", "kv_tokens": 1000, "max_num_seqs": 8,
         "prefill": [{"isl": 100, "ttft_s": 0.01}], "decode": [{"batch": 1, "context": 100, "itl_s": 0.01}]}""";
    String m = error(json, "qwen3");
    assertTrue(m.contains("field model") && m.contains("llama") && m.contains("qwen3"), m);
  }
}
