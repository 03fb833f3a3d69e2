/**
 * The {@code cuda-ipc} transfer backend: KV read GPU to GPU between processes on one node, through
 * CUDA IPC handles and device-to-device copies, with a Unix-socket side channel that checks every
 * read ({@link dev.tandem.transfer.cudaipc.CudaIpcWire}). {@link
 * dev.tandem.transfer.cudaipc.DeviceMemory} is the device it works on: JCuda's driver API, or host
 * memory in tests.
 */
package dev.tandem.transfer.cudaipc;
