package dev.tandem.router;

import dev.tandem.common.GenerationException;
import dev.tandem.common.TokenChunk;

/**
 * Receives one generation's output: every chunk, then either completion or one error. Called on a
 * transport thread; implementations hand the work to their own executor.
 */
public interface TokenListener {
  void onChunk(TokenChunk chunk);

  void onError(GenerationException error);

  /** The stream ended; a stream that ends without a finished chunk is a worker's fault. */
  void onCompleted();
}
