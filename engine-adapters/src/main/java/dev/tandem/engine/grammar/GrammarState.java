package dev.tandem.engine.grammar;

import java.util.List;

/**
 * Where one sequence's output stands in its grammar. Advanced token by token with the bytes of
 * each chosen token; {@link #accepting()} once the output is a complete value.
 *
 * <p>Threading: owned by the thread that samples the sequence (the engine loop).
 */
public final class GrammarState {
  private final Grammar grammar;
  private List<Frame> states;

  GrammarState(Grammar grammar, List<Frame> states) {
    this.grammar = grammar;
    this.states = states;
  }

  public Grammar grammar() {
    return grammar;
  }

  List<Frame> states() {
    return states;
  }

  /** An independent matcher at the same place (states are immutable: nothing is copied but the list reference). */
  public GrammarState copy() {
    return new GrammarState(grammar, states);
  }

  /**
   * Consumes {@code bytes}; false (and unchanged) if they leave the grammar.
   */
  public boolean advance(byte[] bytes) {
    List<Frame> s = states;
    for (byte b : bytes) {
      s = grammar.step(s, b & 0xff);
      if (s.isEmpty()) {
        return false;
      }
    }
    states = s;
    return true;
  }

  /** True if the output so far is complete (the end of output may follow). */
  public boolean accepting() {
    return states.contains(Frame.ACCEPT);
  }

  /** True if nothing but the end of output may follow. */
  public boolean finished() {
    return states.size() == 1 && states.get(0) == Frame.ACCEPT;
  }

  /** Fewest bytes that complete the output from here. */
  public int remainingBytes() {
    return Grammar.remaining(states);
  }
}
