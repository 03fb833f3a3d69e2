/**
 * Routing algorithms over plain values — the {@link dev.tandem.router.WorkerSelector} interface
 * and its policies, the split policy, the {@link dev.tandem.router.LoadLedger} — and the router's
 * public face, {@link dev.tandem.router.RequestRouter}, which takes and returns records of {@code
 * common}. The gRPC wiring to workers lives in {@code dev.tandem.router.grpc}.
 */
package dev.tandem.router;
