package dev.tandem.engine.builtin;

import static dev.tandem.engine.EngineRuns.runToCompletion;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.BlockHasher;
import dev.tandem.common.KvEvent;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.model.DType;
import dev.tandem.engine.model.LoraAdapter;
import dev.tandem.engine.model.ModelFormatException;
import dev.tandem.engine.modeltools.LoraGenerator;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The built-in engine serving LoRA adapters beside its base model: each request runs with the
 * adapter it names, batched with others on other adapters or none, and gets the tokens it gets
 * alone; adapters' prefix caches are their own (the same prompt under another adapter is not a
 * hit), and their KV events carry the salted hashes a router computes; an adapter the engine did
 * not load is refused, naming it. Adapters load while the engine serves and run as those loaded at
 * startup; an unloaded one takes no new request, lets its running ones finish with it, then its
 * cached KV goes (so the name loaded again for other weights reuses none of it).
 */
class LoraEngineTest {
  @TempDir static Path dir;
  static Path model;
  static Path sql;
  static Path chat;

  @BeforeAll
  static void create() throws Exception {
    model = TestModels.tinyQwen3(dir.resolve("tiny"), DType.BF16);
    sql = dir.resolve("sql");
    LoraGenerator.write(model, sql, 8, 16, false, LoraGenerator.ALL_TARGETS, 1, DType.F32);
    chat = dir.resolve("chat");
    LoraGenerator.write(model, chat, 4, 8, false, List.of("q_proj", "v_proj"), 2, DType.BF16);
  }

  private static BuiltinEngine engine() {
    return BuiltinEngine.open(BuiltinConfig.of(model).withCompute("cpu", 2).withBatching(16, 512, true).withKvCacheBytes(8 << 20)
        .withLora(List.of(new LoraAdapter.Source("sql", sql), new LoraAdapter.Source("chat", chat)), 16));
  }

  private static int[] prompt(int length, int salt) {
    return IntStream.range(0, length).map(i -> (i * 31 + salt * 17 + 3) % 250).toArray();
  }

  private static EngineRequest greedy(String id, int[] prompt, String lora) {
    return new EngineRequest(id, prompt, SamplingParams.greedy(), new StopConditions(12, new int[0], true), null, 12, lora);
  }

  private static List<Integer> alone(EngineRequest r) {
    try (BuiltinEngine e = engine()) {
      e.add(r);
      return runToCompletion(e, new HashMap<>()).get(r.requestId());
    }
  }

  @Test
  void eachRequestGetsItsAdaptersTokensWhateverRunsBesideIt() {
    int[] p = prompt(37, 1);
    List<Integer> base = alone(greedy("base", p, null));
    List<Integer> onSql = alone(greedy("sql", p, "sql"));
    List<Integer> onChat = alone(greedy("chat", p, "chat"));
    assertNotEquals(base, onSql, "the adapter changes the output");
    assertNotEquals(base, onChat);
    assertNotEquals(onSql, onChat);
    try (BuiltinEngine e = engine()) {
      assertEquals(List.of("sql", "chat"), e.loraAdapters());
      e.add(greedy("b", p, null));
      e.add(greedy("s", p, "sql"));
      e.add(greedy("c", p, "chat"));
      e.add(greedy("s2", prompt(20, 2), "sql"));
      Map<String, List<Integer>> out = runToCompletion(e, new HashMap<>());
      assertEquals(base, out.get("b"), "the base model beside two adapters");
      assertEquals(onSql, out.get("s"));
      assertEquals(onChat, out.get("c"));
      assertEquals(alone(greedy("s2", prompt(20, 2), "sql")), out.get("s2"));
      assertEquals(0, e.pool().usedBlocks(), "every block back");
    }
  }

  /**
   * A long prompt's rows are split over the compute threads, a decode step's few computed on the
   * engine thread: the same prompt prefilled whole and in chunks of 8 gives the same tokens and
   * log-probabilities either way.
   */
  @Test
  void aLongPromptThroughTheBackendMatchesChunksComputedInPlace() throws Exception {
    Path wide = dir.resolve("wide");
    if (!java.nio.file.Files.exists(wide)) {
      LoraGenerator.write(model, wide, 32, 32, false, LoraGenerator.ALL_TARGETS, 5, DType.F32);
    }
    int[] p = prompt(300, 9); // 300 rows of 32 × (64 + 96) multiply-adds in gate/up/down: many grains of work
    SamplingParams withLogprobs = SamplingParams.greedy().withLogprobs(1);
    java.util.function.IntFunction<List<dev.tandem.common.TokenLogprob>> run = budget -> {
      try (BuiltinEngine e = BuiltinEngine.open(BuiltinConfig.of(model).withCompute("cpu", 2).withKvCacheBytes(8 << 20)
          .withBatching(4, budget, true).withLora(List.of(new LoraAdapter.Source("wide", wide)), 32))) {
        e.add(new EngineRequest("r", p, withLogprobs, new StopConditions(8, new int[0], true), null, 8, "wide"));
        List<dev.tandem.common.TokenLogprob> out = new ArrayList<>();
        while (e.hasWork()) {
          for (RequestOutput o : e.step()) {
            out.addAll(java.util.Arrays.asList(o.logprobs()));
          }
        }
        return out;
      }
    };
    List<dev.tandem.common.TokenLogprob> whole = run.apply(512);
    List<dev.tandem.common.TokenLogprob> chunked = run.apply(8);
    assertEquals(8, whole.size());
    for (int i = 0; i < 8; i++) {
      assertEquals(chunked.get(i).topTokenIds()[0], whole.get(i).topTokenIds()[0], "token " + i);
      assertEquals(chunked.get(i).logprob(), whole.get(i).logprob(), 2e-3, "token " + i);
    }
  }

