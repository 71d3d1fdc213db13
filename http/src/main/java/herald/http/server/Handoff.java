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
 * pass are started together by a task that runs after the pass's reads: one virtual thread runs them one after
 * the other, and a spare one takes over the rest whenever a handler blocks (see {@link Group}), so a handler
 * that blocks holds up no other.
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
    /** A pass whose handlers have run this long hands back the answers so far before running the rest. */
    private static final long EARLY_DRAIN_NANOS = 1_000_000;
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

    /**
     * The units of one event-loop pass, run one after the other by a virtual thread. Before each unit the runner
     * makes sure a spare virtual thread waits behind it in the carrier's queue: the spare runs only when the
     * runner blocks (or is done, or another carrier is idle and steals it), and then takes the next units, with
     * a spare of its own. A handler that blocks thus holds up no other, while a pass of handlers that do not
     * block costs two thread starts, not one per request. The first runner that finds no unit left hands the
     * answers given so far back to the event loop (so does a runner whose handlers took over a millisecond);
     * later answers hand themselves back.
     */
    final class Group implements Runnable {
        final Runnable[] units;
        volatile boolean open = true;
        private volatile int next;
        private volatile int spareQueued;
        private static final AtomicIntegerFieldUpdater<Group> NEXT =
            AtomicIntegerFieldUpdater.newUpdater(Group.class, "next");
        private static final AtomicIntegerFieldUpdater<Group> SPARE =
            AtomicIntegerFieldUpdater.newUpdater(Group.class, "spareQueued");

        Group(Runnable[] units) {
            this.units = units;
        }

        @Override
        public void run() {
            int n = units.length;
            long since = System.nanoTime();
            for (int i; (i = NEXT.getAndIncrement(this)) < n; ) {
                if (spareQueued == 0 && SPARE.compareAndSet(this, 0, 1)) {
                    virtualThreads.newThread(this::spare).start();
                }
                Runnable u = units[i];
                units[i] = null;
                Thread.interrupted(); // a handler's interrupt does not reach the next one
                u.run();
                long now = System.nanoTime();
                if (now - since > EARLY_DRAIN_NANOS && !answers.isEmpty()) {
                    scheduleDrain(); // slow handlers in this pass: the answers so far need not wait for them
                    since = now;
                }
            }
            if (open) {
                open = false;
                if (!answers.isEmpty()) {
                    scheduleDrain();
                }
            }
        }

        private void spare() {
            spareQueued = 0;
            run();
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
                c.exchanges.complete(ex);
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
