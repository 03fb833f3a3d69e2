package dev.tandem.router.grpc;

import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.util.concurrent.EventExecutor;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Event loops the frontend lends to the router's worker channels, so that a token crosses no
 * thread between the worker's socket and the client's. Each worker gets one gRPC channel per loop,
 * bound to that loop; a generation started on a loop (the HTTP connection's, which is where the
 * frontend starts it) goes out on that loop's channel, and its chunks are read, decoded and written
 * to the HTTP connection by that same thread. Without lanes the call's transport has threads of its
 * own, and every request and every chunk is handed from one thread to another and back.
 *
 * <p>Bounded: each worker costs one connection per loop, so at most {@code maxChannels} lane
 * channels are opened in all; workers admitted past that get none and use their main channel
 * (correct, one hand-off slower each way).
 *
 * <p>Thread-safe.
 */
public final class CallLanes {
  /** Lane channels in all (connections from this frontend), beyond which workers get none. */
  public static final int DEFAULT_MAX_CHANNELS = 4096;

  private final EventLoop[] loops;
  private final Class<? extends Channel> channelType;
  private final int maxChannels;
  private final AtomicInteger opened = new AtomicInteger();

  /**
   * @param group the loops (the frontend's HTTP connections' loops)
   * @param channelType the client socket channel class that runs on them (epoll or NIO)
   * @throws IllegalArgumentException if {@code maxChannels} is negative or the group has no loops
   */
  public CallLanes(EventLoopGroup group, Class<? extends Channel> channelType, int maxChannels) {
    if (maxChannels < 0) {
      throw new IllegalArgumentException("maxChannels must be >= 0, was " + maxChannels);
    }
    List<EventLoop> all = new ArrayList<>();
    for (EventExecutor e : group) {
      all.add((EventLoop) e);
    }
    if (all.isEmpty()) {
      throw new IllegalArgumentException("an event loop group without loops");
    }
    this.loops = all.toArray(EventLoop[]::new);
    this.channelType = channelType;
    this.maxChannels = maxChannels;
  }

  /** How many loops (so how many lane channels a worker takes). */
  public int size() {
    return loops.length;
  }

  EventLoop loop(int i) {
    return loops[i];
  }

  Class<? extends Channel> channelType() {
    return channelType;
  }

  /** The index of the loop the calling thread runs, or -1 if it runs none of them. */
  int current() {
    for (int i = 0; i < loops.length; i++) {
      if (loops[i].inEventLoop()) {
        return i;
      }
    }
    return -1;
  }

  /** Takes one worker's channels out of the budget; false (nothing taken) if they do not fit. */
  boolean reserve() {
    while (true) {
      int now = opened.get();
      if (now + loops.length > maxChannels) {
        return false;
      }
      if (opened.compareAndSet(now, now + loops.length)) {
        return true;
      }
    }
  }

  /** Gives one worker's channels back (it left). */
  void release() {
    opened.addAndGet(-loops.length);
  }

  /** The budget of lane channels in all. */
  public int maxChannels() {
    return maxChannels;
  }

  /** Lane channels open now. */
  public int opened() {
    return opened.get();
  }
}
