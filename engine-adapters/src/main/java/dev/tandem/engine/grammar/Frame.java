package dev.tandem.engine.grammar;

import java.util.Objects;

/**
 * One way the output so far can be inside a grammar: the terminal being matched (top) with its
 * progress, and the chain of composite nodes that continue after it. Immutable; equal frames match
 * the same continuations, so a frame is the key of a cached token mask.
 */
final class Frame {
  /** The grammar is complete: only the end of the output can follow. */
  static final Frame ACCEPT = new Frame(null, 0, 0, null, null);

  final GrammarNode node;
  final int pos;
  final int aux;
  final Object data;
  final Frame parent;
  final int depth;
  private final int hash;
  /** 0: not known yet; 1: the rest of the parse after this frame fits the depth bound; 2: it does not. */
  byte restFits;

  Frame(GrammarNode node, int pos, int aux, Object data, Frame parent) {
    this.node = node;
    this.pos = pos;
    this.aux = aux;
    this.data = data;
    this.parent = parent;
    this.depth = parent == null ? 0 : parent.depth + 1;
    int h = System.identityHashCode(node);
    h = 31 * h + pos;
    h = 31 * h + aux;
    h = 31 * h + Objects.hashCode(data);
    h = 31 * h + (parent == null ? 0 : parent.hash);
    this.hash = h;
  }

  @Override
  public int hashCode() {
    return hash;
  }

  @Override
  public boolean equals(Object o) {
    Frame a = this;
    Object b0 = o;
    while (true) {
      if (a == b0) {
        return true;
      }
      if (!(b0 instanceof Frame b) || a.hash != b.hash || a.node != b.node || a.pos != b.pos || a.aux != b.aux
          || !Objects.equals(a.data, b.data)) {
        return false;
      }
      if (a.parent == null || b.parent == null) {
        return a.parent == b.parent;
      }
      a = a.parent;
      b0 = b.parent;
    }
  }
}
