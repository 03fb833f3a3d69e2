package dev.tandem.engine.sched;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.FinishReason;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.engine.EngineRequest;
import dev.tandem.engine.RequestOutput;
import dev.tandem.engine.SpeculationCounts;
import dev.tandem.engine.kv.BlockPool;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntUnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * The scheduler's side of speculative decoding, with a scripted "model" in place of the engine:
 * the drawer answers each position from the tokens before it, as a model's logits would, so what
 * is kept, what is dropped and which blocks a sequence holds can be checked token by token.
 */
class SpeculationSchedulerTest {
  private static final int BLOCK = 4;
  private static final SpeculativeConfig NGRAM = new SpeculativeConfig(3, 2, 1);

  /** A "model" whose next token depends on the last one only. */
  private static Scheduler.TokenDrawer model(IntUnaryOperator next, List<int[]> verified) {
    return (index, row, draft, seq) -> {
      verified.add(new int[] {row, draft});
      return next.applyAsInt(seq.tokens()[seq.length() - 1]);
    };
  }

  /** A "model" that says {@code script[p]} at position p, whatever came before. */
  private static Scheduler.TokenDrawer script(List<int[]> verified, int... byPosition) {
    return (index, row, draft, seq) -> {
      verified.add(new int[] {row, draft});
      return byPosition[seq.length()];
    };
  }

  private static Scheduler scheduler(int blocks, int budget) {
    Scheduler s = new Scheduler(new SchedulerConfig(8, budget, true, 1_000, new int[] {99}), new BlockPool(blocks, BLOCK));
    s.speculate(NGRAM, seq -> true);
    return s;
  }

  private static EngineRequest request(String id, int[] prompt, int maxTokens) {
    return new EngineRequest(id, prompt, SamplingParams.greedy(), new StopConditions(maxTokens, new int[0], false));
  }

  /** Runs to completion; returns every output of request "a" in order. */
  private static List<RequestOutput> run(Scheduler s, Scheduler.TokenDrawer drawer) {
    List<RequestOutput> outputs = new ArrayList<>();
    while (s.hasWork()) {
      ScheduledBatch batch = s.schedule();
      for (int i = 0; i < batch.size(); i++) {
        if (!batch.sequence(i).inPrefill()) {
          assertEquals(1 + batch.sequence(i).drafts(), batch.tokens()[i], "a decode step runs its token and the proposal");
          assertTrue(batch.sequence(i).drafts() <= NGRAM.tokens());
        }
      }
      outputs.addAll(s.complete(batch, drawer));
    }
    return outputs;
  }

  private static int[] tokens(List<RequestOutput> outputs) {
    return outputs.stream().flatMapToInt(o -> Arrays.stream(o.newTokens())).toArray();
  }

  @Test
  void aLoopTheModelKeepsFollowingIsProposedAndKeptSeveralTokensAStep() {
    // The "model" continues 1 2 3 1 2 3 …: once the loop is in the context, every proposal is right.
    Scheduler s = scheduler(64, 64);
    s.add(request("a", new int[] {1, 2, 3, 1, 2}, 12));
    List<RequestOutput> out = run(s, model(t -> t % 3 + 1, new ArrayList<>()));
    assertArrayEquals(new int[] {3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2}, tokens(out));
    assertEquals(FinishReason.LENGTH, out.getLast().finishReason());
    // The prefill draws 1; then 3 proposed + 1 drawn, twice, then 2 + 1: a proposal never reaches
    // past max_tokens (the kept tokens and the one drawn after them fit in 12).
    assertEquals(List.of(1, 4, 4, 3), out.stream().map(o -> o.newTokens().length).toList());
    assertEquals(new SpeculationCounts(8, 8), s.speculationCounts(), "a right proposal is kept whole");
    assertEquals(0, s.pool().usedBlocks(), "every block back");
  }

