package herald.http.config;

import java.util.Objects;

/**
 * The server's options, immutable once built. Every value is checked by {@link Builder#build()}; the Clojure
 * layer validates types and names the offending key before it gets here.
 */
public final class ServerConfig {
    /** The longest Unix socket path every platform takes (sun_path is 104 bytes on macOS, 108 on Linux). */
    public static final int MAX_SOCKET_PATH_BYTES = 103;
    public final String host;
    public final int port;
    public final HandlerMode mode;
    public final boolean async;
    public final int workerThreads;
    public final int maxPending;
    public final long maxBodyBytes;
    public final int maxHeaderBytes;
    public final int maxRequestLineBytes;
    public final long idleTimeoutMs;
    public final long requestTimeoutMs;
    public final int maxConnections;
    /** Connections from one client address at once; beyond it a new one gets 503 and is closed. */
    public final int maxConnectionsPerAddress;
    /** A connection that has not sent a complete request head this long after it opened is closed (0: never). */
    public final long headerTimeoutMs;
    public final long shutdownTimeoutMs;
    public final int ioThreads;
    public final Transport transport;
    public final String serverHeader;
    public final boolean proxy;
    public final int websocketMaxFrameBytes;
    /** How long a WebSocket close the server started waits for the client's close, in ms. */
    public final long websocketCloseWaitMs;
    public final int maxPipelined;
    /** Outbound bytes queued for one connection above which it stops being read (Netty's high water mark). */
    public final int maxWriteBufferBytes;
    /** Serves TLS (https) on the port when non-null; null (the default) serves plaintext. */
    public final io.netty.handler.ssl.SslContext sslContext;
    /** Serve HTTP/2 too: h2 via ALPN on TLS, h2c (prior knowledge and Upgrade) on plaintext. */
    public final boolean http2;
    /** SETTINGS_MAX_CONCURRENT_STREAMS: streams one HTTP/2 connection may have open at once. */
    public final int http2MaxConcurrentStreams;
    /** Connections accepted beyond maxConnections for health probes only. */
    public final int reservedConnections;
    /** The paths (without query) a reserve connection may ask for. */
    public final java.util.Set<String> healthPaths;
    /** Serve on {@code host:port}; false only with {@link #unixSocket} (a socket-only server). */
    public final boolean tcp;
    /** The path of a Unix domain socket to serve on as well (or alone); null for none. */
    public final String unixSocket;
    /** The socket file's permissions as {@code "rw-rw----"}; null leaves what the umask gives. */
    public final String unixSocketPermissions;
    /** Offer permessage-deflate (RFC 7692) to WebSocket clients that ask for it. */
    public final boolean websocketCompression;

    private ServerConfig(Builder b) {
        host = b.host;
        port = b.port;
        mode = b.mode;
        async = b.async;
        workerThreads = b.workerThreads;
        maxPending = b.maxPending;
        maxBodyBytes = b.maxBodyBytes;
        maxHeaderBytes = b.maxHeaderBytes;
        maxRequestLineBytes = b.maxRequestLineBytes;
        idleTimeoutMs = b.idleTimeoutMs;
        requestTimeoutMs = b.requestTimeoutMs;
        maxConnections = b.maxConnections;
        maxConnectionsPerAddress = b.maxConnectionsPerAddress;
        headerTimeoutMs = b.headerTimeoutMs;
        shutdownTimeoutMs = b.shutdownTimeoutMs;
        ioThreads = b.ioThreads;
        transport = b.transport;
        serverHeader = b.serverHeader;
        proxy = b.proxy;
        websocketMaxFrameBytes = b.websocketMaxFrameBytes;
        websocketCloseWaitMs = b.websocketCloseWaitMs;
        maxPipelined = b.maxPipelined;
        maxWriteBufferBytes = b.maxWriteBufferBytes;
        sslContext = b.sslContext;
        http2 = b.http2;
        http2MaxConcurrentStreams = b.http2MaxConcurrentStreams;
        reservedConnections = b.reservedConnections;
        healthPaths = java.util.Set.copyOf(b.healthPaths);
        tcp = b.tcp;
        unixSocket = b.unixSocket;
        unixSocketPermissions = b.unixSocketPermissions;
        websocketCompression = b.websocketCompression;
    }

    /** A builder holding the documented defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** Mutable builder; {@link #build()} checks ranges. */
    public static final class Builder {
        private String host = "0.0.0.0";
        private int port = 8080;
        private HandlerMode mode = HandlerMode.VIRTUAL_THREADS;
        private boolean async = false;
        private int workerThreads = Math.max(16, 8 * Runtime.getRuntime().availableProcessors());
        private int maxPending = 10_000;
        private long maxBodyBytes = 4L * 1024 * 1024;
        private int maxHeaderBytes = 8192;
        private int maxRequestLineBytes = 4096;
        private long idleTimeoutMs = 60_000;
        private long requestTimeoutMs = 30_000;
        private int maxConnections = 10_000;
        private int maxConnectionsPerAddress = 1000;
        private long headerTimeoutMs = 10_000;
        private long shutdownTimeoutMs = 10_000;
        private int ioThreads = Runtime.getRuntime().availableProcessors();
        private Transport transport = Transport.AUTO;
        private String serverHeader = "herald";
        private boolean proxy = false;
        private int websocketMaxFrameBytes = 1024 * 1024;
        private long websocketCloseWaitMs = 1000;
        private int maxPipelined = 16;
        private int maxWriteBufferBytes = 64 * 1024;
        private io.netty.handler.ssl.SslContext sslContext;
        private boolean http2 = true;
        private int reservedConnections = 0;
        private java.util.Set<String> healthPaths = java.util.Set.of("/health");
        private int http2MaxConcurrentStreams = 128;
        private boolean tcp = true;
        private String unixSocket;
        private String unixSocketPermissions;
        private boolean websocketCompression = false;

