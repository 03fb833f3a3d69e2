package dev.tandem.router;

import dev.tandem.common.WorkerId;

/**
 * One candidate worker as a selector sees it: the requests the router itself has in flight there,
 * and the load the worker last reported.
 */
public record WorkerLoad(
    WorkerId workerId,
    int routedActiveRequests,
    int reportedActiveRequests,
    int reportedWaitingRequests,
    int kvBlocksUsed,
    int kvBlocksTotal) {}
