package herald.http.server;

import herald.http.config.ServerConfig;
import io.netty.channel.group.ChannelGroup;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicInteger;

/** State shared by the server and all its connections: config, hooks, executors, counters. */
final class ServerContext {
    final ServerConfig config;
    final Hooks hooks;
    /** Runs handlers; null in event-loop mode. */
    final ExecutorService handlerExecutor;
    /** Runs streamed response bodies and WebSocket callbacks (virtual threads). */
    final ExecutorService blockingExecutor;
    final ChannelGroup channels;
    /** Handler invocations dispatched to the executor and not yet answered (backpressure). */
    final AtomicInteger pending = new AtomicInteger();
    final AtomicInteger connections = new AtomicInteger();
    volatile boolean draining;
    volatile int serverPort;
    /** "Server: ...\r\n", or null when no Server header is sent. */
    final byte[] serverLine;

    ServerContext(ServerConfig config, Hooks hooks, ExecutorService handlerExecutor,
                  ExecutorService blockingExecutor, ChannelGroup channels) {
        this.config = config;
        this.hooks = hooks;
        this.handlerExecutor = handlerExecutor;
        this.blockingExecutor = blockingExecutor;
        this.channels = channels;
        this.serverLine = config.serverHeader == null || config.serverHeader.isEmpty() ? null
            : ("Server: " + config.serverHeader + "\r\n").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
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