  @Test
  void aWrongProposalIsDroppedAndItsBlocksGoBack() {
    // Context 5 6 7 5 6 7: the lookup proposes 5 6 7 again; the "model" says 9.
    Scheduler s = scheduler(64, 64);
    s.add(request("a", new int[] {5, 6, 7, 5, 6}, 8));
    List<int[]> verified = new ArrayList<>();
    Scheduler.TokenDrawer drawer = script(verified, 0, 0, 0, 0, 0, 7, 9, 9, 9, 9, 9, 9, 9);
    s.complete(s.schedule(), drawer); // the prefill draws 7
    ScheduledBatch step = s.schedule();
    Sequence seq = step.sequence(0);
    assertEquals(3, seq.drafts());
    assertEquals(3, seq.blockCount(), "blocks for the 6th token and the 3 proposed after it (10 tokens)");
    List<RequestOutput> out = s.complete(step, drawer);
    assertArrayEquals(new int[] {9}, out.getFirst().newTokens());
    assertEquals(1, verified.getLast()[0] + 1, "one row drawn: the first mismatch ends the verification");
    assertEquals(7, seq.length());
    assertEquals(6, seq.computedTokens());
    assertEquals(2, seq.blockCount(), "the block only the proposal needed went back");
    assertEquals(2, s.pool().usedBlocks());
    assertEquals(new SpeculationCounts(3, 0), s.speculationCounts());
  }

  @Test
  void theFirstMismatchEndsTheKeptRunAndTheModelsTokenReplacesTheProposal() {
    // Context 1 2 3 4 1 2: the lookup proposes 3 4 1; the "model" agrees on 3 and then says 7.
    Scheduler s = scheduler(64, 64);
    s.add(request("a", new int[] {1, 2, 3, 4, 1}, 10));
    List<int[]> verified = new ArrayList<>();
    Scheduler.TokenDrawer drawer = script(verified, 0, 0, 0, 0, 0, 2, 3, 7, 8, 8, 8, 8, 8, 8, 8);
    s.complete(s.schedule(), drawer); // the prefill draws 2
    ScheduledBatch step = s.schedule();
    Sequence seq = step.sequence(0);
    assertEquals(3, seq.drafts(), "1 2 occurred before, followed by 3 4 1");
    verified.clear();
    List<RequestOutput> out = s.complete(step, drawer);
    assertArrayEquals(new int[] {3, 7}, out.getFirst().newTokens(), "3 kept, then the model's 7 instead of 4");
    assertEquals(List.of(0, 1), verified.stream().map(v -> v[0]).toList(), "rows 0 and 1 drawn, 2 and 3 never");
    assertEquals(List.of(3, 4), verified.stream().map(v -> v[1]).toList(), "each against the token proposed there");
    assertEquals(8, seq.length());
    assertEquals(7, seq.computedTokens(), "the kept token's KV count; the model's 7 is still to run");
    assertEquals(2, seq.blockCount(), "blocks for 8 tokens kept, the proposal's third returned");
    assertEquals(new SpeculationCounts(3, 1), s.speculationCounts());
  }

  @Test
  void anEndOfSequenceInsideAKeptRunEndsTheRequestThere() {
    // Context 1 2 99 3 1 2: the lookup proposes 99 3 1, the "model" says 99 (EOS) after 2.
    Scheduler s = scheduler(64, 64);
    s.add(request("a", new int[] {1, 2, 99, 3, 1}, 20));
    List<RequestOutput> out = run(s, model(t -> t == 1 ? 2 : t == 2 ? 99 : 1, new ArrayList<>()));
    assertArrayEquals(new int[] {2, 99}, tokens(out));
    assertEquals(FinishReason.STOP, out.getLast().finishReason());
    assertEquals(new SpeculationCounts(3, 1), s.speculationCounts());
    assertEquals(0, s.pool().usedBlocks());
  }

  @Test
  void proposalsTakeOnlyTheBlocksAndBudgetLeftAndChangeNoToken() {
    // Two 10-token prompts in 7 blocks of 4: after their first decode step reserves 3 each, one
    // block is free. The first sequence's proposal takes it; the second may propose only as far as
    // its own third block reaches (one token).
    IntUnaryOperator next = t -> t == 3 ? 1 : t == 6 ? 4 : t + 1;
    int[] a = {1, 2, 3, 1, 2, 3, 1, 2, 3, 1};
    int[] b = {4, 5, 6, 4, 5, 6, 4, 5, 6, 4};
    Scheduler plain = new Scheduler(new SchedulerConfig(8, 64, true, 1_000, new int[] {99}), new BlockPool(7, BLOCK));
    plain.add(request("a", a, 6));
    plain.add(request("b", b, 6));
    List<RequestOutput> without = run(plain, model(next, new ArrayList<>()));

    Scheduler s = scheduler(7, 64);
    s.add(request("a", a, 6));
    s.add(request("b", b, 6));
    List<RequestOutput> with = new ArrayList<>(s.complete(s.schedule(), model(next, new ArrayList<>())));
    ScheduledBatch step = s.schedule();
    assertEquals(3, step.sequence(0).drafts());
    assertEquals(1, step.sequence(1).drafts(), "one token fits the second's third block");
    assertEquals(7, s.pool().usedBlocks());
    with.addAll(s.complete(step, model(next, new ArrayList<>())));
    with.addAll(run(s, model(next, new ArrayList<>())));
    assertEquals(0, s.pool().usedBlocks());
    assertArrayEquals(tokensOf(without, "a"), tokensOf(with, "a"));
    assertArrayEquals(tokensOf(without, "b"), tokensOf(with, "b"));

    // A budget of 2 tokens a step leaves room for one proposed token at most.
    Scheduler tight = scheduler(64, 2);
    tight.add(request("a", new int[] {1, 2, 3, 1, 2, 3, 1}, 30));
    while (tight.hasWork()) {
      ScheduledBatch batch = tight.schedule();
      assertTrue(batch.totalTokens() <= 2, "within max_batched_tokens");
      tight.complete(batch, model(t -> t % 3 + 1, new ArrayList<>()));
    }
    assertTrue(tight.speculationCounts().accepted() > 0);
  }

