package dev.tandem.planner.sim;

/**
 * One request of a trace: when it arrives (seconds from the trace's start), its prompt and output
 * lengths in tokens, and the ids of its prompt's blocks ({@link Trace#blockTokens()} tokens each),
 * equal ids meaning equal prefixes (Mooncake's {@code hash_ids}).
 */
public record TraceRequest(double arrivalSeconds, int inputTokens, int outputTokens, long[] blockIds) {}
