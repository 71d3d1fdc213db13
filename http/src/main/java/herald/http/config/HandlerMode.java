package herald.http.config;

/** Where a Ring handler runs. */
public enum HandlerMode {
    /** One virtual thread per request (the default): blocking handlers are fine. */
    VIRTUAL_THREADS,
    /** A bounded pool of platform threads. */
    WORKER_POOL,
    /** Straight on the Netty event loop: only for handlers that never block. */
    EVENT_LOOP
}
