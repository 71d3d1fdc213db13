package herald.http.server;

import clojure.lang.AFn;
import clojure.lang.IPersistentMap;
import io.netty.handler.codec.http.HttpMethod;
import java.io.InputStream;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * One request/response exchange. It is its own Runnable: the handler runs (on a worker, a virtual thread or
 * inline on the event loop), then the answer goes back to the connection's event loop through its
 * {@link Handoff}, which writes it.
 */
final class Exchange implements Runnable {
    final HttpConnection conn;
    final RequestHead request;
    final InputStream body;
    final boolean head;
    /** Non-zero: answer with this status and close, without calling the handler ({@code response} says why). */
    final int reject;
    boolean keepAlive;
    IPersistentMap ringRequest;
    /** The handler's response; for a rejected exchange, the {@link Refusal} (no handler runs). */
    Object response;
    Throwable failure;
    /** The batch of units this exchange was started with (virtual threads), or null. */
    Handoff.Group group;
    /** System.nanoTime() when handed to a handler thread (off the event loop). */
    long queuedAt;
    /**
     * The thread running the handler (off the event loop), interrupted when the server stops for good. Plain: a
     * stale read at that point interrupts nothing or another handler of a connection being closed anyway.
     */
    Thread thread;
    /** The answer is recorded (set by the answering thread before the completion is posted). */
    volatile boolean ready;
    /** The response writing started (event loop only). */
    boolean written;
    /** The status answered and its body bytes (-1: unknown yet), for the access log (event loop only). */
    int status;
    long bytes = -1;
    /** The request body when it is streamed to the handler as it arrives, else null. */
    StreamedBody streamed;
    /** The server's answer instead of the handler's: its streamed body was refused (413), or null. */
    Refusal refusal;
    /** System.nanoTime() when the request was complete; 0 without an access log. */
    long startNanos;
    private volatile int answered;
    private static final AtomicIntegerFieldUpdater<Exchange> ANSWERED =
        AtomicIntegerFieldUpdater.newUpdater(Exchange.class, "answered");

    Exchange(HttpConnection conn, RequestHead request, InputStream body, boolean keepAlive, int reject) {
        this.conn = conn;
        this.request = request;
        this.body = body;
        this.keepAlive = keepAlive;
        this.reject = reject;
        this.head = request != null && request.method() == HttpMethod.HEAD;
        if (conn != null && conn.server.accessLog != null) {
            startNanos = System.nanoTime();
        }
    }

    /** An exchange answered by the server itself with {@code why}, and the connection closed after it. */
    static Exchange rejected(HttpConnection conn, RequestHead request, Refusal why) {
        Exchange ex = new Exchange(conn, request, null, false, why.status);
        ex.response = why;
        return ex;
    }

    @Override
    public void run() {
        invoke();
    }

    /** Builds the request map and calls the handler; the answer reaches the event loop via {@link #answer}. */
    void invoke() {
        ServerContext server = conn.server;
        if (server.offLoop) {
            thread = Thread.currentThread();
            server.stats.started(System.nanoTime() - queuedAt);
        }
        try {
            ringRequest = RingRequest.build(request, body);
            if (server.config.async) {
                server.hooks.handler.invoke(ringRequest, new Respond(this), new Raise(this));
                thread = null; // no thread to interrupt while the answer is awaited
                return;
            }
            Object resp = server.hooks.handler.invoke(ringRequest);
            if (!server.offLoop && conn.eventLoop().inEventLoop()) {
                answered = 1;
                response = resp;
                ready = true;
                conn.exchanges.complete(this);
                return;
            }
            answer(resp, null);
        } catch (Throwable t) {
            answer(null, t);
        }
    }

    /** Records the handler's answer (once) and schedules the completion on the event loop. */
    boolean answer(Object resp, Throwable t) {
        if (!ANSWERED.compareAndSet(this, 0, 1)) {
            return false;
        }
        response = resp;
        failure = t;
        ready = true;
        thread = null;
        if (conn.server.offLoop) {
            conn.server.pending.decrementAndGet();
        }
        if (conn.eventLoop().inEventLoop()) {
            conn.exchanges.complete(this);
        } else {
            conn.handoff.answered(this);
        }
        return true;
    }

    /** The request body is still arriving (streamed, not all received): the connection cannot be reused. */
    boolean bodyLeft() {
        return streamed != null && !streamed.isEnded();
    }

    /** Interrupts the threads still running the handlers of {@code active} and {@code running}. */
    static void interrupt(Exchange active, Iterable<Exchange> running) {
        Thread t = active == null ? null : active.thread;
        if (t != null) {
            t.interrupt();
        }
        for (Exchange ex : running) {
            if ((t = ex.thread) != null) {
                t.interrupt();
            }
        }
    }

    /** Runs exchanges of one connection one after the other on one worker (pipelined requests). */
    static final class Batch implements Runnable {
        private final Exchange[] exchanges;

        Batch(Exchange[] exchanges) {
            this.exchanges = exchanges;
        }

        /**
         * {@code first} and the requests queued behind it, up to {@code :max-pipelined} and while
         * {@code :max-pending} allows, as one unit; those taken from {@code queue} move to {@code running} and
         * count as pending.
         */
        static Runnable of(Exchange first, ArrayDeque<Exchange> queue, ArrayDeque<Exchange> running,
                           ServerContext server, long now) {
            int room = Math.min(server.config.maxPipelined - 1, server.config.maxPending - server.pending.get());
            int n = Math.min(room, queue.size());
            if (n <= 0 || queue.peek().reject != 0) {
                return first;
            }
            Exchange[] batch = new Exchange[n + 1];
            batch[0] = first;
            int k = 1;
            while (k <= n && queue.peek().reject == 0) {
                Exchange next = queue.poll();
                next.queuedAt = now;
                running.add(next);
                batch[k++] = next;
            }
            server.pending.addAndGet(k - 1);
            return new Batch(k == batch.length ? batch : java.util.Arrays.copyOf(batch, k));
        }

        /** Marks every exchange as started with {@code g}. */
        void join(Handoff.Group g) {
            for (Exchange ex : exchanges) {
                ex.group = g;
            }
        }

        @Override
        public void run() {
            for (Exchange ex : exchanges) {
                ex.invoke();
            }
        }
    }

    /** The async {@code respond} callback: the first call wins, later calls are ignored. */
    static final class Respond extends AFn {
        private final Exchange ex;

        Respond(Exchange ex) {
            this.ex = ex;
        }

        @Override
        public Object invoke(Object resp) {
            ex.answer(resp, null);
            return null;
        }
    }

    /** The async {@code raise} callback: answers 500 and hands the throwable to the error logger. */
    static final class Raise extends AFn {
        private final Exchange ex;

        Raise(Exchange ex) {
            this.ex = ex;
        }

        @Override
        public Object invoke(Object t) {
            Throwable th = t instanceof Throwable x ? x : new IllegalArgumentException("raise called with " + t);
            ex.answer(null, th);
            return null;
        }
    }
}