  @Test
  void anAdaptersPrefixCacheIsItsOwnAndItsEventsCarryTheSaltedHashes() {
    int[] p = prompt(40, 3);
    try (BuiltinEngine e = engine()) {
      List<KvEvent> events = new ArrayList<>();
      e.setEventSink(events::add);
      Map<String, RequestOutput> last = new HashMap<>();
      e.add(greedy("base", p, null));
      runToCompletion(e, last);
      e.add(greedy("sql", p, "sql"));
      runToCompletion(e, last);
      assertEquals(0, last.get("sql").cachedTokens(), "the base model's blocks are not the adapter's");
      e.add(greedy("sql-again", p, "sql"));
      List<Integer> again = runToCompletion(e, last).get("sql-again");
      assertEquals(32, last.get("sql-again").cachedTokens(), "the adapter's own blocks are");
      assertEquals(alone(greedy("x", p, "sql")), again, "and give the same tokens");
      e.add(greedy("chat", p, "chat"));
      runToCompletion(e, last);
      assertEquals(0, last.get("chat").cachedTokens(), "another adapter's blocks are not");

      List<Long> stored = events.stream().filter(ev -> ev instanceof KvEvent.Stored).map(ev -> (KvEvent.Stored) ev)
          .flatMap(s -> s.blocks().stream()).map(KvEvent.StoredBlock::sequenceHash).toList();
      long[] plain = BlockHasher.sequenceHashes(p, 16);
      long[] salted = BlockHasher.sequenceHashes(p, 16, BlockHasher.salt("sql"));
      for (int b = 0; b < 2; b++) {
        assertTrue(stored.contains(plain[b]), "the base model's block " + b);
        assertTrue(stored.contains(salted[b]), "the adapter's block " + b + ", hashed as a router hashes it");
        assertNotEquals(plain[b], salted[b]);
      }
    }
  }

  @Test
  void anAdapterTheEngineDidNotLoadIsRefusedNamingIt() {
    try (BuiltinEngine e = engine()) {
      var error = assertThrows(IllegalArgumentException.class, () -> e.add(greedy("r", prompt(10, 1), "legal")));
      assertTrue(error.getMessage().contains("'legal'") && error.getMessage().contains("sql, chat"), error.getMessage());
      assertEquals(0, e.pool().usedBlocks());
      assertTrue(!e.hasWork());
    }
    try (BuiltinEngine plain = BuiltinEngine.open(BuiltinConfig.of(model).withCompute("cpu", 2))) {
      var error = assertThrows(IllegalArgumentException.class, () -> plain.add(greedy("r", prompt(10, 1), "sql")));
      assertTrue(error.getMessage().contains("loaded none"), error.getMessage());
    }
  }

  @Test
  void anAdapterLoadedWhileServingRunsAsOneLoadedAtStartup() {
    int[] p = prompt(37, 5);
    try (BuiltinEngine e = BuiltinEngine.open(BuiltinConfig.of(model).withCompute("cpu", 2).withKvCacheBytes(8 << 20))) {
      assertEquals(List.of(), e.loraAdapters());
      e.loadLoraAdapter("sql", sql);
      e.loadLoraAdapter("chat", chat);
      assertEquals(List.of("sql", "chat"), e.loraAdapters(), "in the order loaded");
      e.add(greedy("sql", p, "sql"));
      assertEquals(alone(greedy("x", p, "sql")), runToCompletion(e, new HashMap<>()).get("sql"));

      var twice = assertThrows(IllegalArgumentException.class, () -> e.loadLoraAdapter("sql", chat));
      assertTrue(twice.getMessage().contains("'sql' is already loaded"), twice.getMessage());
      var named = assertThrows(IllegalArgumentException.class, () -> e.loadLoraAdapter("tiny", sql));
      assertTrue(named.getMessage().contains("served model's name"), named.getMessage());
      var missing = assertThrows(ModelFormatException.class, () -> e.loadLoraAdapter("gone", dir.resolve("nowhere")));
      assertTrue(missing.getMessage().contains("nowhere"), missing.getMessage());
      assertEquals(List.of("sql", "chat"), e.loraAdapters(), "a refused load changes nothing");
    }
  }

