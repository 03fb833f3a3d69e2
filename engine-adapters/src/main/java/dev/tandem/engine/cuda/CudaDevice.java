package dev.tandem.engine.cuda;

import static dev.tandem.engine.cuda.CudaDriver.check;
import static jcuda.driver.JCudaDriver.cuCtxSetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetAttribute;
import static jcuda.driver.JCudaDriver.cuDeviceGetName;
import static jcuda.driver.JCudaDriver.cuDeviceGetUuid;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static jcuda.driver.JCudaDriver.cuDeviceTotalMem;
import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventElapsedTime;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;
import static jcuda.driver.JCudaDriver.cuGraphDestroy;
import static jcuda.driver.JCudaDriver.cuGraphExecDestroy;
import static jcuda.driver.JCudaDriver.cuGraphInstantiate;
import static jcuda.driver.JCudaDriver.cuGraphLaunch;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemAllocHost;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;
import static jcuda.driver.JCudaDriver.cuMemHostGetDevicePointer;
import static jcuda.driver.JCudaDriver.cuMemHostRegister;
import static jcuda.driver.JCudaDriver.cuMemHostUnregister;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;
import static jcuda.driver.JCudaDriver.cuMemsetD8;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoadData;
import static jcuda.driver.JCudaDriver.cuModuleUnload;
import static jcuda.driver.JCudaDriver.cuStreamBeginCapture;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamEndCapture;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUfunction;
import jcuda.driver.CUgraph;
import jcuda.driver.CUgraphExec;
import jcuda.driver.CUmodule;
import jcuda.driver.CUresult;
import jcuda.driver.CUstream;
import jcuda.driver.CUstreamCaptureMode;
import jcuda.driver.CUstream_flags;
import jcuda.driver.CUuuid;
import jcuda.driver.JCudaDriver;

/**
 * One GPU as Tandem uses it, through JCuda's driver API: the device's primary context, one stream
 * every launch goes to (so they run in order), and the kernels of {@code tandem.cu}, loaded from
 * the PTX for the device's architecture ({@code sm_90} from compute capability 9, else {@code
 * sm_80}).
 *
 * <p>Threading: a CUDA context is current per thread, so every caller runs {@link #makeCurrent()}
 * before its calls; launches and copies come from one thread at a time (the engine's). Owns its
 * stream, module and context reference until {@link #close()}.
 */
public final class CudaDevice implements Gpu {
  /** JCuda's device pointer at an address, and the address of one the driver filled in. */
  private static final class Address extends CUdeviceptr {
    long value() {
      return getNativePointer() + getByteOffset();
    }

    static CUdeviceptr at(long address) {
      return new CUdeviceptr().withByteOffset(address);
    }
  }

  /** Largest single host copy: JCuda reaches native memory through a ByteBuffer (int-sized). */
  private static final long CHUNK = 1L << 30;

  private final int ordinal;
  private final CUdevice device = new CUdevice();
  private final CUcontext context = new CUcontext();
  private final CUstream stream = new CUstream();
  private final CUmodule module = new CUmodule();
  private final Map<String, CUfunction> functions = new HashMap<>();
  private final Map<Long, Pointer> pinned = new HashMap<>(); // by the segment's address
  private final String name;
  private final int major;
  private final int minor;
  private final long totalMemory;
  private final String ptx;
  private final String uuid;
  private boolean closed;

