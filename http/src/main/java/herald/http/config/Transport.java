package herald.http.config;

/** The Netty transport the server uses. */
public enum Transport {
    /** Native epoll when available, else native kqueue when available, else NIO. */
    AUTO,
    /** Native epoll (Linux); fails to start when unavailable. */
    EPOLL,
    /** Native kqueue (macOS, BSD; needs io.netty:netty-transport-native-kqueue on the classpath); fails when unavailable. */
    KQUEUE,
    /** Java NIO. */
    NIO
}