        public Builder host(String v) { host = Objects.requireNonNull(v, "host"); return this; }
        public Builder port(int v) { port = v; return this; }
        public Builder mode(HandlerMode v) { mode = Objects.requireNonNull(v, "mode"); return this; }
        public Builder async(boolean v) { async = v; return this; }
        public Builder workerThreads(int v) { workerThreads = v; return this; }
        public Builder maxPending(int v) { maxPending = v; return this; }
        public Builder maxBodyBytes(long v) { maxBodyBytes = v; return this; }
        public Builder maxHeaderBytes(int v) { maxHeaderBytes = v; return this; }
        public Builder maxRequestLineBytes(int v) { maxRequestLineBytes = v; return this; }
        public Builder idleTimeoutMs(long v) { idleTimeoutMs = v; return this; }
        public Builder requestTimeoutMs(long v) { requestTimeoutMs = v; return this; }
        public Builder maxConnections(int v) { maxConnections = v; return this; }
        public Builder maxConnectionsPerAddress(int v) { maxConnectionsPerAddress = v; return this; }
        public Builder headerTimeoutMs(long v) { headerTimeoutMs = v; return this; }
        public Builder shutdownTimeoutMs(long v) { shutdownTimeoutMs = v; return this; }
        public Builder ioThreads(int v) { ioThreads = v; return this; }
        public Builder transport(Transport v) { transport = Objects.requireNonNull(v, "transport"); return this; }
        public Builder serverHeader(String v) { serverHeader = v; return this; }
        public Builder proxy(boolean v) { proxy = v; return this; }
        public Builder websocketMaxFrameBytes(int v) { websocketMaxFrameBytes = v; return this; }
        public Builder websocketCloseWaitMs(long v) { websocketCloseWaitMs = v; return this; }
        public Builder maxPipelined(int v) { maxPipelined = v; return this; }
        public Builder maxWriteBufferBytes(int v) { maxWriteBufferBytes = v; return this; }
        public Builder sslContext(io.netty.handler.ssl.SslContext v) { sslContext = v; return this; }
        public Builder http2(boolean v) { http2 = v; return this; }
        public Builder reservedConnections(int v) { reservedConnections = v; return this; }
        public Builder healthPaths(java.util.Collection<String> v) { healthPaths = java.util.Set.copyOf(v); return this; }
        public Builder http2MaxConcurrentStreams(int v) { http2MaxConcurrentStreams = v; return this; }
        public Builder tcp(boolean v) { tcp = v; return this; }
        public Builder unixSocket(String v) { unixSocket = v; return this; }
        public Builder unixSocketPermissions(String v) { unixSocketPermissions = v; return this; }
        public Builder websocketCompression(boolean v) { websocketCompression = v; return this; }

        /** Checks every range and returns the immutable config. */
        public ServerConfig build() {
            check(port >= 0 && port <= 65535, "port", port);
            check(workerThreads >= 1, "workerThreads", workerThreads);
            check(maxPending >= 1, "maxPending", maxPending);
            check(maxBodyBytes >= 0 && maxBodyBytes <= Integer.MAX_VALUE - 8, "maxBodyBytes", maxBodyBytes);
            check(maxHeaderBytes >= 256, "maxHeaderBytes", maxHeaderBytes);
            check(maxRequestLineBytes >= 64, "maxRequestLineBytes", maxRequestLineBytes);
            check(idleTimeoutMs >= 0, "idleTimeoutMs", idleTimeoutMs);
            check(requestTimeoutMs >= 0, "requestTimeoutMs", requestTimeoutMs);
            check(maxConnections >= 1, "maxConnections", maxConnections);
            check(maxConnectionsPerAddress >= 1, "maxConnectionsPerAddress", maxConnectionsPerAddress);
            check(headerTimeoutMs >= 0, "headerTimeoutMs", headerTimeoutMs);
            check(shutdownTimeoutMs >= 0, "shutdownTimeoutMs", shutdownTimeoutMs);
            check(ioThreads >= 1, "ioThreads", ioThreads);
            check(websocketMaxFrameBytes >= 125, "websocketMaxFrameBytes", websocketMaxFrameBytes);
            check(websocketCloseWaitMs >= 1, "websocketCloseWaitMs", websocketCloseWaitMs);
            check(maxPipelined >= 1, "maxPipelined", maxPipelined);
            check(maxWriteBufferBytes >= 2, "maxWriteBufferBytes", maxWriteBufferBytes);
            check(reservedConnections >= 0, "reservedConnections", reservedConnections);
            check(http2MaxConcurrentStreams >= 1, "http2MaxConcurrentStreams", http2MaxConcurrentStreams);
            check(sslContext == null || sslContext.isServer(), "sslContext (a client context)", sslContext);
            check(tcp || unixSocket != null, "tcp (false without a unixSocket)", tcp);
            check(unixSocket == null || (!unixSocket.isBlank()
                && unixSocket.getBytes(java.nio.charset.StandardCharsets.UTF_8).length <= MAX_SOCKET_PATH_BYTES),
                "unixSocket (1-" + MAX_SOCKET_PATH_BYTES + " bytes)", unixSocket);
            check(unixSocketPermissions == null || unixSocketPermissions.matches("([r-][w-][x-]){3}"),
                "unixSocketPermissions (like rw-rw----)", unixSocketPermissions);
            return new ServerConfig(this);
        }

        private static void check(boolean ok, String name, Object value) {
            if (!ok) {
                throw new IllegalArgumentException("invalid " + name + ": " + value);
            }
        }
    }
}
