package herald.http.server;

import herald.http.config.HandlerMode;
import herald.http.config.ServerConfig;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A running server. {@link #start} binds and returns once accepting; {@link #stop} stops accepting, lets
 * in-flight exchanges finish up to the shutdown timeout, closes every connection (WebSockets get a 1001
 * close frame) and releases the port. {@code stop} is idempotent and returns the same future every time.
 */
public final class HeraldServer implements Closeable {
    /** Fired down every pipeline when the server starts draining. */
    public static final Object SHUTDOWN_EVENT = new Object();
    /** At the end of a stop, how long at least to wait for WebSocket on-close callbacks and streams to finish. */
    private static final long CALLBACK_WAIT_MS = 1000;

    private final ServerContext context;
    private final EventLoopGroup group;
    /** The TCP server channel; null for a Unix-socket-only server. */
    private final Channel serverChannel;
    /** The Unix domain socket server channel; null when there is none. */
    private final Channel unixChannel;
    private final String transport;
    private final ScheduledFuture<?> dateTask;
    private CompletableFuture<Void> stopped;

    private HeraldServer(ServerContext context, EventLoopGroup group, Channel serverChannel, Channel unixChannel,
                         String transport) {
        this.context = context;
        this.group = group;
        this.serverChannel = serverChannel;
        this.unixChannel = unixChannel;
        this.transport = transport;
        this.dateTask = HttpDate.start(group);
    }

    /**
     * Binds {@code config.host:config.port} (unless {@code config.tcp} is off) and {@code config.unixSocket} (when
     * set) and starts serving {@code hooks.handler}. A Unix socket path held by a live socket or by a file that is
     * not a socket throws {@link UnixSocketFile.InUseException}; a stale socket file is replaced.
     */
    public static HeraldServer start(ServerConfig config, Hooks hooks) throws InterruptedException, IOException {
        Transports t = Transports.choose(config.transport);
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(config.ioThreads,
            new DefaultThreadFactory("herald-http-io"), t.io());
        ServerContext ctx = new ServerContext(config, hooks, handlerExecutor(config),
            Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("herald-http-stream-", 0).factory()),
            new DefaultChannelGroup("herald-http", GlobalEventExecutor.INSTANCE));
        Channel tcp = null;
        try {
            ServerInitializer init = new ServerInitializer(ctx);
            WriteBufferWaterMark marks = new WriteBufferWaterMark(config.maxWriteBufferBytes / 2,
                config.maxWriteBufferBytes);
            ctx.serverPort = -1;
            if (config.tcp) {
                tcp = new ServerBootstrap()
                    .group(group)
                    .channel(t.tcp())
                    .option(ChannelOption.SO_BACKLOG, 1024)
                    .option(ChannelOption.SO_REUSEADDR, true)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childOption(ChannelOption.SO_KEEPALIVE, true)
                    .childOption(ChannelOption.ALLOCATOR, PooledByteBufAllocator.DEFAULT)
                    .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, marks)
                    .childHandler(init)
                    .bind(config.host, config.port).sync().channel();
                ctx.serverPort = ((InetSocketAddress) tcp.localAddress()).getPort();
            }
            Channel unix = null;
            if (config.unixSocket != null) {
                Path path = Path.of(config.unixSocket);
                UnixSocketFile.prepare(path);
                unix = new ServerBootstrap()
                    .group(group)
                    .channel(t.unix())
                    .option(ChannelOption.SO_BACKLOG, 1024)
                    .childOption(ChannelOption.ALLOCATOR, PooledByteBufAllocator.DEFAULT)
                    .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, marks)
                    .childHandler(init)
                    .bind(t.unixAddress(path)).sync().channel();
                try {
                    UnixSocketFile.permit(path, config.unixSocketPermissions);
                } catch (IOException | RuntimeException e) {
                    unix.close().awaitUninterruptibly();
                    UnixSocketFile.remove(path);
                    throw e;
                }
            }
            return new HeraldServer(ctx, group, tcp, unix, t.name());
        } catch (InterruptedException | IOException | RuntimeException e) {
            if (tcp != null) {
                tcp.close().awaitUninterruptibly();
            }
            group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
            shutdownExecutors(ctx);
            throw e;
        }
    }

    private static ExecutorService handlerExecutor(ServerConfig config) {
        if (config.mode == HandlerMode.EVENT_LOOP) {
            return null;
        }
        if (config.mode != HandlerMode.WORKER_POOL) {
            return null; // virtual threads are started by each event loop's Handoff, untracked: pending counts them
        }
        ThreadPoolExecutor pool = new ThreadPoolExecutor(config.workerThreads, config.workerThreads, 60,
            TimeUnit.SECONDS, new LinkedBlockingQueue<>(), new DefaultThreadFactory("herald-http-worker", true));
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    /** The bound port (the real one when started with port 0); -1 for a Unix-socket-only server. */
    public int port() {
        return context.serverPort;
    }

    /** The access log, or null when it is off. */
    public AccessLog accessLog() {
        return context.accessLog;
    }

    /** The Unix domain socket path served, or null. */
    public String unixSocket() {
        return context.config.unixSocket;
    }

    /** "epoll", "kqueue" or "nio". */
    public String transport() {
        return transport;
    }

    /** Open connections right now. */
    public int connections() {
        return context.connections.get();
    }

    /** Handler invocations waiting for or running on the handler executor. */
    public int pending() {
        return context.pending.get();
    }

    /** The handler queue's figures: depth, wait, 503s at {@code :max-pending}. */
    public HandlerStats stats() {
        return context.stats;
    }

    /** The server's configuration. */
    public ServerConfig config() {
        return context.config;
    }

    /** Graceful stop; idempotent: every call returns the same future. */
    public synchronized CompletableFuture<Void> stop() {
        if (stopped == null) {
            stopped = new CompletableFuture<>();
            Thread t = new Thread(this::drainAndClose, "herald-http-stop");
            t.setDaemon(true);
            t.start();
        }
        return stopped;
    }

    @Override
    public void close() {
        stop().join();
    }

    private void drainAndClose() {
        try {
            context.draining = true;
            if (serverChannel != null) {
                serverChannel.close().awaitUninterruptibly();
            }
            if (unixChannel != null) {
                unixChannel.close().awaitUninterruptibly();
                UnixSocketFile.remove(Path.of(context.config.unixSocket));
            }
            for (Channel ch : context.channels) {
                ch.eventLoop().execute(() -> ch.pipeline().fireUserEventTriggered(SHUTDOWN_EVENT));
            }
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(context.config.shutdownTimeoutMs);
            while (!context.channels.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            context.closing = true;
            context.channels.close().awaitUninterruptibly();
            HttpDate.stop(dateTask);
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
            shutdownExecutors(context);
            if (context.accessLog != null) {
                context.accessLog.close();
            }
            // WebSocket on-close callbacks (1001) and streams cut by the close: done before stop completes
            long left = Math.max(TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()), CALLBACK_WAIT_MS);
            context.blockingExecutor.awaitTermination(left, TimeUnit.MILLISECONDS);
            stopped.complete(null);
        } catch (Throwable t) {
            stopped.completeExceptionally(t);
        }
    }

    private static void shutdownExecutors(ServerContext ctx) {
        if (ctx.handlerExecutor != null) {
            ctx.handlerExecutor.shutdownNow();
        }
        ctx.blockingExecutor.shutdown();
    }
}
