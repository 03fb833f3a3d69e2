package dev.tandem.router;

import dev.tandem.common.WorkerId;

/**
 * One candidate worker as a selector sees it: what the router itself has in flight there (requests,
 * prefill blocks not yet past their first token, decode blocks of unfinished requests) and what the
 * worker last reported.
 */
public record WorkerLoad(
    WorkerId workerId,
    int routedActiveRequests,
    int routedPrefillBlocks,
    int routedDecodeBlocks,
    int reportedActiveRequests,
    int reportedWaitingRequests,
    int kvBlocksUsed,
    int kvBlocksTotal) {}
