package dev.tandem.router;

/**
 * What a selector knows of a request: its prompt tokens and their full-block sequence hashes.
 */
public record RoutingRequest(String requestId, int[] tokens, long[] blockHashes) {}
