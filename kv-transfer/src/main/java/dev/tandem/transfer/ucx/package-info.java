/**
 * The {@code ucx} transfer backend: data moves by UCX one-sided reads (RMA get) between UCP
 * workers (shared memory, CMA or TCP on one host; RDMA where the fabric has it), through jucx on
 * the system's libucx. A small TCP side channel per agent hands out the worker address and each
 * region's remote key, and doubles as the liveness check that turns a vanished peer into an error.
 */
package dev.tandem.transfer.ucx;
