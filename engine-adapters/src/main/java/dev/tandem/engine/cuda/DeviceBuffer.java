package dev.tandem.engine.cuda;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * A range of device memory. Its owner is whoever obtained it ({@link DevicePool#acquire} or {@link
 * DevicePool#allocate}): closing it hands the memory back to where it came from, exactly once
 * (later closes do nothing); it must not be used after. Copies back to the host return once the
 * bytes have arrived, after every kernel issued before them.
 *
 * <p>Threading: as {@link Gpu}; close may come from any thread holding the device.
 */
public final class DeviceBuffer implements AutoCloseable {
  private final Gpu gpu;
  private final long address;
  private final long bytes;
  private final Consumer<DeviceBuffer> release;
  private final AtomicBoolean closed = new AtomicBoolean();

  DeviceBuffer(Gpu gpu, long address, long bytes, Consumer<DeviceBuffer> release) {
    this.gpu = gpu;
    this.address = address;
    this.bytes = bytes;
    this.release = release;
  }

  /** The buffer's device address. */
  public long address() {
    return address;
  }

  /** A kernel argument pointing {@code byteOffset} bytes into the buffer. */
  public Gpu.Ptr at(long byteOffset) {
    if (byteOffset < 0 || byteOffset > bytes) {
      throw new IndexOutOfBoundsException("offset " + byteOffset + " in a device buffer of " + bytes);
    }
    return new Gpu.Ptr(address + byteOffset);
  }

  /** A kernel argument pointing at the buffer's start. */
  public Gpu.Ptr ptr() {
    return new Gpu.Ptr(address);
  }

  /** Capacity in bytes (a pooled buffer may be larger than asked for). */
  public long bytes() {
    return bytes;
  }

  public void copyFrom(float[] host, int count) {
    copyFrom(MemorySegment.ofArray(host).asSlice(0, (long) count * Float.BYTES));
  }

  public void copyFrom(int[] host, int count) {
    copyFrom(MemorySegment.ofArray(host).asSlice(0, (long) count * Integer.BYTES));
  }

  /** Copies all of {@code host} to the start of this buffer. */
  public void copyFrom(MemorySegment host) {
    fits(host.byteSize());
    gpu.copyToDevice(address, host);
  }

  public void copyTo(float[] host, int count) {
    copyTo(MemorySegment.ofArray(host).asSlice(0, (long) count * Float.BYTES));
  }

  /** Copies the first {@code host.length} bytes back. */
  public void copyTo(byte[] host) {
    copyTo(MemorySegment.ofArray(host));
  }

  /** Fills all of {@code host} from the start of this buffer. */
  public void copyTo(MemorySegment host) {
    fits(host.byteSize());
    gpu.copyToHost(host, address);
  }

  /** Sets every byte to zero. */
  public void zero() {
    fits(0);
    gpu.zero(address, bytes);
  }

  private void fits(long n) {
    if (closed.get()) {
      throw new IllegalStateException("device buffer used after close");
    }
    if (n > bytes) {
      throw new IllegalArgumentException(n + " bytes do not fit a device buffer of " + bytes);
    }
  }

  /** Hands the memory back (to its pool, or to the device); once. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      release.accept(this);
    }
  }
}
