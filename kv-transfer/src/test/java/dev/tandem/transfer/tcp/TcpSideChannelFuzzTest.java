package dev.tandem.transfer.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.Regions;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Fuzz target for the tcp transfer agent's server side, where any peer that reaches its port
 * speaks: every byte sequence is answered with data of a registered region within its bounds, an
 * error frame naming the problem, or a closed connection — never an exception out of the handler,
 * never a byte outside a region. Committed inputs run with every test run; {@code .ci/fuzz}
 * fuzzes it for a bounded time.
 */
class TcpSideChannelFuzzTest {
  private static final Arena ARENA = Arena.ofShared();
  private static final MemorySegment REGION = ARENA.allocate(4096);
  private static final Regions REGIONS = new Regions();
  private static final MemoryDescriptor D = REGIONS.add("fuzz:1", REGION);

  static {
    for (int i = 0; i < 4096; i++) {
      REGION.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) i);
    }
  }

  @FuzzTest(maxDuration = "30s")
  void readRequests(byte[] bytes) {
    TcpServerHandler handler = new TcpServerHandler(REGIONS);
    EmbeddedChannel ch = new EmbeddedChannel(handler);
    ByteBuf in = Unpooled.buffer(bytes.length);
    in.writeBytes(bytes);
    // The region's id and key at their places in every request, often enough to reach the data path.
    for (int at = 12; at + 8 <= in.writerIndex() && (bytes[0] & 1) == 1; at += TcpWire.REQUEST_BYTES) {
      in.setLong(at, D.regionId());
      if (at + 16 <= in.writerIndex() && (bytes[0] & 2) == 2) {
        in.setLong(at + 8, D.key());
      }
    }
    ch.writeInbound(in);
    ch.checkException(); // nothing escaped the handler
    if (handler.failure() != null) {
      throw new AssertionError("the handler failed on the request bytes", handler.failure());
    }
    for (Object o; (o = ch.readOutbound()) != null; ) {
      ByteBuf out = (ByteBuf) o;
      if (out.readableBytes() >= TcpWire.RESPONSE_HEADER_BYTES && out.getInt(0) == TcpWire.ERROR) {
        long len = out.getLong(12);
        assertEquals(TcpWire.RESPONSE_HEADER_BYTES + len, out.readableBytes(), "an error frame carries its message");
      } else if (out.readableBytes() >= TcpWire.RESPONSE_HEADER_BYTES && out.getInt(0) == TcpWire.DATA) {
        assertTrue(out.getLong(12) <= REGION.byteSize(), "never more than the region holds");
      }
      out.release();
    }
    ch.finishAndReleaseAll();
  }
}