  @Test
  void anUnloadedAdapterFinishesItsRunningRequestsThenItsCachedKvGoes() {
    int[] p = prompt(40, 7);
    List<Integer> sqlAlone = alone(greedy("x", p, "sql"));
    try (BuiltinEngine e = engine()) {
      List<KvEvent> events = new ArrayList<>();
      e.setEventSink(events::add);
      Map<String, RequestOutput> last = new HashMap<>();
      e.add(greedy("cached", p, "sql"));
      runToCompletion(e, last); // leaves its two full prompt blocks cached under the adapter
      long[] salted = BlockHasher.sequenceHashes(p, 16, BlockHasher.salt("sql"));
      assertEquals(2, e.pool().cachedPrefixLength(salted));

      e.add(greedy("running", p, "sql"));
      List<Integer> tokens = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        e.step().forEach(o -> IntStream.of(o.newTokens()).forEach(tokens::add));
      }
      assertEquals(1, e.unloadLoraAdapter("sql"), "one request still runs with it");
      assertEquals(List.of("chat"), e.loraAdapters(), "new requests may not name it");
      var refused = assertThrows(IllegalArgumentException.class, () -> e.add(greedy("late", p, "sql")));
      assertTrue(refused.getMessage().contains("'sql' is not loaded"), refused.getMessage());
      var reload = assertThrows(IllegalArgumentException.class, () -> e.loadLoraAdapter("sql", sql));
      assertTrue(reload.getMessage().contains("still runs requests"), reload.getMessage());
      assertEquals(2, e.pool().cachedPrefixLength(salted), "its blocks stay while a request runs with it");

      tokens.addAll(runToCompletion(e, last).getOrDefault("running", List.of()));
      assertEquals(sqlAlone, tokens, "the running request finished with the adapter");
      assertEquals(0, e.pool().cachedPrefixLength(salted), "then its cached blocks went");
      assertEquals(0, e.pool().usedBlocks());
      List<Long> removed = events.stream().filter(ev -> ev instanceof KvEvent.Removed).map(ev -> (KvEvent.Removed) ev)
          .flatMap(r -> java.util.Arrays.stream(r.sequenceHashes()).boxed()).toList();
      assertTrue(removed.contains(salted[0]) && removed.contains(salted[1]), "a router hears they went: " + removed);

      // The name again, for other weights: nothing of the old adapter's KV is reused.
      e.loadLoraAdapter("sql", chat);
      e.add(greedy("renamed", p, "sql"));
      List<Integer> renamed = runToCompletion(e, last).get("renamed");
      assertEquals(0, last.get("renamed").cachedTokens());
      assertEquals(alone(greedy("x", p, "chat")), renamed);
    }
  }

  @Test
  void anIdleAdapterGoesAtOnceAndAnUnknownOneIsRefusedNamingTheLoadedOnes() {
    try (BuiltinEngine e = engine()) {
      assertEquals(0, e.unloadLoraAdapter("chat"));
      assertEquals(List.of("sql"), e.loraAdapters());
      var unknown = assertThrows(IllegalArgumentException.class, () -> e.unloadLoraAdapter("chat"));
      assertTrue(unknown.getMessage().contains("'chat' is not loaded (loaded: sql)"), unknown.getMessage());
    }
  }

  @Test
  void anAdapterAboveTheRankLimitNamedTwiceOrAsTheModelFailsAtStartup() {
    var rank = assertThrows(ModelFormatException.class, () -> BuiltinEngine.open(BuiltinConfig.of(model).withCompute("cpu", 2)
        .withLora(List.of(new LoraAdapter.Source("sql", sql)), 4)));
    assertTrue(rank.getMessage().contains("adapter_config.json") && rank.getMessage().contains("--max-lora-rank 4"), rank.getMessage());
    var twice = assertThrows(IllegalArgumentException.class, () -> BuiltinEngine.open(BuiltinConfig.of(model).withCompute("cpu", 2)
        .withLora(List.of(new LoraAdapter.Source("a", sql), new LoraAdapter.Source("a", chat)), 16)));
    assertTrue(twice.getMessage().contains("'a' twice"), twice.getMessage());
    var named = assertThrows(IllegalArgumentException.class, () -> BuiltinEngine.open(BuiltinConfig.of(model).withCompute("cpu", 2)
        .withLora(List.of(new LoraAdapter.Source("tiny", sql)), 16)));
    assertTrue(named.getMessage().contains("'tiny' has the served model's name"), named.getMessage());
  }
}
