package herald.http.server;

import herald.http.config.HandlerMode;
import herald.http.config.ServerConfig;
import io.netty.channel.EventLoop;
import io.netty.channel.group.ChannelGroup;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/** State shared by the server and all its connections: config, hooks, executors, counters. */
final class ServerContext {
    final ServerConfig config;
    final Hooks hooks;
    /** The worker pool (worker-pool mode); null otherwise. */
    final ExecutorService handlerExecutor;
    /** Unnamed, untracked virtual threads for handlers (virtual-threads mode); null otherwise. */
    final ThreadFactory virtualThreads;
    /** Handlers run off the event loop (virtual threads or the worker pool). */
    final boolean offLoop;
    /** Runs streamed response bodies and WebSocket callbacks (virtual threads). */
    final ExecutorService blockingExecutor;
    final ChannelGroup channels;
    /** Handler invocations dispatched to the executor and not yet answered (backpressure). */
    final AtomicInteger pending = new AtomicInteger();
    final AtomicInteger connections = new AtomicInteger();
    /** Open connections by client address (only addresses with one open). */
    private final ConcurrentHashMap<java.net.InetAddress, Integer> perAddress = new ConcurrentHashMap<>();
    /** Queue depth and wait of the handlers run off the event loop. */
    final HandlerStats stats = new HandlerStats();
    private final ConcurrentHashMap<EventLoop, Handoff> handoffs = new ConcurrentHashMap<>();
    volatile boolean draining;
    /** The drain is over: connections still open are being closed; handlers still running are interrupted. */
    volatile boolean closing;
    volatile int serverPort;
    /** The access log; null when off (one null check per answer). */
    final AccessLog accessLog;
    /** "Server: ...\r\n", or null when no Server header is sent. */
    final byte[] serverLine;

    ServerContext(ServerConfig config, Hooks hooks, ExecutorService handlerExecutor,
                  ExecutorService blockingExecutor, ChannelGroup channels) {
        this.config = config;
        this.hooks = hooks;
        this.handlerExecutor = handlerExecutor;
        this.virtualThreads = config.mode == HandlerMode.VIRTUAL_THREADS
            // unnamed: a thread name costs ~130 B per request (bench/results/http-profile-notes.md)
            ? Thread.ofVirtual().factory() : null;
        this.offLoop = config.mode != HandlerMode.EVENT_LOOP;
        this.blockingExecutor = blockingExecutor;
        this.channels = channels;
        this.accessLog = hooks.accessLog;
        this.serverLine = config.serverHeader == null || config.serverHeader.isEmpty() ? null
            : ("Server: " + config.serverHeader + "\r\n").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
    }

    /** The hand-off between {@code loop} and the handler threads (one per event loop). */
    Handoff handoff(EventLoop loop) {
        return handoffs.computeIfAbsent(loop, l -> new Handoff(l, virtualThreads, handlerExecutor));
    }

    /** Counts a new connection from {@code a}; false (not counted) when {@code :max-connections-per-address} are open. */
    boolean acquire(java.net.InetAddress a) {
        int limit = config.maxConnectionsPerAddress;
        boolean[] ok = {true};
        perAddress.compute(a, (k, n) -> {
            if (n == null) {
                return 1;
            }
            ok[0] = n < limit;
            return ok[0] ? n + 1 : n;
        });
        return ok[0];
    }

    /** A connection from {@code a} counted by {@link #acquire} closed. */
    void release(java.net.InetAddress a) {
        perAddress.computeIfPresent(a, (k, n) -> n == 1 ? null : n - 1);
    }

    /** Hands {@code t} to the user's error logger; a failing logger falls back to stderr. */
    void logError(Throwable t, Object request) {
        try {
            hooks.errorLogger.invoke(t, request);
        } catch (Throwable e) {
            System.err.println("herald.http: error logger failed: " + e + " while logging " + t);
        }
    }
}
