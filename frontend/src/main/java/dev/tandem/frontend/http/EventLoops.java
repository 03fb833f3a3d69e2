package dev.tandem.frontend.http;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;

/**
 * The frontend's I/O threads: its HTTP connections run on these loops, and, lent to the router
 * ({@code dev.tandem.router.grpc.CallLanes}), so do its gRPC calls to workers, so that a request and
 * its tokens stay on one thread from the worker's socket to the client's. Linux's native epoll
 * transport where it loads (fewer copies and syscalls), NIO elsewhere. Whoever creates it closes
 * it, after the server and the router's channels.
 */
public final class EventLoops implements AutoCloseable {
  private final boolean epoll;
  private final IoHandlerFactory io;
  private final EventLoopGroup group;

  private EventLoops(boolean epoll, IoHandlerFactory io, EventLoopGroup group) {
    this.epoll = epoll;
    this.io = io;
    this.group = group;
  }

  /** Netty's default number of loops (twice the CPUs). */
  public static EventLoops create() {
    boolean epoll = Epoll.isAvailable();
    IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
    return new EventLoops(epoll, io, new MultiThreadIoEventLoopGroup(io));
  }

  public EventLoopGroup group() {
    return group;
  }

  /** A client socket channel class that runs on these loops. */
  public Class<? extends SocketChannel> socketChannelType() {
    return epoll ? EpollSocketChannel.class : NioSocketChannel.class;
  }

  Class<? extends ServerChannel> serverChannelType() {
    return epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
  }

  /** A one-thread group of the same transport (the server's accepting loop). */
  EventLoopGroup newBossGroup() {
    return new MultiThreadIoEventLoopGroup(1, io);
  }

  String transport() {
    return epoll ? "epoll" : "nio";
  }

  @Override
  public void close() {
    group.shutdownGracefully().syncUninterruptibly();
  }
}
