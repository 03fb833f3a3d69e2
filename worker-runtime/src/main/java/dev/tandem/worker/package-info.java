/**
 * The worker role: an {@link dev.tandem.worker.EngineLoop} owning an engine, the {@link
 * dev.tandem.worker.KvEventLog} of its KV events, and the gRPC {@link
 * dev.tandem.worker.WorkerService}. An aggregated worker is a decode worker that prefills its own
 * prompts.
 */
package dev.tandem.worker;
