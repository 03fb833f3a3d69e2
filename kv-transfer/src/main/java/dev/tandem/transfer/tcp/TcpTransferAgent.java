package dev.tandem.transfer.tcp;

import dev.tandem.common.PageMemory;
import dev.tandem.transfer.MemoryDescriptor;
import dev.tandem.transfer.Regions;
import dev.tandem.transfer.RegisteredMemory;
import dev.tandem.transfer.TransferAgent;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.GlobalEventExecutor;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.ssl.SslHandler;
import dev.tandem.transfer.TransferTls;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Transfers over TCP with Netty: the agent serves reads of its registered (native) memory on a
 * port, and reads from peers over one pipelined connection per peer. With {@link TransferTls},
 * every connection is mutual TLS: the agent serves only peers with a deployment certificate and
 * reads only from agents that have one. Every read names its region's key. Thread-safe.
 */
public final class TcpTransferAgent implements TransferAgent {
  private final Arena owned = Arena.ofShared();
  private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
  private final Regions regions = new Regions();
  private final TransferTls tls; // null: plain TCP
  private final Channel server;
  private final String address;
  private final Map<String, CompletableFuture<TcpPeerConnection>> peers = new ConcurrentHashMap<>();
  private final ChannelGroup served = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
  private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

  public TcpTransferAgent(String host) {
    this(host, 0);
  }

  /** Serving on {@code host:port} (0: any free port), plain TCP. */
  public TcpTransferAgent(String host, int port) {
    this(host, port, null);
  }

  /** Serving on {@code host:port} (0: any free port); under mutual TLS unless {@code tls} is null. */
  public TcpTransferAgent(String host, int port, TransferTls tls) {
    this.tls = tls;
    this.server =
        new ServerBootstrap()
            .group(group)
            .channel(NioServerSocketChannel.class)
            .childOption(ChannelOption.TCP_NODELAY, true)
            .childHandler(
                new ChannelInitializer<SocketChannel>() {
                  @Override
                  protected void initChannel(SocketChannel ch) {
                    served.add(ch);
                    if (tls != null) {
                      ch.pipeline().addLast(tls.serverHandler(ch.alloc()));
                    }
                    ch.pipeline().addLast(new TcpServerHandler(regions));
                  }
                })
            .bind(new InetSocketAddress(host, port))
            .syncUninterruptibly()
            .channel();
    this.address = host + ":" + ((InetSocketAddress) server.localAddress()).getPort();
  }

  @Override
  public String backend() {
    return "tcp";
  }

  @Override
  public String address() {
    return address;
  }

  @Override
  public MemoryDescriptor register(MemorySegment segment) {
    Regions.requireNative(segment, "tcp");
    return regions.add(address, segment);
  }

  @Override
  public RegisteredMemory allocate(long bytes) {
    MemorySegment segment = PageMemory.allocate(owned, bytes); // whole pages: a GPU worker maps KV memory into the device
    return new RegisteredMemory(segment, register(segment));
  }

  @Override
  public void deregister(MemoryDescriptor region) {
    regions.remove(region);
  }

