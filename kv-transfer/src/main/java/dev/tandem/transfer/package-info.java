/**
 * The KV transfer agent (DESIGN.md, "KV transfer"): registered memory, descriptors, reads of
 * remote descriptors into local memory with completion per descriptor, backends chosen through
 * {@link dev.tandem.transfer.TransferBackendProvider}. Backends: {@code local} (same process),
 * {@code tcp} (Netty, sends straight from registered native memory), {@code ucx} and {@code
 * cuda-ipc} (GPU memory to GPU memory on one node).
 */
package dev.tandem.transfer;
