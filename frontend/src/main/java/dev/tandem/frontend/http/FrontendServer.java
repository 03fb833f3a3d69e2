package dev.tandem.frontend.http;

import dev.tandem.common.SamplingParams;
import dev.tandem.frontend.FrontendMetrics;
import dev.tandem.frontend.ServedModel;
import dev.tandem.router.RequestRouter;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpServerCodec;
import java.net.InetSocketAddress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The OpenAI-compatible HTTP server. Closing it stops accepting and closes every connection. */
public final class FrontendServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(FrontendServer.class);

  /** Where to listen and how large a request body may be. Port 0 picks a free port. */
  /**
   * Where to listen, the largest request body, how long a request waits for a worker when none
   * serves at all (a pool scaled to zero coming back, workers still starting) before a 503 (zero
   * fails at once), and who may call and how much at once ({@link Admission}).
   */
  /**
   * @param reasoningParser {@code --reasoning-parser}: auto, none, qwen3, deepseek_r1
   * @param toolCallParser {@code --tool-call-parser}: auto, none, hermes, qwen3, llama3_json, mistral, pythonic, phi4_mini_json
   * @param migrationLimit {@code --migration-limit}: times a choice may move to another worker when
   *     its worker fails mid-stream (0: never)
   * @param constrainedToolCalls {@code --tool-call-constraint}: auto (true) holds tool calls under
   *     {@code tool_choice: auto} to their tools' schemas where it can; none (false) leaves them free
   */
  public record Config(
      String host, int port, int maxBodyBytes, java.time.Duration workerWait, Admission admission,
      String reasoningParser, String toolCallParser, int migrationLimit, String generationConfig, String chatTemplate,
      boolean constrainedToolCalls) {
    /** {@code chatTemplate}: the text of {@code --chat-template}, or null for the model's own. */
    public Config {
      if (!generationConfig.equals("auto") && !generationConfig.equals("none")) {
        throw new IllegalArgumentException("--generation-config: expected auto or none, was '" + generationConfig + "'");
      }
    }

    /** Tool calls under {@code tool_choice: auto} held to their schemas where the engine can. */
    public Config(
        String host, int port, int maxBodyBytes, java.time.Duration workerWait, Admission admission,
        String reasoningParser, String toolCallParser, int migrationLimit, String generationConfig, String chatTemplate) {
      this(host, port, maxBodyBytes, workerWait, admission, reasoningParser, toolCallParser, migrationLimit, generationConfig, chatTemplate,
          true);
    }

    /** The model's own chat template. */
    public Config(
        String host, int port, int maxBodyBytes, java.time.Duration workerWait, Admission admission,
        String reasoningParser, String toolCallParser, int migrationLimit, String generationConfig) {
      this(host, port, maxBodyBytes, workerWait, admission, reasoningParser, toolCallParser, migrationLimit, generationConfig, null);
    }

    /** The model's generation_config.json's sampling defaults in use ({@code auto}). */
    public Config(
        String host, int port, int maxBodyBytes, java.time.Duration workerWait, Admission admission,
        String reasoningParser, String toolCallParser, int migrationLimit) {
      this(host, port, maxBodyBytes, workerWait, admission, reasoningParser, toolCallParser, migrationLimit, "auto");
    }

    public Config(
        String host, int port, int maxBodyBytes, java.time.Duration workerWait, Admission admission,
        String reasoningParser, String toolCallParser) {
      this(host, port, maxBodyBytes, workerWait, admission, reasoningParser, toolCallParser, DEFAULT_MIGRATION_LIMIT);
    }

    public Config(String host, int port, int maxBodyBytes) {
      this(host, port, maxBodyBytes, java.time.Duration.ZERO, Admission.open());
    }

    public Config(String host, int port, int maxBodyBytes, java.time.Duration workerWait) {
      this(host, port, maxBodyBytes, workerWait, Admission.open());
    }

    public Config(String host, int port, int maxBodyBytes, java.time.Duration workerWait, Admission admission) {
      this(host, port, maxBodyBytes, workerWait, admission, "auto", "auto");
    }

    public static Config defaults() {
      return new Config("0.0.0.0", 8000, 32 << 20);
    }
  }

  /** Dynamo's default: a choice may move to another worker three times. */
  public static final int DEFAULT_MIGRATION_LIMIT = 3;

  private final EventLoopGroup boss;
  /** Null when the caller lent the loops (it closes them). */
  private final EventLoops ownLoops;
  private final Channel channel;

  private final PromptPreparation preparation;

  private FrontendServer(EventLoopGroup boss, EventLoops ownLoops, Channel channel, PromptPreparation preparation) {
    this.boss = boss;
    this.ownLoops = ownLoops;
    this.channel = channel;
    this.preparation = preparation;
  }

  /** As {@link #start(Config, ServedModel, RequestRouter, FrontendMetrics, EventLoops)} on loops of its own. */
  public static FrontendServer start(Config config, ServedModel served, RequestRouter router, FrontendMetrics metrics) {
    return start(config, served, router, metrics, null);
  }

  /**
   * Serves on {@code loops}' event loops (null: loops of its own, closed with the server); lent
   * loops stay open when the server closes.
   *
   * @throws IllegalArgumentException naming the flag when a parser name is unknown
   */
  public static FrontendServer start(
      Config config, ServedModel served, RequestRouter router, FrontendMetrics metrics, EventLoops loops) {
    // The adapters requests may name are the router's: they load and unload while it serves.
    ServedModel parsed = served.withParsers(config.reasoningParser(), config.toolCallParser(), config.constrainedToolCalls())
        .withLoraAdapters(router::loraAdapters);
    log.info("output parsers: reasoning {}, tool calls {}", parsed.parsers().reasoning().flagName(), parsed.parsers().toolCalls().flagName());
    ServedModel model = config.generationConfig().equals("none") ? parsed.withSamplingDefaults(SamplingParams.DEFAULTS) : parsed;
    if (!model.samplingDefaults().equals(SamplingParams.DEFAULTS)) {
      SamplingParams d = model.samplingDefaults();
      log.info("requests that set none get the model's generation_config.json sampling: temperature {}, top_p {}, top_k {}, min_p {},"
          + " repetition_penalty {} (--generation-config none: OpenAI's defaults)", d.temperature(), d.topP(), d.topK(), d.minP(),
          d.repetitionPenalty());
    }
    EventLoops own = loops == null ? EventLoops.create() : null;
    EventLoops io = loops == null ? own : loops;
    EventLoopGroup boss = io.newBossGroup();
    EventLoopGroup workers = io.group();
    long created = System.currentTimeMillis() / 1000;
    Admission admission = config.admission();
    ConnectionLimit connections = admission.maxConnections() > 0 ? new ConnectionLimit(admission.maxConnections()) : null;
    dev.tandem.frontend.openai.RequestParser promptLength = new dev.tandem.frontend.openai.RequestParser(model); // shared: it only reads the model
    PromptPreparation preparation = PromptPreparation.forThisMachine();
    try {
      Channel channel =
          new ServerBootstrap()
              .group(boss, workers)
              .channel(io.serverChannelType())
              .option(ChannelOption.SO_BACKLOG, 1024)
              .childOption(ChannelOption.TCP_NODELAY, true)
              .childHandler(
                  new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                      if (connections != null) {
                        ch.pipeline().addLast(connections);
                      }
                      ch.pipeline()
                          .addLast(new HttpServerCodec())
                          .addLast(new RequestTimeouts(admission.requestReadTimeout(), admission.idleTimeout()))
                          .addLast(new EarlyPromptRefusal(promptLength, admission, metrics))
                          .addLast(new JsonErrorAggregator(config.maxBodyBytes()))
                          .addLast(new HttpApiHandler(
                              model, router, metrics, created, config.workerWait(), admission, preparation, config.migrationLimit()));
                    }
                  })
              .bind(new InetSocketAddress(config.host(), config.port()))
              .syncUninterruptibly()
              .channel();
      FrontendServer server = new FrontendServer(boss, own, channel, preparation);
      log.info("frontend serving {} on http://{}:{} ({} transport{})", model.name(), config.host(), server.port(), io.transport(),
          admission.keys().enabled() ? ", " + admission.keys().count() + " API key(s) required" : "");
      return server;
    } catch (RuntimeException e) {
      boss.shutdownGracefully();
      if (own != null) {
        own.close();
      }
      preparation.close();
      throw new IllegalStateException(
          "cannot listen on " + config.host() + ":" + config.port() + ": " + e.getMessage(), e);
    }
  }

  public int port() {
    return ((InetSocketAddress) channel.localAddress()).getPort();
  }

  public void awaitClose() throws InterruptedException {
    channel.closeFuture().sync();
  }

  /**
   * Stops accepting connections, waits up to {@code timeout} for the requests in flight
   * ({@code metrics}' count) to be answered, then closes. Returns whether all were.
   */
  public boolean drain(java.time.Duration timeout, dev.tandem.frontend.FrontendMetrics metrics) throws InterruptedException {
    channel.close().syncUninterruptibly();
    log.info("frontend draining: {} request(s) in flight; waiting up to {} s", metrics.inflight(), timeout.toSeconds());
    long deadline = System.nanoTime() + timeout.toNanos();
    while (metrics.inflight() > 0 && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    boolean idle = metrics.inflight() == 0;
    if (!idle) {
      log.warn("frontend drain timed out with {} request(s) in flight; closing them", metrics.inflight());
    }
    close();
    return idle;
  }

  @Override
  public void close() {
    channel.close().syncUninterruptibly();
    boss.shutdownGracefully().syncUninterruptibly();
    if (ownLoops != null) {
      ownLoops.close();
    }
    preparation.close();
  }
}
