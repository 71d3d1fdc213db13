package herald.http.server;

import herald.http.config.HandlerMode;
import herald.http.config.ServerConfig;
import java.util.ArrayDeque;

/**
 * The request/response sequencing of one HTTP/1.1 connection (or HTTP/2 stream): requests are answered in the
 * order they arrived, one exchange at a time; pipelined ones wait in a queue (past {@code :max-pipelined} reading
 * pauses) or go to one worker together and are answered in turn. Event loop only. How the connection ends after an
 * exchange is {@link ConnectionEnd}'s part.
 */
final class ExchangeQueue {
    private final HttpConnection c;
    private final ServerContext server;
    private final ServerConfig config;
    private final ArrayDeque<Exchange> queue = new ArrayDeque<>(4);
    /** Exchanges handed to a worker after {@code active}, answered in order (pipelining off the event loop). */
    private final ArrayDeque<Exchange> running = new ArrayDeque<>(4);
    /** The exchange being handled or answered; null between exchanges. */
    private Exchange active;
    private boolean completingChain;
    private boolean draining;

    ExchangeQueue(HttpConnection c) {
        this.c = c;
        this.server = c.server;
        this.config = c.config;
    }

    /** Nothing handled, answered or waiting. */
    boolean idle() {
        return active == null && queue.isEmpty() && running.isEmpty();
    }

    /** An exchange is being handled or answered, or one waits in the queue. */
    boolean pending() {
        return active != null || !queue.isEmpty();
    }

    boolean isActive(Exchange ex) {
        return ex == active;
    }

    /** The last exchange received: the one the connection closes after when the client has no more to send. */
    Exchange last() {
        Exchange last = queue.peekLast();
        if (last == null) {
            last = running.peekLast();
        }
        return last != null ? last : active;
    }

    /** A read batch ended: the requests it queued go to one worker together. */
    void readDone() {
        if (active == null && !queue.isEmpty()) {
            drain();
        }
    }

    /** Queues {@code ex} behind the others (a refusal answered in its turn). */
    void add(Exchange ex) {
        queue.add(ex);
        drain();
    }

    void enqueue(Exchange ex) {
        ReadGate gate = c.gate;
        if (server.offLoop && c.output.reading && active == null) {
            queue.add(ex); // dispatched at the end of the read, with the requests read after it
            if (!gate.paused(ReadGate.PIPELINE) && queue.size() > config.maxPipelined) {
                gate.pause(ReadGate.PIPELINE);
            }
            return;
        }
        if (active == null && queue.isEmpty() && !draining && !gate.paused(ReadGate.WRITES)) {
            draining = true;
            try {
                start(ex); // the common case: nothing ahead of it
            } finally {
                draining = false;
            }
            return;
        }
        queue.add(ex);
        drain();
        if (!gate.paused(ReadGate.PIPELINE) && queue.size() >= config.maxPipelined) {
            gate.pause(ReadGate.PIPELINE);
        }
    }

    /** Starts queued exchanges one at a time; re-entrant calls return at once. */
    void drain() {
        if (draining) {
            return;
        }
        ReadGate gate = c.gate;
        draining = true;
        try {
            while (active == null && !queue.isEmpty() && !gate.paused(ReadGate.WRITES)) {
                start(queue.poll());
            }
        } finally {
            draining = false;
        }
        if (gate.paused(ReadGate.PIPELINE) && queue.isEmpty() && !c.end.closing() && !gate.paused(ReadGate.WRITES)) {
            gate.resume(ReadGate.PIPELINE, true);
        }
    }

    private void start(Exchange ex) {
        active = ex;
        if (ex.reject != 0) {
            ServerAnswers.write(c, ex, (Refusal) ex.response);
            return;
        }
        if (config.mode == HandlerMode.EVENT_LOOP) {
            if (ex.streamed != null) {
                server.blockingExecutor.execute(ex); // reading a body as it arrives blocks: not on the loop
            } else {
                ex.invoke();
            }
        } else if (server.pending.incrementAndGet() > config.maxPending) {
            server.pending.decrementAndGet();
            server.stats.reject();
            ServerAnswers.write(c, ex, Refusal.TOO_MANY_PENDING);
        } else {
            dispatch(ex);
        }
    }

    /** Hands {@code ex}, and the requests pipelined behind it, to one worker that runs them in order. */
    private void dispatch(Exchange ex) {
        long now = System.nanoTime();
        ex.queuedAt = now;
        try {
            c.handoff.submit(queue.isEmpty() ? ex : Exchange.Batch.of(ex, queue, running, server, now));
            server.stats.queued(1 + running.size());
        } catch (RuntimeException rejected) {
            server.pending.addAndGet(-(1 + running.size()));
            running.clear();
            ServerAnswers.write(c, ex, Refusal.STOPPING);
        }
    }

    /** The handler answered: write the response, and the answers ready behind it (event loop). */
    void complete(Exchange ex) {
        if (!c.ctx().channel().isActive()) {
            ResponseWriter.discard(ex.response);
            if (ex == active) {
                finished(ex);
            }
            return;
        }
        if (ex.written && ex.refusal != null) {
            ResponseWriter.discard(ex.response); // answered already: its body was refused
            return;
        }
        if (ex != active || ex.written || completingChain) {
            return; // not its turn yet (or already written): finished() of the one before picks it up
        }
        completingChain = true;
        try {
            Exchange cur = ex;
            while (cur != null) {
                cur.written = true;
                if (cur.keepAlive && server.draining && queue.isEmpty() && running.isEmpty() && c.receiving() == null) {
                    cur.keepAlive = false;
                }
                ResponseWriter.write(c, cur);
                Exchange next = active;
                cur = next != null && next != cur && next.ready && !next.written ? next : null;
            }
        } finally {
            completingChain = false;
        }
    }

    /** Called by the writer once the response is fully handed to Netty: the next exchange's turn, or the close. */
    void finished(Exchange ex) {
        if (ex != active) {
            return;
        }
        active = null;
        if (server.accessLog != null) {
            server.accessLog.record(ex, c.info);
        }
        if (!c.ctx().channel().isActive()) {
            running.clear();
            return;
        }
        if (!ex.keepAlive || (server.draining && queue.isEmpty() && running.isEmpty())) {
            running.clear();
            queue.clear();
            c.end.closeAfter(ex);
            return;
        }
        Exchange next = running.poll();
        if (next != null) {
            active = next;
            if (!next.ready) {
                c.output.flushLater();
            } else if (!completingChain) {
                complete(next);
            }
            return;
        }
        c.output.flushLater();
        drain();
    }

    /** The connection became something else (a WebSocket, HTTP/2): nothing more is answered here. */
    void clear() {
        active = null;
        queue.clear();
        running.clear();
    }

    /** The connection closed; when the server stopped for good, the handlers still running are interrupted. */
    void closed(boolean interrupt) {
        if (interrupt) {
            Exchange.interrupt(active, running);
        }
        queue.clear();
        running.clear();
    }
}
