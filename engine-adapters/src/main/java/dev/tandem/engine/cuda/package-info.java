/**
 * The {@code cuda} compute backend. {@link dev.tandem.engine.cuda.Gpu} is all the backend sees of a
 * GPU (device memory by address, copies, launches, mapped host memory, graphs, events); {@link
 * dev.tandem.engine.cuda.CudaDevice} implements it over JCuda's driver API (the driver loaded once
 * by {@link dev.tandem.engine.cuda.CudaDriver}, with the reason it is missing), and the tests'
 * emulated GPU over the same kernels compiled for the CPU. {@link
 * dev.tandem.engine.cuda.CudaKernels} launches the kernels of {@code src/main/cuda/tandem.cu}
 * (committed as PTX) with shapes from {@link dev.tandem.engine.cuda.LaunchShapes}; device memory
 * comes from a {@link dev.tandem.engine.cuda.DevicePool}, each buffer closed exactly once. {@link
 * dev.tandem.engine.cuda.CudaBackend} is the {@link dev.tandem.engine.compute.ComputeBackend} on it;
 * the engine's device forward pass is {@code builtin/CudaTransformer}.
 */
package dev.tandem.engine.cuda;
