package dev.tandem.frontend.http;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Closes a connection at once when {@code max} are already open, so that idle or slow clients
 * cannot exhaust the process's file descriptors. Shared by every connection; thread-safe.
 */
@ChannelHandler.Sharable
final class ConnectionLimit extends ChannelInboundHandlerAdapter {
  private static final Logger log = LoggerFactory.getLogger(ConnectionLimit.class);
  private final int max;
  private final AtomicInteger open = new AtomicInteger();
  private volatile long lastWarning;

  ConnectionLimit(int max) {
    this.max = max;
  }

  int open() {
    return open.get();
  }

  @Override
  public void channelActive(ChannelHandlerContext ctx) throws Exception {
    if (open.incrementAndGet() > max) {
      long now = System.nanoTime();
      if (now - lastWarning > 10_000_000_000L) {
        lastWarning = now;
        log.warn("{} connections open (--max-connections {}): closing new ones", open.get() - 1, max);
      }
      ctx.close();
      return;
    }
    super.channelActive(ctx);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    open.decrementAndGet();
    super.channelInactive(ctx);
  }
}
