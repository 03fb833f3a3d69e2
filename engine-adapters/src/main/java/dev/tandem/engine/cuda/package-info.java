/**
 * The {@code cuda} compute backend: a small layer of our own over JCuda's driver API (the driver
 * loaded once with the reason it is missing, a device with its context, stream and kernels, device
 * and pinned host buffers with one owner each, launch shapes computed on the host) and {@link
 * dev.tandem.engine.cuda.CudaBackend}, which runs {@link dev.tandem.engine.compute.ComputeBackend}'s
 * kernels on an NVIDIA GPU from the PTX compiled out of {@code src/main/cuda/tandem.cu}.
 */
package dev.tandem.engine.cuda;
