package dev.tandem.transfer.tcp;

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
 * port, and reads from peers over one pipelined connection per peer. Thread-safe.
 */
public final class TcpTransferAgent implements TransferAgent {
  private final Arena owned = Arena.ofShared();
  private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
  private final Regions regions = new Regions();
  private final Channel server;
  private final String address;
  private final Map<String, CompletableFuture<TcpPeerConnection>> peers = new ConcurrentHashMap<>();
  private final ChannelGroup served = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
  private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();

  public TcpTransferAgent(String host) {
    this(host, 0);
  }

  /** Serving on {@code host:port} (0: any free port). */
  public TcpTransferAgent(String host, int port) {
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
    MemorySegment segment = owned.allocate(bytes, 64);
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
        CompletableFuture<Void> w = c.read(d.regionId(), d.offset(), local.get(i));
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
    ChannelFuture connect;
    try {
      connect =
          new Bootstrap()
              .group(group)
              .channel(NioSocketChannel.class)
              .option(ChannelOption.TCP_NODELAY, true)
              .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 5_000)
              .handler(handler)
              .connect(peer.substring(0, colon), Integer.parseInt(peer.substring(colon + 1)));
    } catch (RuntimeException e) {
      fresh.completeExceptionally(new IOException("bad KV transfer peer address '" + peer + "'", e));
      return fresh;
    }
    connect.addListener(f -> {
      if (f.isSuccess()) {
        handler.attach(connect.channel());
        fresh.complete(handler);
      } else {
        peers.remove(peer, fresh);
        fresh.completeExceptionally(new IOException("cannot connect to KV transfer peer " + peer, f.cause()));
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