  @Override
  public CompletableFuture<Void> read(
      List<MemoryDescriptor> remote, List<MemorySegment> local, Duration timeout, TransferListener listener) {
    Regions.checkPairs(remote, local);
    List<CompletableFuture<Void>> parts = new ArrayList<>(remote.size());
    List<CompletableFuture<Void>> reported = new ArrayList<>(remote.size());
    List<CompletableFuture<Void>> wire = new java.util.concurrent.CopyOnWriteArrayList<>();
    Map<String, List<Integer>> byPeer = new java.util.LinkedHashMap<>();
    for (int i = 0; i < remote.size(); i++) {
      CompletableFuture<Void> part = new CompletableFuture<>();
      int index = i;
      // The read completes only after every descriptor has been reported.
      reported.add(listener == null ? part : part.thenRun(() -> listener.descriptorDone(index)));
      parts.add(part);
      byPeer.computeIfAbsent(remote.get(i).agentAddress(), k -> new ArrayList<>()).add(i);
    }
    // Requests go out in descriptor order on each peer's connection, so they land in that order.
    byPeer.forEach((peer, indices) -> connection(peer).whenComplete((c, e) -> {
      for (int i : indices) {
        if (e != null) {
          parts.get(i).completeExceptionally(e);
          continue;
        }
        MemoryDescriptor d = remote.get(i);
        CompletableFuture<Void> w = c.read(d.regionId(), d.key(), d.offset(), local.get(i));
        wire.add(w);
        CompletableFuture<Void> part = parts.get(i);
        w.whenComplete((v, err) -> {
          if (err != null) {
            part.completeExceptionally(err);
          } else {
            part.complete(null);
          }
        });
      }
    }));
    CompletableFuture<Void> all = CompletableFuture.allOf(reported.toArray(CompletableFuture[]::new));
    // Fail fast on the first error instead of waiting for the others.
    CompletableFuture<Void> result = new CompletableFuture<>();
    all.whenComplete((v, e) -> {
      if (e == null) {
        result.complete(null);
      } else {
        result.completeExceptionally(e);
      }
    });
    parts.forEach(p -> p.exceptionally(e -> {
      result.completeExceptionally(e);
      return null;
    }));
    result.orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS);
    // On failure or timeout, stop writing into the caller's memory before the caller hears of it.
    CompletableFuture<Void> settled = new CompletableFuture<>();
    result.whenComplete((v, e) -> {
      if (e != null) {
        wire.forEach(w -> w.completeExceptionally(e));
        settled.completeExceptionally(e);
      } else {
        settled.complete(null);
      }
    });
    return settled;
  }

  private CompletableFuture<TcpPeerConnection> connection(String peer) {
    CompletableFuture<TcpPeerConnection> existing = peers.get(peer);
    if (existing != null && (!existing.isDone() || (!existing.isCompletedExceptionally() && existing.join().isOpen()))) {
      return existing;
    }
    CompletableFuture<TcpPeerConnection> fresh = new CompletableFuture<>();
    peers.put(peer, fresh);
    int colon = peer.lastIndexOf(':');
    TcpPeerConnection handler = new TcpPeerConnection(peer);
    CompletableFuture<SslHandler> secured = new CompletableFuture<>();
    ChannelFuture connect;
    try {
      int port = Integer.parseInt(peer.substring(colon + 1));
      connect =
          new Bootstrap()
              .group(group)
              .channel(NioSocketChannel.class)
              .option(ChannelOption.TCP_NODELAY, true)
              .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 5_000)
              .handler(
                  new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                      if (tls != null) {
                        SslHandler ssl = tls.clientHandler(ch.alloc(), port);
                        ch.pipeline().addLast(ssl);
                        secured.complete(ssl);
                      }
                      ch.pipeline().addLast(handler);
                    }
                  })
              .connect(peer.substring(0, colon), port);
    } catch (RuntimeException e) {
      fresh.completeExceptionally(new IOException("bad KV transfer peer address '" + peer + "'", e));
      return fresh;
    }
    connect.addListener(f -> {
      if (!f.isSuccess()) {
        peers.remove(peer, fresh);
        fresh.completeExceptionally(new IOException("cannot connect to KV transfer peer " + peer, f.cause()));
      } else if (tls == null) {
        handler.attach(connect.channel());
        fresh.complete(handler);
      } else {
        // Usable once the peer has proved it belongs to the deployment.
        secured.join().handshakeFuture().addListener(h -> {
          if (h.isSuccess()) {
            handler.attach(connect.channel());
            fresh.complete(handler);
          } else {
            peers.remove(peer, fresh);
            connect.channel().close();
            fresh.completeExceptionally(new IOException("TLS handshake with KV transfer peer " + peer + " failed: " + h.cause().getMessage(), h.cause()));
          }
        });
      }
    });
    return fresh;
  }

  /** Stops serving at once: open connections are dropped, as if the process had died. Idempotent. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    server.close().syncUninterruptibly();
    served.close().syncUninterruptibly();
    peers.values().forEach(f -> f.thenAccept(TcpPeerConnection::close));
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    owned.close(); // after the event loops: nothing sends from it any more
  }
}
