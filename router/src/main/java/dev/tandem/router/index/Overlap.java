package dev.tandem.router.index;

/**
 * How many leading blocks of a request one worker holds, by storage tier. The router credits
 * device blocks fully, host blocks at 0.75 and disk blocks at 0.25 (DESIGN.md, worker selection).
 */
public record Overlap(int deviceBlocks, int hostBlocks, int diskBlocks) {
  public static final Overlap NONE = new Overlap(0, 0, 0);

  public int blocks() {
    return deviceBlocks + hostBlocks + diskBlocks;
  }

  /** Blocks of prefill this overlap saves. */
  public double credit() {
    return deviceBlocks + 0.75 * hostBlocks + 0.25 * diskBlocks;
  }
}