  private static int[] tokensOf(List<RequestOutput> outputs, String id) {
    return outputs.stream().filter(o -> o.requestId().equals(id)).flatMapToInt(o -> Arrays.stream(o.newTokens())).toArray();
  }

  @Test
  void proposalsThatKeepFailingArePausedLongerAndLongerAndAKeptOneResumesThem() {
    // Tokens 1..3 only, so the lookup always finds a match; for its first 300 tokens the "model"
    // never agrees with a proposal, then always does.
    Scheduler s = scheduler(512, 64);
    s.add(request("a", new int[] {1, 2, 3, 1, 2, 3}, 500));
    int[] failed = {0};
    Scheduler.TokenDrawer contraryThenAgreeing = (index, row, draft, seq) -> {
      if (draft >= 0 && seq.generated() >= 300) {
        return draft;
      }
      if (draft >= 0) {
        failed[0]++;
        return draft % 3 + 1;
      }
      return seq.tokens()[seq.length() - 1] % 3 + 1;
    };
    List<RequestOutput> out = run(s, contraryThenAgreeing);
    assertEquals(500, tokens(out).length);
    // Pauses of 1, 2, 4, … 64 steps, then 64 each: about 10 failed passes in 300 tokens, not 300.
    assertTrue(failed[0] >= 8 && failed[0] <= 12, failed[0] + " failed passes");
    // Once one is kept, proposals resume every step and grow back to 3 tokens: most of the last 200 are proposed ones.
    assertTrue(s.speculationCounts().accepted() >= 100, s.speculationCounts().toString());
  }

  @Test
  void aProposalIsCutWhereTheEnginesCheckSaysAndOnlyItsPrefixIsVerified() {
    // The engine's check (a grammar, in the built-in engine) allows no proposed 3: proposals stop before it.
    Scheduler s = new Scheduler(new SchedulerConfig(8, 64, true, 1_000, new int[] {99}), new BlockPool(64, BLOCK));
    s.speculate(NGRAM, seq -> true, (seq, proposal, count) -> {
      for (int i = 0; i < count; i++) {
        if (proposal[i] == 3) {
          return i;
        }
      }
      return count;
    });
    s.add(request("a", new int[] {1, 2, 3, 1, 2, 3, 1}, 30));
    List<int[]> verified = new ArrayList<>();
    List<RequestOutput> out = run(s, model(t -> t % 3 + 1, verified));
    int[] expected = new int[30];
    for (int i = 0, last = 1; i < 30; i++) {
      expected[i] = last = last % 3 + 1;
    }
    assertArrayEquals(expected, tokens(out), "the model's own tokens, cut or not");
    assertTrue(verified.stream().noneMatch(v -> v[1] == 3), "no proposed 3 was run");
    assertTrue(s.speculationCounts().accepted() > 0, "the rest were proposed and kept: " + s.speculationCounts());
    assertEquals(s.speculationCounts().drafted(), s.speculationCounts().accepted(), "and only what the check allowed was run");
  }

  @Test
  void anIneligibleSequenceIsNotSpeculated() {
    Scheduler s = new Scheduler(new SchedulerConfig(8, 64, true, 1_000, new int[] {99}), new BlockPool(64, BLOCK));
    s.speculate(NGRAM, seq -> !seq.id().equals("constrained"));
    s.add(request("constrained", new int[] {1, 2, 3, 1, 2, 3, 1}, 10));
    run(s, model(t -> t % 3 + 1, new ArrayList<>()));
    assertEquals(SpeculationCounts.NONE, s.speculationCounts());
  }
}
