package dev.tandem.engine.grammar;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A lazily built automaton over matcher states: each distinct state (a list of frames) is kept
 * once, with the state each byte leads to filled in the first time it is asked for. A trie walk
 * then costs an array read per node where it would otherwise step the grammar; the walks of one
 * state's tokens revisit the same few states thousands of times. Bounded: past {@link #LIMIT}
 * states it starts over.
 *
 * <p>Threading: not thread-safe; the masker's thread.
 */
final class StateCache {
  /** States kept before the cache is emptied (each holds up to 256 transitions). */
  static final int LIMIT = 20_000;

  /** One matcher state, its distance to the end, and where each byte leads. */
  static final class State {
    final List<Frame> frames;
    final int remaining;
    private State[] next;

    State(List<Frame> frames) {
      this.frames = frames;
      this.remaining = frames.isEmpty() ? Integer.MAX_VALUE : Grammar.remaining(frames);
    }
  }

  /** Where a byte that leaves the grammar leads. */
  static final State DEAD = new State(List.of());

  private final Map<List<Frame>, State> states = new HashMap<>();
  private long framesStepped;

  State of(List<Frame> frames) {
    State s = states.get(frames);
    if (s == null) {
      if (states.size() >= LIMIT) {
        states.clear();
      }
      s = new State(List.copyOf(frames));
      states.put(s.frames, s);
    }
    return s;
  }

  /** The state after byte {@code b} (0..255), or {@link #DEAD}. */
  State step(Grammar grammar, State from, int b) {
    State[] next = from.next;
    if (next == null) {
      next = from.next = new State[256];
    }
    State to = next[b];
    if (to == null) {
      framesStepped += from.frames.size();
      List<Frame> frames = grammar.step(from.frames, b);
      to = next[b] = frames.isEmpty() ? DEAD : of(frames);
    }
    return to;
  }

  /** Frames the grammar has stepped for this cache so far (the work its transitions cost). */
  long framesStepped() {
    return framesStepped;
  }

  int size() {
    return states.size();
  }
}
