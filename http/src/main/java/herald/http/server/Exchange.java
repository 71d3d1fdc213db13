package herald.http.server;

import clojure.lang.AFn;
import clojure.lang.IPersistentMap;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import java.io.InputStream;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

/**
 * One request/response exchange. It is its own Runnable: first the handler runs (on a worker, a virtual
 * thread or inline on the event loop), then the completion runs on the connection's event loop.
 */
final class Exchange implements Runnable {
    final HttpConnection conn;
    final HttpRequest request;
    final InputStream body;
    final boolean head;
    /** Non-zero: answer with this status and close, without calling the handler. */
    final int reject;
    boolean keepAlive;
    IPersistentMap ringRequest;
    Object response;
    Throwable failure;
    private boolean completing;
    /** The answer is recorded (set by the answering thread before the completion is posted). */
    volatile boolean ready;
    /** The response writing started (event loop only). */
    boolean written;
    private volatile int answered;
    private static final AtomicIntegerFieldUpdater<Exchange> ANSWERED =
        AtomicIntegerFieldUpdater.newUpdater(Exchange.class, "answered");

    Exchange(HttpConnection conn, HttpRequest request, InputStream body, boolean keepAlive, int reject) {
        this.conn = conn;
        this.request = request;
        this.body = body;
        this.keepAlive = keepAlive;
        this.reject = reject;
        this.head = request != null && request.method() == HttpMethod.HEAD;
    }

    @Override
    public void run() {
        if (completing) {
            conn.complete(this);
        } else {
            invoke();
        }
    }

    /** Builds the request map and calls the handler; the answer reaches the event loop via {@link #answer}. */
    void invoke() {
        ServerContext server = conn.server;
        try {
            ringRequest = RingRequest.build(request, body, conn.info);
            if (server.config.async) {
                server.hooks.handler.invoke(ringRequest, new Respond(this), new Raise(this));
                return;
            }
            Object resp = server.hooks.handler.invoke(ringRequest);
            if (server.handlerExecutor == null) {
                answered = 1;
                response = resp;
                completing = true;
                ready = true;
                conn.complete(this);
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
        completing = true;
        ready = true;
        if (conn.server.handlerExecutor != null) {
            conn.server.pending.decrementAndGet();
        }
        if (conn.eventLoop().inEventLoop()) {
            conn.complete(this);
        } else {
            try {
                conn.eventLoop().execute(this);
            } catch (RejectedExecutionException stopped) {
                ResponseWriter.discard(resp);
            }
        }
        return true;
    }

    /** Runs exchanges of one connection one after the other on one worker (pipelined requests). */
    static final class Batch implements Runnable {
        private final Exchange[] exchanges;

        Batch(Exchange[] exchanges) {
            this.exchanges = exchanges;
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
