package dev.tandem.frontend.http;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObjectAggregator;

/** Aggregates request bodies up to a limit; a larger body gets a 413 in OpenAI's error shape. */
final class JsonErrorAggregator extends HttpObjectAggregator {
  private final int maxBytes;

  JsonErrorAggregator(int maxBytes) {
    super(maxBytes);
    this.maxBytes = maxBytes;
  }

  @Override
  protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
    ApiException e =
        new ApiException(
            413,
            "The request body is larger than this server accepts (" + maxBytes + " bytes).",
            "invalid_request_error",
            null,
            "request_too_large");
    // The rest of the body is still on the wire: answer and close the connection.
    HttpResponses.error(ctx, e, false).addListener(ChannelFutureListener.CLOSE);
  }
}
