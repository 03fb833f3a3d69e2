package dev.tandem.router;

/**
 * What a selector knows of a request: its prompt tokens, their full-block sequence hashes, and the
 * block size they were hashed with.
 */
public record RoutingRequest(String requestId, int[] tokens, long[] blockHashes, int blockSize) {
  /** Blocks the prompt occupies, the trailing partial one included. */
  public int promptBlocks() {
    return (tokens.length + blockSize - 1) / blockSize;
  }
}
