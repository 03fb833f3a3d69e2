package dev.tandem.engine;

/**
 * Speculative decoding's running totals in one engine: tokens proposed and run through the model
 * for verification, and those kept because the model drew the same token there.
 */
public record SpeculationCounts(long drafted, long accepted) {
  public static final SpeculationCounts NONE = new SpeculationCounts(0, 0);
}
