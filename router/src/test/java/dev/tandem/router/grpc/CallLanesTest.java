package dev.tandem.router.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.tandem.common.GenerationException;
import dev.tandem.common.GenerationRequest;
import dev.tandem.common.SamplingParams;
import dev.tandem.common.StopConditions;
import dev.tandem.common.TokenChunk;
import dev.tandem.proto.worker.v1.DescribeRequest;
import dev.tandem.proto.worker.v1.FinishReason;
import dev.tandem.proto.worker.v1.GenerateChunk;
import dev.tandem.proto.worker.v1.GenerateRequest;
import dev.tandem.proto.worker.v1.LoadReport;
import dev.tandem.proto.worker.v1.WatchLoadRequest;
import dev.tandem.proto.worker.v1.WorkerGrpc;
import dev.tandem.proto.worker.v1.WorkerRegistration;
import dev.tandem.proto.worker.v1.WorkerRole;
import dev.tandem.router.TokenListener;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Lane channels over real gRPC (Netty, loopback TCP): a generation started on one of the lent
 * loops goes out on that loop's own connection and its chunks are heard on that same thread; one
 * started elsewhere takes the main channel; the budget of lane channels holds across workers.
 */
class CallLanesTest {
  private static final Context.Key<SocketAddress> PEER = Context.key("peer");

  private final EventLoopGroup loops = new MultiThreadIoEventLoopGroup(3, NioIoHandler.newFactory());
  private final List<Server> servers = new ArrayList<>();
  /** The client connection (remote address) each generate call came in on, in order. */
  private final List<SocketAddress> callers = new CopyOnWriteArrayList<>();
  private WorkerPool pool;

  private String worker(String id) throws Exception {
    var service = new WorkerGrpc.WorkerImplBase() {
      @Override
      public void describe(DescribeRequest r, StreamObserver<WorkerRegistration> out) {
        out.onNext(WorkerRegistration.newBuilder().setWorkerId(id).setRole(WorkerRole.WORKER_ROLE_AGGREGATED)
            .setBlockSize(16).setModelName("m").build());
        out.onCompleted();
      }

      @Override
      public void watchLoad(WatchLoadRequest r, StreamObserver<LoadReport> out) {
        FakeLoadStream.serve(r, out, () -> LoadReport.newBuilder().setWorkerId(id).setKvBlocksTotal(100).build(), () -> false);
      }

      @Override
      public void generate(GenerateRequest r, StreamObserver<GenerateChunk> out) {
        callers.add(PEER.get());
        out.onNext(GenerateChunk.newBuilder().addTokenIds(7).setWorkerId(id).build());
        out.onNext(GenerateChunk.newBuilder().addTokenIds(8).setFinishReason(FinishReason.FINISH_REASON_LENGTH).build());
        out.onCompleted();
      }
    };
    ServerInterceptor peer = new ServerInterceptor() {
      @Override
      public <Q, A> ServerCall.Listener<Q> interceptCall(ServerCall<Q, A> call, Metadata headers, ServerCallHandler<Q, A> next) {
        Context c = Context.current().withValue(PEER, call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR));
        return Contexts.interceptCall(c, call, headers, next);
      }
    };
    Server server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
        .directExecutor().addService(ServerInterceptors.intercept(service, peer)).build().start();
    servers.add(server);
    return "127.0.0.1:" + server.getPort();
  }

  private WorkerPool pool(CallLanes lanes) {
    pool = new WorkerPool(16, Duration.ofSeconds(5), Duration.ofMillis(100), null, lanes);
    return pool;
  }

  @AfterEach
  void stop() {
    if (pool != null) {
      pool.close();
    }
    servers.forEach(Server::shutdownNow);
    loops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
  }

  /** Runs a generation started on {@code where} (null: this thread); returns the threads that heard its chunks and its end. */
  private static List<Thread> generate(WorkerClient client, EventLoop where) throws Exception {
    List<Thread> heard = new CopyOnWriteArrayList<>();
    CompletableFuture<Void> done = new CompletableFuture<>();
    TokenListener listener = new TokenListener() {
      @Override
      public void onChunk(TokenChunk chunk) {
        heard.add(Thread.currentThread());
      }

      @Override
      public void onError(GenerationException error) {
        done.completeExceptionally(error);
      }

      @Override
      public void onCompleted() {
        heard.add(Thread.currentThread());
        done.complete(null);
      }
    };
    var request = new GenerationRequest("r", new int[] {1, 2, 3}, SamplingParams.greedy(), StopConditions.maxTokens(2));
    if (where == null) {
      client.generate(request, listener);
    } else {
      where.submit(() -> client.generate(request, listener)).get(5, TimeUnit.SECONDS);
    }
    done.get(5, TimeUnit.SECONDS);
    return heard;
  }

  private static Thread threadOf(EventLoop loop) throws Exception {
    return loop.submit(Thread::currentThread).get(5, TimeUnit.SECONDS);
  }

  @Test
  void aGenerationStartedOnALoopIsHeardOnThatLoopOverItsOwnConnection() throws Exception {
    CallLanes lanes = new CallLanes(loops, NioSocketChannel.class, CallLanes.DEFAULT_MAX_CHANNELS);
    WorkerClient client = pool(lanes).add(worker("w0"));
    assertEquals(3, lanes.opened(), "one lane channel per loop");
    List<SocketAddress> perLoop = new ArrayList<>();
    for (int round = 0; round < 2; round++) {
      for (int i = 0; i < lanes.size(); i++) {
        EventLoop loop = lanes.loop(i);
        Thread loopThread = threadOf(loop);
        List<Thread> heard = generate(client, loop);
        assertEquals(3, heard.size(), "two chunks and the end");
        for (Thread t : heard) {
          assertEquals(loopThread, t, "chunks are heard on the loop that started the call, not handed over");
        }
        SocketAddress caller = callers.getLast();
        if (round == 0) {
          perLoop.add(caller);
        } else {
          assertEquals(perLoop.get(i), caller, "a loop's calls share its lane's connection");
        }
      }
    }
    assertEquals(3, new HashSet<>(perLoop).size(), "each loop has a connection of its own");

    Set<Thread> loopThreads = new HashSet<>();
    for (int i = 0; i < lanes.size(); i++) {
      loopThreads.add(threadOf(lanes.loop(i)));
    }
    List<Thread> heard = generate(client, null);
    assertFalse(heard.stream().anyMatch(loopThreads::contains), "a call from elsewhere takes the main channel: " + heard);
    assertFalse(perLoop.contains(callers.getLast()), "over the main channel's own connection");

    pool.close();
    assertEquals(0, lanes.opened(), "closing the worker gives its lanes back");
  }

  @Test
  void workersPastTheBudgetUseTheirMainChannel() throws Exception {
    CallLanes lanes = new CallLanes(loops, NioSocketChannel.class, 4); // room for one worker's three, not two
    WorkerPool p = pool(lanes);
    WorkerClient first = p.add(worker("w0"));
    WorkerClient second = p.add(worker("w1"));
    assertEquals(3, lanes.opened());
    EventLoop loop = lanes.loop(0);
    Thread loopThread = threadOf(loop);
    assertTrue(generate(first, loop).stream().allMatch(loopThread::equals));
    List<Thread> heard = generate(second, loop);
    assertNotNull(heard);
    assertFalse(heard.contains(loopThread), "the second worker has no lane: its chunks come on the main channel's thread");
    p.close();
    assertEquals(0, lanes.opened());
  }
}
