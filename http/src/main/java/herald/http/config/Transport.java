package herald.http.config;

/** The Netty transport the server uses. */
public enum Transport {
    /** Native epoll when available, NIO otherwise. */
    AUTO,
    /** Native epoll (Linux x86_64); fails to start when unavailable. */
    EPOLL,
    /** Java NIO. */
    NIO
}
