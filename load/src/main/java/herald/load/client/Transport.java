package herald.load.client;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.FastThreadLocalThread;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/** Picks the native epoll transport when it loads, NIO otherwise, and makes event loops and bootstraps. */
public final class Transport {
  private Transport() {}

  /** True when the epoll transport is used. */
  public static boolean epoll() {
    return Epoll.isAvailable() && !Boolean.getBoolean("herald.load.nio");
  }

  /** An event loop group of {@code threads} daemon threads named herald-load-N. */
  public static EventLoopGroup group(int threads) {
    IoHandlerFactory io = epoll() ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
    AtomicInteger n = new AtomicInteger();
    // FastThreadLocalThread: Netty's thread-locals (the Recycler's pools, the allocator's caches) are then an
    // array index instead of a ThreadLocal lookup on every write
    ThreadFactory tf = r -> {
      Thread t = new FastThreadLocalThread(r, "herald-load-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
    return new MultiThreadIoEventLoopGroup(threads, tf, io);
  }

  /** A bootstrap for client connections with TCP_NODELAY, bound to nothing yet. */
  public static Bootstrap bootstrap(int connectTimeoutMillis) {
    return new Bootstrap()
        .channel(epoll() ? EpollSocketChannel.class : NioSocketChannel.class)
        .option(ChannelOption.TCP_NODELAY, true)
        // pooled, with one reused read buffer per loop: Netty 4.2's default adaptive allocator cost ~14% of
        // the event loop here, the pool's allocate/free per read ~9%
        .option(ChannelOption.ALLOCATOR, ReadBufferAllocator.INSTANCE)
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, connectTimeoutMillis);
  }
}
