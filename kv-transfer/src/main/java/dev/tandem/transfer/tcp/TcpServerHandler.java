package dev.tandem.transfer.tcp;

import dev.tandem.transfer.Regions;
import dev.tandem.transfer.TransferTls;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves read requests from registered memory. The data goes to the socket straight from the
 * registered native segment (a wrapped view, no copy onto the heap).
 */
final class TcpServerHandler extends ByteToMessageDecoder {
  private static final Logger log = LoggerFactory.getLogger(TcpServerHandler.class);

  private final Regions regions;
  private volatile Throwable failure;

  TcpServerHandler(Regions regions) {
    this.regions = regions;
  }

  @Override
  protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
    while (in.readableBytes() >= TcpWire.REQUEST_BYTES) {
      int type = in.readInt();
      long requestId = in.readLong();
      long regionId = in.readLong();
      long key = in.readLong();
      long offset = in.readLong();
      long length = in.readLong();
      if (type != TcpWire.READ) {
        log.warn("closing a KV transfer connection from {}: not a read request", ctx.channel().remoteAddress());
        ctx.close();
        return;
      }
      MemorySegment data;
      try {
        data = regions.resolve(regionId, key, offset, length);
      } catch (IllegalArgumentException e) {
        byte[] msg = e.getMessage().getBytes(StandardCharsets.UTF_8);
        ByteBuf header = ctx.alloc().buffer(TcpWire.RESPONSE_HEADER_BYTES + msg.length);
        header.writeInt(TcpWire.ERROR).writeLong(requestId).writeLong(msg.length).writeBytes(msg);
        ctx.write(header);
        continue;
      }
      ByteBuf header = ctx.alloc().buffer(TcpWire.RESPONSE_HEADER_BYTES);
      header.writeInt(TcpWire.DATA).writeLong(requestId).writeLong(length);
      ctx.write(header);
      for (long at = 0; at < length; at += TcpWire.MAX_CHUNK) {
        long n = Math.min(TcpWire.MAX_CHUNK, length - at);
        ctx.write(Unpooled.wrappedBuffer(data.asSlice(at, n).asByteBuffer()));
      }
    }
    ctx.flush();
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    if (cause instanceof java.io.IOException) {
      log.debug("KV transfer connection from {} failed", ctx.channel().remoteAddress(), cause);
    } else if (TransferTls.isTlsFailure(cause)) {
      log.info("refused a KV transfer connection from {}: {}", ctx.channel().remoteAddress(), cause.getCause() != null ? cause.getCause().getMessage() : cause.getMessage());
    } else {
      failure = cause; // not the peer's doing: a bug here
      log.warn("closing a KV transfer connection from {} on an unexpected error", ctx.channel().remoteAddress(), cause);
    }
    ctx.close();
  }

  /** The last error on this connection that was not an I/O failure (a bug, not a peer's doing); null if none. */
  Throwable failure() {
    return failure;
  }
}
