package dev.tandem.frontend.http;

import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.openai.PromptTextCounter;
import dev.tandem.frontend.openai.RequestParser;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.util.ReferenceCountUtil;

/**
 * Refuses a generation whose prompt cannot fit the context window while its body is still
 * arriving: each chunk's bytes go through a {@link PromptTextCounter} on the event loop (no copy),
 * and once the prompt text already holds more tokens than the window whatever it says, the client
 * gets the 400 at once and the connection is closed, the rest of the body never read or kept —
 * unless the body named {@code truncate_prompt_tokens} before that point (a request that asks for
 * truncation after its prompt text is still refused here once the text alone is over the window
 * times the longest token's length in characters).
 * Requests that are not generations, or whose API key is wrong (the handler answers those 401),
 * pass untouched. One per connection; runs on its event loop.
 */
final class EarlyPromptRefusal extends ChannelInboundHandlerAdapter {
  /** How long a refused connection keeps reading (and dropping) what its client still sends. */
  private static final long LINGER_SECONDS = 2;

  private final RequestParser parser;
  private final Admission admission;
  private final FrontendMetrics metrics;
  private PromptTextCounter counter; // null: not scanning this request
  private String endpoint;
  private boolean refused;
  private long nextCheck;

  EarlyPromptRefusal(RequestParser parser, Admission admission, FrontendMetrics metrics) {
    this.parser = parser;
    this.admission = admission;
    this.metrics = metrics;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (refused) {
      ReferenceCountUtil.release(msg); // the rest of a refused body: dropped
      return;
    }
    if (msg instanceof HttpRequest request) {
      String path = request.uri().split("\\?", 2)[0];
      boolean generation = path.equals("/v1/chat/completions") || path.equals("/v1/completions");
      counter = generation && request.method().equals(HttpMethod.POST) && admission.keys().admits(request) ? new PromptTextCounter() : null;
      endpoint = generation ? path.substring(4).replace('/', '_') : null;
      nextCheck = 0;
    }
    if (msg instanceof HttpContent content && counter != null) {
      content.content().forEachByte(counter::accept);
      if (counter.chars() >= nextCheck && !counter.truncates()) {
        try {
          parser.refuseIfCannotFit(counter.chars(), counter.param());
          nextCheck = counter.chars() + 4096; // cheap: checked every 4 KiB of text
        } catch (ApiException e) {
          refused = true;
          content.release();
          metrics.requestFinished(endpoint, e.status());
          // Lingering close: a socket closed with the client's bytes still unread sends a reset,
          // which can destroy the answer before the client reads it. So stop writing (the client
          // sees the end), keep dropping what it still sends, and close after a grace.
          HttpResponses.error(ctx, e, false).addListener(f -> {
            if (ctx.channel() instanceof io.netty.channel.socket.DuplexChannel duplex) {
              duplex.shutdownOutput();
              ctx.executor().schedule(() -> ctx.close(), LINGER_SECONDS, java.util.concurrent.TimeUnit.SECONDS);
            } else {
              ctx.close();
            }
          });
          return;
        }
      }
    }
    ctx.fireChannelRead(msg);
  }
}