  private CudaDevice(int ordinal) {
    this.ordinal = ordinal;
    check(cuDeviceGet(device, ordinal), "cuDeviceGet(" + ordinal + ")");
    byte[] nameBytes = new byte[256];
    check(cuDeviceGetName(nameBytes, nameBytes.length, device), "cuDeviceGetName");
    int end = 0;
    while (end < nameBytes.length && nameBytes[end] != 0) {
      end++;
    }
    this.name = new String(nameBytes, 0, end, StandardCharsets.UTF_8);
    this.major = attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    this.minor = attribute(CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    long[] memory = new long[1];
    check(cuDeviceTotalMem(memory, device), "cuDeviceTotalMem");
    this.totalMemory = memory[0];
    CUuuid id = new CUuuid();
    check(cuDeviceGetUuid(id, device), "cuDeviceGetUuid");
    this.uuid = uuidName(id.bytes);
    this.ptx = LaunchShapes.ptxResource(major);
    if (ptx == null) {
      throw new CudaException(
          "GPU " + ordinal + " (" + name + ") has compute capability " + major + "." + minor
              + "; the cuda backend needs 8.0 or newer (its kernels are built for sm_80 and sm_90)");
    }
    keepContext(ordinal, device);
    check(cuDevicePrimaryCtxRetain(context, device), "cuDevicePrimaryCtxRetain");
    try {
      makeCurrent();
      // A blocking stream: the driver's synchronous copies (on the legacy default stream) wait for
      // the kernels queued here, so a copy back always sees their results.
      check(cuStreamCreate(stream, CUstream_flags.CU_STREAM_DEFAULT), "cuStreamCreate");
      int loaded = cuModuleLoadData(module, readPtx(ptx));
      if (loaded != CUresult.CUDA_SUCCESS) {
        throw new CudaException(
            "loading " + ptx + " on " + name + " (driver CUDA " + CudaDriver.version() + ") failed: "
                + CUresult.stringFor(loaded) + " (" + loaded + ")");
      }
    } catch (RuntimeException e) {
      cuDevicePrimaryCtxRelease(device);
      throw e;
    }
  }

  private static final java.util.Set<Integer> KEPT = java.util.concurrent.ConcurrentHashMap.newKeySet();

  /**
   * Holds one reference to the device's primary context for the rest of the process, so that
   * closing the last {@code CudaDevice} does not tear the context down and the next open (the
   * next engine, the next test) does not pay up to a second to create it again.
   */
  private static void keepContext(int ordinal, CUdevice device) {
    if (KEPT.add(ordinal)) {
      check(cuDevicePrimaryCtxRetain(new CUcontext(), device), "cuDevicePrimaryCtxRetain");
    }
  }

  /**
   * Opens GPU {@code ordinal}.
   *
   * @throws CudaException naming what is missing when no CUDA device can be used here
   */
  public static CudaDevice open(int ordinal) {
    if (!CudaDriver.available()) {
      throw new CudaException("no CUDA device: " + CudaDriver.unavailableReason());
    }
    if (ordinal < 0 || ordinal >= CudaDriver.deviceCount()) {
      throw new CudaException("no GPU " + ordinal + ": the driver sees " + CudaDriver.deviceCount());
    }
    return new CudaDevice(ordinal);
  }

  private static byte[] readPtx(String resource) {
    try (InputStream in = CudaDevice.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new CudaException("the kernels' PTX " + resource + " is not on the class path");
      }
      byte[] text = in.readAllBytes();
      byte[] terminated = new byte[text.length + 1]; // the driver reads a C string
      System.arraycopy(text, 0, terminated, 0, text.length);
      return terminated;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private int attribute(int attribute) {
    int[] value = new int[1];
    check(cuDeviceGetAttribute(value, attribute, device), "cuDeviceGetAttribute(" + attribute + ")");
    return value[0];
  }

  /** "GPU-" and the 16 bytes as a UUID (8-4-4-4-12 hex digits), as nvidia-smi names the device. */
  static String uuidName(byte[] bytes) {
    StringBuilder s = new StringBuilder("GPU-");
    for (int i = 0; i < 16; i++) {
      if (i == 4 || i == 6 || i == 8 || i == 10) {
        s.append('-');
      }
      s.append(String.format("%02x", bytes[i] & 0xff));
    }
    return s.toString();
  }

  @Override
  public String id() {
    return uuid;
  }

  @Override
  public void makeCurrent() {
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  }

  @Override
  public long allocate(long bytes) {
    Address pointer = new Address();
    check(cuMemAlloc(pointer, bytes), "cuMemAlloc(" + bytes + ")");
    return pointer.value();
  }

  @Override
  public void free(long address) {
    check(cuMemFree(Address.at(address)), "cuMemFree");
  }

  @Override
  public void copyToDevice(long to, MemorySegment host) {
    for (long at = 0; at < host.byteSize(); at += CHUNK) {
      long n = Math.min(CHUNK, host.byteSize() - at);
      check(cuMemcpyHtoD(Address.at(to + at), hostPointer(host.asSlice(at, n)), n), "cuMemcpyHtoD");
    }
  }

  @Override
  public void copyToHost(MemorySegment host, long from) {
    for (long at = 0; at < host.byteSize(); at += CHUNK) {
      long n = Math.min(CHUNK, host.byteSize() - at);
      check(cuMemcpyDtoH(hostPointer(host.asSlice(at, n)), Address.at(from + at), n), "cuMemcpyDtoH");
    }
  }

  /** JCuda's pointer to host memory: a native segment through its ByteBuffer, a Java array's at its offset. */
  private static Pointer hostPointer(MemorySegment host) {
    if (host.isNative()) {
      return Pointer.to(host.asByteBuffer());
    }
    Object array = host.heapBase().orElseThrow();
    Pointer base = switch (array) {
      case float[] a -> Pointer.to(a);
      case int[] a -> Pointer.to(a);
      case byte[] a -> Pointer.to(a);
      case short[] a -> Pointer.to(a);
      case long[] a -> Pointer.to(a);
      default -> throw new IllegalArgumentException("no copy from a " + array.getClass().getSimpleName());
    };
    return base.withByteOffset(host.address());
  }

  @Override
  public void zero(long at, long bytes) {
    check(cuMemsetD8(Address.at(at), (byte) 0, bytes), "cuMemsetD8");
  }

  @Override
  public void launch(String function, LaunchShapes.Shape shape, Object... args) {
    Pointer[] parameters = new Pointer[args.length];
    for (int i = 0; i < args.length; i++) {
      parameters[i] = switch (args[i]) {
        case Gpu.Ptr p -> Pointer.to(new long[] {p.address()}); // a pointer parameter is its 8 bytes
        case Integer v -> Pointer.to(new int[] {v});
        case Long v -> Pointer.to(new long[] {v});
        case Float v -> Pointer.to(new float[] {v});
        default -> throw new IllegalArgumentException("no kernel argument of type " + args[i].getClass());
      };
    }
    check(
        cuLaunchKernel(kernel(function), shape.gridX(), shape.gridY(), 1, shape.block(), 1, 1, 0, stream,
            Pointer.to(parameters), null),
        "cuLaunchKernel(" + function + ", " + shape + ")");
  }

  @Override
  public void synchronize() {
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  }

  /** A CUDA event on this device's stream. */
  private static final class DeviceEvent implements Event {
    private final CUevent event = new CUevent();
    private boolean closed;

    @Override
    public double millisSince(Event earlier) {
      check(cuEventSynchronize(event), "cuEventSynchronize");
      float[] ms = new float[1];
      check(cuEventElapsedTime(ms, ((DeviceEvent) earlier).event, event), "cuEventElapsedTime");
      return ms[0];
    }

    @Override
    public void close() {
      if (!closed) {
        closed = true;
        cuEventDestroy(event);
      }
    }
  }

  @Override
  public Event record() {
    DeviceEvent e = new DeviceEvent();
    check(cuEventCreate(e.event, CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate");
    check(cuEventRecord(e.event, stream), "cuEventRecord");
    return e;
  }

  @Override
  public void beginCapture() {
    check(cuStreamBeginCapture(stream, CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
  }

  @Override
  public Graph endCapture() {
    CUgraph graph = new CUgraph();
    check(cuStreamEndCapture(stream, graph), "cuStreamEndCapture");
    CUgraphExec exec = new CUgraphExec();
    int result = cuGraphInstantiate(exec, graph, 0);
    if (result != CUresult.CUDA_SUCCESS) {
      cuGraphDestroy(graph);
      throw new CudaException("cuGraphInstantiate", result);
    }
    return new Graph() {
      private boolean closed;

      @Override
      public void launch() {
        check(cuGraphLaunch(exec, stream), "cuGraphLaunch");
      }

      @Override
      public void close() {
        if (!closed) {
          closed = true;
          cuGraphExecDestroy(exec);
          cuGraphDestroy(graph);
        }
      }
    };
  }

  @Override
  public long mapHost(MemorySegment host) {
    Pointer pointer = Pointer.to(host.asByteBuffer());
    int result = cuMemHostRegister(pointer, host.byteSize(),
        JCudaDriver.CU_MEMHOSTREGISTER_DEVICEMAP | JCudaDriver.CU_MEMHOSTREGISTER_PORTABLE);
    if (result != CUresult.CUDA_SUCCESS) {
      throw new CudaException("mapping host memory into the GPU (cuMemHostRegister of " + host.byteSize()
          + " bytes at 0x" + Long.toHexString(host.address()) + ")", result);
    }
    Address device = new Address();
    result = cuMemHostGetDevicePointer(device, pointer, 0);
    if (result != CUresult.CUDA_SUCCESS) {
      cuMemHostUnregister(pointer);
      throw new CudaException("cuMemHostGetDevicePointer", result);
    }
    return device.value();
  }

  @Override
  public void unmapHost(MemorySegment host) {
    check(cuMemHostUnregister(Pointer.to(host.asByteBuffer())), "cuMemHostUnregister");
  }

  @Override
  public MemorySegment allocatePinned(long bytes) {
    Pointer pointer = new Pointer();
    check(cuMemAllocHost(pointer, bytes), "cuMemAllocHost(" + bytes + ")");
    MemorySegment segment = MemorySegment.ofBuffer(pointer.getByteBuffer(0, bytes));
    pinned.put(segment.address(), pointer);
    return segment;
  }

  @Override
  public void freePinned(MemorySegment segment) {
    Pointer pointer = pinned.remove(segment.address());
    if (pointer != null) {
      cuMemFreeHost(pointer);
    }
  }

  private CUfunction kernel(String function) {
    return functions.computeIfAbsent(function, f -> {
      CUfunction handle = new CUfunction();
      check(cuModuleGetFunction(handle, module, f), "cuModuleGetFunction(" + f + ") in " + ptx);
      return handle;
    });
  }

  public int ordinal() {
    return ordinal;
  }

  public String name() {
    return name;
  }

  /** Compute capability as "major.minor". */
  public String computeCapability() {
    return major + "." + minor;
  }

  public long totalMemory() {
    return totalMemory;
  }

  /** The PTX resource this device runs. */
  public String ptx() {
    return ptx;
  }

  @Override
  public String toString() {
    return "GPU " + ordinal + " " + name + " (sm_" + major + minor + ", " + totalMemory / (1L << 20) + " MiB, driver CUDA "
        + CudaDriver.version() + ")";
  }

  /** Waits for queued work, then frees the stream and module and releases the context. Idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    makeCurrent();
    cuStreamSynchronize(stream);
    cuModuleUnload(module);
    cuStreamDestroy(stream);
    cuDevicePrimaryCtxRelease(device);
  }
}
