/**
 * Routing algorithms: the {@link dev.tandem.router.WorkerSelector} interface and its policies,
 * over plain values. The gRPC wiring to workers lives in {@code dev.tandem.router.grpc}.
 */
package dev.tandem.router;
