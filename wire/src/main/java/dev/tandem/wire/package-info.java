/**
 * The gRPC edge's mappers: {@link dev.tandem.wire.ToWire} turns common's records into the worker
 * API's protobuf messages and gRPC statuses, {@link dev.tandem.wire.FromWire} turns them back.
 * Nothing else in Tandem builds or reads a worker API message field by field; wire defaults (proto3's
 * zero for "unset") are resolved here, against {@link dev.tandem.common.SamplingParams}' constants.
 */
package dev.tandem.wire;
