package herald.http.server;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;

/**
 * The handler queue's figures (off the event loop): requests handed to a handler thread, handlers started, the
 * time each request waited between the two, the 503s answered at {@code :max-pending}; and the error answers
 * the server wrote itself, by status. Counters are striped ({@link LongAdder}) so the event loops and the handler threads do not contend on one cache line.
 */
public final class HandlerStats {
    private final LongAdder queued = new LongAdder();
    private final LongAdder started = new LongAdder();
    private final LongAdder waitNanos = new LongAdder();
    private final AtomicLong maxWaitNanos = new AtomicLong();
    private final LongAdder rejected = new LongAdder();
    /** Error answers written by the server itself, by status (index status - 400). */
    private final AtomicLongArray errors = new AtomicLongArray(200);

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

    /** The server itself answered {@code status} (a 4xx or 5xx: a limit, a malformed request, a handler failure). */
    void error(int status) {
        if (status >= 400 && status < 600) {
            errors.incrementAndGet(status - 400);
        }
    }

    /**
     * The error answers the server wrote itself since it started (not those a handler returned), by status: 400,
     * 408, 413, 414, 417, 431, 501 and 505 for requests refused before the handler, 503 at {@code :max-pending}, 500 for a handler that failed or returned no valid response. Only statuses
     * seen at least once are present.
     */
    public Map<Integer, Long> errors() {
        TreeMap<Integer, Long> m = new TreeMap<>();
        for (int i = 0; i < 200; i++) {
            long n = errors.get(i);
            if (n > 0) {
                m.put(400 + i, n);
            }
        }
        return m;
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
