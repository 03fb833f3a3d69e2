package dev.tandem.transfer.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One connection to a peer agent: pipelines read requests and streams each response's bytes
 * straight into its destination segment as they arrive (no buffering of whole payloads).
 *
 * <p>Threading: responses are handled on the channel's event loop; {@link #read} may be called
 * from any thread.
 */
final class TcpPeerConnection extends ByteToMessageDecoder {
  /** A read waiting for its bytes. */
  private static final class Pending {
    final MemorySegment target;
    final CompletableFuture<Void> done = new CompletableFuture<>();
    long written;

    Pending(MemorySegment target) {
      this.target = target;
    }
  }

  private final String peer;
  private final AtomicLong nextId = new AtomicLong(1);
  private final Map<Long, Pending> pending = new ConcurrentHashMap<>();
  private volatile Channel channel;
  // Decoder state (event loop only).
  private int type;
  private long currentId;
  private long remaining = -1;
  private Pending current;
  private ByteBuf errorMessage;

  TcpPeerConnection(String peer) {
    this.peer = peer;
  }

  void attach(Channel channel) {
    this.channel = channel;
  }

  void close() {
    Channel ch = channel;
    if (ch != null) {
      ch.close();
    }
  }

  boolean isOpen() {
    return channel != null && channel.isActive();
  }

  /**
   * Asks for {@code length} bytes of a region; they land in {@code target}. Completing the returned
   * future early (cancelling it) stops further writes into {@code target}: the rest is skipped.
   */
  CompletableFuture<Void> read(long regionId, long key, long offset, MemorySegment target) {
    long id = nextId.getAndIncrement();
    Pending p = new Pending(target);
    pending.put(id, p);
    p.done.whenComplete((v, e) -> pending.remove(id));
    Channel ch = channel;
    if (ch == null || !ch.isActive()) {
      p.done.completeExceptionally(new IOException("no connection to KV transfer peer " + peer));
      return p.done;
    }
    ByteBuf req = ch.alloc().buffer(TcpWire.REQUEST_BYTES);
    req.writeInt(TcpWire.READ).writeLong(id).writeLong(regionId).writeLong(key).writeLong(offset).writeLong(target.byteSize());
    ch.writeAndFlush(req).addListener(f -> {
      if (!f.isSuccess()) {
        p.done.completeExceptionally(new IOException("cannot send to KV transfer peer " + peer, f.cause()));
      }
    });
    return p.done;
  }

  @Override
  protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
    while (in.isReadable()) {
      if (remaining < 0) {
        if (in.readableBytes() < TcpWire.RESPONSE_HEADER_BYTES) {
          return;
        }
        type = in.readInt();
        currentId = in.readLong();
        remaining = in.readLong();
        current = pending.get(currentId); // null if it timed out: its bytes are skipped
        if (type == TcpWire.ERROR) {
          errorMessage = ctx.alloc().buffer((int) remaining);
        }
      }
      int n = (int) Math.min(remaining, in.readableBytes());
      if (type == TcpWire.ERROR) {
        errorMessage.writeBytes(in, n);
      } else if (current != null && !current.done.isDone() && n > 0) {
        in.getBytes(in.readerIndex(), current.target.asSlice(current.written, n).asByteBuffer());
        in.skipBytes(n);
        current.written += n;
      } else {
        in.skipBytes(n);
      }
      remaining -= n;
      if (remaining == 0) {
        finishResponse();
      }
    }
  }

  private void finishResponse() {
    if (type == TcpWire.ERROR) {
      String msg = errorMessage.toString(StandardCharsets.UTF_8);
      errorMessage.release();
      errorMessage = null;
      if (current != null) {
        current.done.completeExceptionally(new IOException("KV transfer peer " + peer + " refused the read: " + msg));
      }
    } else if (current != null) {
      current.done.complete(null);
    }
    remaining = -1;
    current = null;
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    failAll(new IOException("connection to KV transfer peer " + peer + " closed"));
    super.channelInactive(ctx);
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    failAll(new IOException("connection to KV transfer peer " + peer + " failed: " + cause, cause));
    ctx.close();
  }

  private void failAll(IOException error) {
    for (Pending p : List.copyOf(pending.values())) {
      p.done.completeExceptionally(error);
    }
    if (errorMessage != null) {
      errorMessage.release();
      errorMessage = null;
    }
  }
}
