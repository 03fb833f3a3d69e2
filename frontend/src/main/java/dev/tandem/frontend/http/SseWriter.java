package dev.tandem.frontend.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tandem.frontend.openai.ContentChunks;
import dev.tandem.frontend.openai.ResponseJson;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;

/**
 * Server-sent events on one HTTP response: the headers, {@code data: <json>} events, and the
 * closing {@code data: [DONE]}. With {@code include_usage} every event but the usage and error
 * ones carries {@code "usage": null}, as OpenAI's do. Writes without flushing; {@link #flush}
 * and {@link #end} flush.
 *
 * <p>Threading: the channel's event loop only.
 */
final class SseWriter {
  private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] DATA = "data: ".getBytes(StandardCharsets.US_ASCII);

  private final ChannelHandlerContext ctx;
  private final boolean keepAlive;
  private final boolean includeUsage;
  private boolean headersSent;

  SseWriter(ChannelHandlerContext ctx, boolean keepAlive, boolean includeUsage) {
    this.ctx = ctx;
    this.keepAlive = keepAlive;
    this.includeUsage = includeUsage;
  }

  boolean headersSent() {
    return headersSent;
  }

  void sendHeaders() {
    HttpResponse response = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
    response.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream; charset=utf-8");
    response.headers().set(HttpHeaderNames.CACHE_CONTROL, "no-cache");
    HttpUtil.setTransferEncodingChunked(response, true);
    HttpUtil.setKeepAlive(response, keepAlive);
    ctx.write(response);
    headersSent = true;
  }

  void event(ObjectNode node) {
    if (includeUsage && !node.has("usage") && !node.has("error")) {
      node.putNull("usage");
    }
    write(DATA, ResponseJson.bytes(node));
  }

  /** {@code event: <name>} then {@code data: <json>}: the Responses API's typed events. */
  void namedEvent(String name, ObjectNode node) {
    write(("event: " + name + "\ndata: ").getBytes(StandardCharsets.UTF_8), ResponseJson.bytes(node));
  }

  /** {@code head}, the JSON, and the blank line that ends an event. */
  private void write(byte[] head, byte[] json) {
    byte[] event = new byte[head.length + json.length + 2];
    System.arraycopy(head, 0, event, 0, head.length);
    System.arraycopy(json, 0, event, head.length, json.length);
    event[event.length - 2] = '\n';
    event[event.length - 1] = '\n';
    ctx.write(new DefaultHttpContent(Unpooled.wrappedBuffer(event)));
  }

  /** A content event of choice {@code index}, encoded by {@code chunks} straight into a pooled buffer. */
  void content(ContentChunks chunks, int index, String text) {
    ByteBuf buf = ctx.alloc().buffer(chunks.sizeHint(text));
    chunks.write(buf, index, text);
    ctx.write(new DefaultHttpContent(buf));
  }

  void flush() {
    ctx.flush();
  }

  /** {@code data: [DONE]}, the end of the response, and the connection closed unless kept alive. */
  void end() {
    ctx.write(new DefaultHttpContent(Unpooled.wrappedBuffer(DONE)));
    ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT).addListener(closeUnlessKeepAlive(keepAlive));
  }

  /**
   * The end of a stream whose last event says it is complete (the Responses API's {@code
   * response.completed}): no {@code data: [DONE]}.
   */
  void endEvents() {
    ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT).addListener(closeUnlessKeepAlive(keepAlive));
  }

  /**
   * The end of a stream that failed: its error event was the last event, and no {@code data:
   * [DONE]} follows (a client must not take it for a complete answer). The HTTP response itself
   * ends properly and the connection stays as the request asked (kept alive by default): closing it
   * after a complete body let a client put the connection back in its pool and send its next
   * request into the close (Java's HttpClient then failed that request with "header parser
   * received no bytes"; ChaosTest saw it), and ending without the last chunk would fail every
   * client that reads to the end.
   */
  void abort() {
    ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT).addListener(closeUnlessKeepAlive(keepAlive));
  }

  static ChannelFutureListener closeUnlessKeepAlive(boolean keepAlive) {
    return keepAlive ? f -> {} : ChannelFutureListener.CLOSE;
  }
}
