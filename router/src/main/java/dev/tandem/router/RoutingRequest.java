package dev.tandem.router;

/**
 * What a selector knows of a request: how many prompt tokens it has, their full-block sequence
 * hashes, and the block size they were hashed with. (Selectors need the prompt's length and its
 * hashes, never its token ids.)
 */
public record RoutingRequest(String requestId, int promptTokens, long[] blockHashes, int blockSize) {
  /** Blocks the prompt occupies, the trailing partial one included. */
  public int promptBlocks() {
    return (promptTokens + blockSize - 1) / blockSize;
  }
}
