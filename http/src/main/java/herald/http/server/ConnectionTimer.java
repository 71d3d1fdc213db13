package herald.http.server;

import herald.http.config.ServerConfig;
import io.netty.channel.EventLoop;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The idle and request timeouts of one connection: one task on its event loop every tenth of the shorter
 * timeout (so a timeout fires between 1.0 and 1.2 times its configured value). A connection is idle only when nothing is being received, handled or written; a request whose head
 * or body does not arrive within the request timeout is answered 408.
 */
final class ConnectionTimer implements Runnable {
    private final ConnectionEnd c;
    private final ServerConfig config;
    private final HeadProgress decoder;
    private ScheduledFuture<?> task;
    private long idleSince = System.nanoTime();
    /** {@link #headNanos} until the connection's first request head arrives (the header timeout's test). */
    static final long NO_HEAD_YET = -1;
    /**
     * When a tick first saw the request being received (0: not seen yet; set to 0 by every head, so it stays
     * {@link #NO_HEAD_YET} only until the first one).
     */
    long headNanos = NO_HEAD_YET;
    /** Set on every read; cleared by the tick. */
    boolean readSinceTick;

    ConnectionTimer(ConnectionEnd c, ServerConfig config, HeadProgress decoder) {
        this.c = c;
        this.config = config;
        this.decoder = decoder;
    }

    void start(EventLoop loop) {
        long idle = config.idleTimeoutMs > 0 ? config.idleTimeoutMs : Long.MAX_VALUE;
        long req = config.requestTimeoutMs > 0 ? config.requestTimeoutMs : Long.MAX_VALUE;
        long shorter = Math.min(idle, req);
        if (shorter == Long.MAX_VALUE) {
            return;
        }
        // a tenth of the shorter timeout: a timeout fires between 1.0x and 1.2x of its configured value
        long p = Math.max(10, shorter / 10);
        task = loop.scheduleAtFixedRate(this, p, p, TimeUnit.MILLISECONDS);
    }

    void cancel() {
        if (task != null) {
            task.cancel(false);
        }
    }

    @Override
    public void run() {
        long now = System.nanoTime();
        if (!c.open()) {
            return;
        }
        boolean receiving = c.receiving() != null;
        if (receiving && headNanos == 0) {
            headNanos = now;
        }
        long limit = TimeUnit.MILLISECONDS.toNanos(config.requestTimeoutMs);
        if (config.requestTimeoutMs > 0 && !c.busy()) {
            if (receiving && now - headNanos > limit) {
                c.timedOut(c.receiving());
                return;
            }
            if (!receiving && decoder != null && decoder.partialSince() != 0 && now - decoder.partialSince() > limit) {
                c.timedOut(null);
                return;
            }
        }
        if (readSinceTick || receiving || c.busy()) {
            readSinceTick = false;
            idleSince = now;
            return;
        }
        if (config.idleTimeoutMs > 0 && now - idleSince >= TimeUnit.MILLISECONDS.toNanos(config.idleTimeoutMs)) {
            c.closeIdle();
        }
    }
}
