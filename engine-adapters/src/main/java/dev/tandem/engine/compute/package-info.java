/**
 * Compute backends for the built-in engine, found like grpc-java finds transports: {@link
 * dev.tandem.engine.compute.ComputeBackends} loads every {@link
 * dev.tandem.engine.compute.ComputeBackendProvider} with {@link java.util.ServiceLoader}, keeps
 * those available, and picks the highest priority unless one is named. {@code scalar} is the plain
 * reference every fast backend is checked against; {@code cpu} uses the Vector API on all cores.
 */
package dev.tandem.engine.compute;
