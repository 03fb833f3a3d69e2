package dev.tandem.frontend.http;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import org.junit.jupiter.api.Test;

/** What a client gets from a worker's hidden state: cut to the asked dimensions, then to unit length. */
class EmbeddingRunTest {
  @Test
  void aVectorIsCutThenNormalizedAsVllmsPoolerDoes() {
    float[] hidden = {3, 4, 12, 0};
    assertArrayEquals(new float[] {3f / 13, 4f / 13, 12f / 13, 0}, EmbeddingRun.pooled(hidden, 0, true), 1e-7f);
    assertArrayEquals(new float[] {0.6f, 0.8f}, EmbeddingRun.pooled(hidden, 2, true), 1e-7f, "the first two, then unit length");
    assertArrayEquals(new float[] {3, 4}, EmbeddingRun.pooled(hidden, 2, false), "normalize false: the values as they are");
    assertArrayEquals(new float[] {0, 0}, EmbeddingRun.pooled(new float[] {0, 0}, 0, true), "a zero vector stays zero");
    assertArrayEquals(new float[] {3, 4, 12, 0}, hidden, "the hidden state itself is not changed");
  }
}
