/**
 * The router's runtime wiring: gRPC clients of workers ({@link
 * dev.tandem.router.grpc.WorkerClient}), the admitted pool, and {@link
 * dev.tandem.router.grpc.Router}, which applies a selector to live workers.
 */
package dev.tandem.router.grpc;
