package dev.tandem.router;

import dev.tandem.common.WorkerDescription;
import dev.tandem.common.WorkerLoadReport;

/**
 * One registered worker as the router sees it now: how it described itself, where it is, whether
 * its load stream is up, its last load report, and whether it is reported for publishing no KV
 * events.
 */
public record WorkerStatus(
    WorkerDescription description, String address, boolean reachable, WorkerLoadReport load, boolean missingKvEvents) {}
