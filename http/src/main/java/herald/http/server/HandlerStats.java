package herald.http.server;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The handler queue's figures (off the event loop): requests handed to a handler thread, handlers started, the
 * time each request waited between the two, and the 503s answered at {@code :max-pending}. Counters are
 * striped ({@link LongAdder}) so the event loops and the handler threads do not contend on one cache line.
 */
public final class HandlerStats {
    private final LongAdder queued = new LongAdder();
    private final LongAdder started = new LongAdder();
    private final LongAdder waitNanos = new LongAdder();
    private final AtomicLong maxWaitNanos = new AtomicLong();
    private final LongAdder rejected = new LongAdder();

    /** {@code n} requests are handed to handler threads. */
    void queued(int n) {
        queued.add(n);
    }

    /** A handler starts after waiting {@code nanos} in the queue. */
    void started(long nanos) {
        started.increment();
        waitNanos.add(nanos);
        if (nanos > maxWaitNanos.get()) {
            maxWaitNanos.accumulateAndGet(nanos, Math::max);
        }
    }

    /** A request is answered 503 at {@code :max-pending}. */
    void reject() {
        rejected.increment();
    }

    /** Requests waiting for a handler thread right now (handed off, handler not started). */
    public long queueDepth() {
        return Math.max(0, queued.sum() - started.sum());
    }

    /** Handlers started off the event loop since the server started. */
    public long started() {
        return started.sum();
    }

    /** The queue wait of every started handler, summed, in nanoseconds. */
    public long queueWaitNanos() {
        return waitNanos.sum();
    }

    /** The longest queue wait so far, in nanoseconds. */
    public long maxQueueWaitNanos() {
        return maxWaitNanos.get();
    }

    /** Requests answered 503 because {@code :max-pending} handlers were pending. */
    public long rejected() {
        return rejected.sum();
    }
}
