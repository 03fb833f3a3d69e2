package dev.tandem.frontend.http;

import dev.tandem.frontend.openai.ResponseJson;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.LastHttpContent;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Per connection, between the HTTP codec and the aggregator: a request must arrive whole (headers
 * and body) within {@code readTimeout} of its first byte, or it gets a 408 and the connection
 * closes (a body shorter than its Content-Length, slowloris); a connection with no request for
 * {@code idleTimeout} is closed (a request in progress or a response streaming keeps it open; the
 * last part of a response written starts the idle clock again).
 * Runs on the connection's event loop only.
 */
final class RequestTimeouts extends ChannelDuplexHandler {
  private final Duration readTimeout;
  private final Duration idleTimeout;
  private ScheduledFuture<?> reading;
  private ScheduledFuture<?> idle;
  private boolean busy; // a request is arriving or being answered

  RequestTimeouts(Duration readTimeout, Duration idleTimeout) {
    this.readTimeout = readTimeout;
    this.idleTimeout = idleTimeout;
  }

  @Override
  public void channelActive(ChannelHandlerContext ctx) throws Exception {
    armIdle(ctx);
    super.channelActive(ctx);
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
    if (msg instanceof HttpRequest) {
      busy = true;
      cancelIdle();
      if (!readTimeout.isZero() && reading == null) {
        reading = ctx.executor().schedule(() -> timedOut(ctx), readTimeout.toMillis(), TimeUnit.MILLISECONDS);
      }
    }
    if (msg instanceof LastHttpContent && reading != null) {
      reading.cancel(false);
      reading = null;
    }
    super.channelRead(ctx, msg);
  }

  /** A response's last part going out: the connection may idle again. */
  @Override
  public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) throws Exception {
    if (msg instanceof LastHttpContent) {
      busy = false;
      armIdle(ctx);
    }
    super.write(ctx, msg, promise);
  }

  private void timedOut(ChannelHandlerContext ctx) {
    reading = null;
    ApiException e = new ApiException(408, "The request did not arrive whole within " + readTimeout.toSeconds()
        + " s; closing the connection.", "invalid_request_error", null, "request_timeout");
    HttpResponses.json(ctx, 408, ResponseJson.error(e), false).addListener(ChannelFutureListener.CLOSE);
  }

  private void armIdle(ChannelHandlerContext ctx) {
    cancelIdle();
    if (!idleTimeout.isZero() && !busy) {
      idle = ctx.executor().schedule(() -> {
        if (!busy) {
          ctx.close();
        }
      }, idleTimeout.toMillis(), TimeUnit.MILLISECONDS);
    }
  }

  private void cancelIdle() {
    if (idle != null) {
      idle.cancel(false);
      idle = null;
    }
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    cancelIdle();
    if (reading != null) {
      reading.cancel(false);
      reading = null;
    }
    super.channelInactive(ctx);
  }
}
