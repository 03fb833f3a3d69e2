package dev.tandem.engine;

/** A point-in-time view of an engine's load, as workers report it. */
public record EngineLoad(
    int runningRequests,
    int waitingRequests,
    long queuedPrefillTokens,
    int kvBlocksUsed,
    int kvBlocksTotal,
    long lastEventId) {}
