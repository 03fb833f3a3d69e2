package dev.tandem.frontend.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.frontend.openai.ResponseJson;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/** Writes complete HTTP responses: JSON bodies, OpenAI-shaped errors, plain text. */
final class HttpResponses {
  private HttpResponses() {}

  static ChannelFuture json(ChannelHandlerContext ctx, int status, ObjectNode body, boolean keepAlive) {
    return write(ctx, status, ResponseJson.bytes(body), "application/json", keepAlive);
  }

  static ChannelFuture error(ChannelHandlerContext ctx, ApiException e, boolean keepAlive) {
    return error(ctx, e, keepAlive, null);
  }

  /** An error with one more header ({@code Allow}, {@code WWW-Authenticate}, {@code Retry-After}); null: none. */
  static ChannelFuture error(ChannelHandlerContext ctx, ApiException e, boolean keepAlive, Map.Entry<CharSequence, String> header) {
    return write(ctx, e.status(), ResponseJson.bytes(ResponseJson.error(e)), "application/json", keepAlive, header);
  }

  static ChannelFuture text(ChannelHandlerContext ctx, int status, String body, String contentType, boolean keepAlive) {
    return write(ctx, status, body.getBytes(StandardCharsets.UTF_8), contentType, keepAlive);
  }

  static ChannelFuture write(ChannelHandlerContext ctx, int status, byte[] body, String contentType, boolean keepAlive) {
    return write(ctx, status, body, contentType, keepAlive, null);
  }

  private static ChannelFuture write(
      ChannelHandlerContext ctx, int status, byte[] body, String contentType, boolean keepAlive, Map.Entry<CharSequence, String> header) {
    FullHttpResponse response =
        new DefaultFullHttpResponse(
            HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status), Unpooled.wrappedBuffer(body));
    response.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
    response.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
    if (header != null) {
      response.headers().set(header.getKey(), header.getValue());
    }
    HttpUtil.setKeepAlive(response, keepAlive);
    if (!keepAlive) {
      response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    }
    return ctx.writeAndFlush(response);
  }
}
