package herald.http.server;

import io.netty.channel.EventLoop;
import io.netty.util.internal.PlatformDependent;
import java.util.Arrays;
import java.util.Queue;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * Moves handler work between one event loop and the threads that run handlers, in batches, so that the event
 * loop and the virtual threads' carrier wake each other once per batch rather than once per request.
 *
 * <p>Out: the units (one request, or the requests pipelined on one connection) submitted during one event-loop
 * pass are started together by a task that runs after the pass's reads. A pass with several units starts one
 * virtual thread (a {@link Group}) that starts a virtual thread per unit from the carrier (a local queue push,
 * no wake-up), then yields until they have run or blocked. Every unit keeps a virtual thread of its own, so a
 * handler that blocks holds up no other.
 *
 * <p>Back: an answer goes into a queue read by the event loop. Answers given while their group runs are handed
 * back together when the group ends; any other answer (a handler that blocked, an async respond, a worker pool)
 * schedules the drain itself, at most one drain task being pending at a time. The drain writes every answer and
 * flushes each connection once.
 */
final class Handoff {
    private final EventLoop loop;
    /** Starts a virtual thread per unit; null with a worker pool. */
    private final ThreadFactory virtualThreads;
    /** The worker pool; null on virtual threads. */
    private final Executor pool;
    // ---- event loop only ----
    private Runnable[] units = new Runnable[16];
    private int unitCount;
    private final Runnable startTask = this::startUnits;
    private HttpConnection[] dirty = new HttpConnection[16];
    private int dirtyCount;
    // ---- any thread ----
    private final Queue<Exchange> answers = PlatformDependent.newMpscQueue();
    private final Runnable drainTask = this::drain;
    private volatile int drainScheduled;
    private static final AtomicIntegerFieldUpdater<Handoff> DRAIN_SCHEDULED =
        AtomicIntegerFieldUpdater.newUpdater(Handoff.class, "drainScheduled");

    Handoff(EventLoop loop, ThreadFactory virtualThreads, Executor pool) {
        this.loop = loop;
        this.virtualThreads = virtualThreads;
        this.pool = pool;
    }

    /** Runs {@code unit} off the event loop (event loop only). Throws RejectedExecutionException when stopped. */
    void submit(Runnable unit) {
        if (virtualThreads == null) {
            pool.execute(unit);
            return;
        }
        if (unitCount == units.length) {
            units = Arrays.copyOf(units, unitCount * 2);
        }
        units[unitCount++] = unit;
        if (unitCount == 1) {
            try {
                loop.execute(startTask);
            } catch (RejectedExecutionException stopped) {
                units[0] = null;
                unitCount = 0;
                throw stopped;
            }
        }
    }

    /** The task that starts the units of one event-loop pass. */
    private void startUnits() {
        int n = unitCount;
        unitCount = 0;
        if (n == 1) {
            Runnable u = units[0];
            units[0] = null;
            virtualThreads.newThread(u).start();
            return;
        }
        Group g = new Group(Arrays.copyOf(units, n));
        Arrays.fill(units, 0, n, null);
        for (Runnable u : g.units) {
            if (u instanceof Exchange ex) {
                ex.group = g;
            } else if (u instanceof Exchange.Batch b) {
                b.join(g);
            }
        }
        virtualThreads.newThread(g).start();
    }

    /** The units of one event-loop pass; its virtual thread starts theirs, then hands their answers back. */
    final class Group implements Runnable {
        final Runnable[] units;
        volatile boolean open = true;

        Group(Runnable[] units) {
            this.units = units;
        }

        @Override
        public void run() {
            for (Runnable u : units) {
                virtualThreads.newThread(u).start();
            }
            Thread.yield(); // behind the units in the carrier's queue: they run (or block) first
            open = false;
            if (!answers.isEmpty()) {
                scheduleDrain();
            }
        }
    }

    /** Queues a handler's answer for the event loop (any thread but the loop's). */
    void answered(Exchange ex) {
        answers.offer(ex);
        Group g = ex.group;
        if (g == null || !g.open) {
            scheduleDrain();
        }
    }

    private void scheduleDrain() {
        if (drainScheduled == 0 && DRAIN_SCHEDULED.compareAndSet(this, 0, 1)) {
            try {
                loop.execute(drainTask);
            } catch (RejectedExecutionException stopped) {
                for (Exchange ex; (ex = answers.poll()) != null; ) {
                    ResponseWriter.discard(ex.response);
                }
            }
        }
    }

    /** Writes every queued answer, then flushes each connection once (event loop). */
    private void drain() {
        drainScheduled = 0;
        try {
            for (Exchange ex; (ex = answers.poll()) != null; ) {
                HttpConnection c = ex.conn;
                if (!c.output.deferred) {
                    c.output.deferred = true;
                    if (dirtyCount == dirty.length) {
                        dirty = Arrays.copyOf(dirty, dirtyCount * 2);
                    }
                    dirty[dirtyCount++] = c;
                }
                c.complete(ex);
            }
        } finally {
            for (int i = 0; i < dirtyCount; i++) {
                HttpConnection c = dirty[i];
                dirty[i] = null;
                c.output.deferred = false;
                c.output.endBatch();
            }
            dirtyCount = 0;
        }
    }
}
