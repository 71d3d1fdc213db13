package herald.http.server;

import io.netty.channel.ChannelOption;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * How one HTTP/1.1 connection (or HTTP/2 stream) ends: the close after a last answer (lingering after an error so
 * the client reads it), the client's half-close (answer what it sent, then close), the header, request and idle
 * timeouts, the server's graceful shutdown, and the hand-over to a WebSocket or HTTP/2. Event loop only. Once
 * {@link #closing()}, nothing more is read into a request.
 */
final class ConnectionEnd {
    private final HttpConnection c;
    private boolean closing;
    /** The client shut down its sending side (FIN): no request follows the ones already received. */
    private boolean inputShut;
    private ScheduledFuture<?> headerTimeout;
    private ConnectionTimer timer;

    ConnectionEnd(HttpConnection c) {
        this.c = c;
    }

    /** Starts the timeouts; on HTTP/1.1 a client's FIN ends its requests, not the connection. */
    void start() {
        timer = new ConnectionTimer(this, c.config, c.decoder);
        timer.start(c.eventLoop());
        if (c.decoder != null) {
            // a client's FIN ends its requests, not the connection: answer what it sent (inputShutdown)
            c.ctx().channel().config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, true);
            if (c.config.headerTimeoutMs > 0) {
                headerTimeout = c.eventLoop().schedule(this::headerTimedOut, c.config.headerTimeoutMs,
                    TimeUnit.MILLISECONDS);
            }
        }
    }

    boolean closing() {
        return closing;
    }

    /** Nothing after the request being answered is read: the connection closes after its answer. */
    void markClosing() {
        closing = true;
    }

    /** Something was read (the idle timeout restarts). */
    void read() {
        timer.readSinceTick = true;
    }

    /** A request head arrived (the header timeout no longer applies; the request timeout starts at the tick). */
    void headArrived() {
        timer.headNanos = 0;
    }

    /**
     * {@code ex} was the last answer: close once it is flushed, lingering (reading and dropping input for a while)
     * when the client may still be sending, so that the answer is not destroyed by a reset.
     */
    void closeAfter(Exchange ex) {
        closing = true;
        c.output.closeAfterFlush(!inputShut && (ex.reject != 0 || c.receiving() != null || ex.bodyLeft()));
    }

    /**
     * The client shut down its sending side (a FIN after its last request: {@code nc -N}, HTTP/1.0 tools, some
     * proxies). Every complete request is still answered, in order: the last one is answered with
     * {@code Connection: close} and the connection closes after it; a request cut short by the FIN can never
     * complete and is dropped. With nothing to answer, the connection closes now.
     */
    void inputShutdown() {
        inputShut = true;
        c.receiver.abandon("the client ended its input before the whole request body");
        if (closing) {
            if (c.output.lingering) {
                c.ctx().close(); // the error answer is out and the client is done: no reason to linger
            }
            return;
        }
        Exchange last = c.exchanges.last();
        if (last == null) {
            closing = true;
            c.output.closeAfterFlush(false);
        } else {
            last.keepAlive = false; // finished() closes after it
        }
    }

    /** Graceful shutdown: close now when idle, else after the current exchange (or the one being received). */
    void shutdown() {
        if (c.exchanges.idle() && c.receiving() == null) {
            closing = true;
            c.ctx().close();
        }
    }

    /**
     * The exchange became a WebSocket ({@code ex}) or the connection HTTP/2 (null): the connection handler is gone
     * from the pipeline, and a FIN closes the connection again. A WebSocket whose client already sent its FIN could
     * never close cleanly: it is closed.
     */
    void upgraded(Exchange ex) {
        c.exchanges.clear();
        closing = true;
        timer.cancel();
        if (c.decoder != null) {
            c.ctx().channel().config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, false);
            if (inputShut && ex != null) {
                c.ctx().close();
            }
        }
    }

    /** The connection closed: no timeout is due any more. */
    void closed() {
        timer.cancel();
        if (headerTimeout != null) {
            headerTimeout.cancel(false);
        }
    }

    /**
     * {@code :header-timeout-ms} after the connection began, no complete request head: a client holding sockets
     * open without asking anything. Closed; with 408 when part of a head arrived.
     */
    private void headerTimedOut() {
        if (timer.headNanos != ConnectionTimer.NO_HEAD_YET || !open() || c.exchanges.pending()) {
            return;
        }
        if (c.decoder.partialSince() != 0) {
            timedOut(null);
        } else {
            closeIdle();
        }
    }

    // ---- for the ConnectionTimer ----
    boolean open() {
        return !closing && c.ctx().channel().isActive();
    }

    RequestHead receiving() {
        return c.receiving();
    }

    /** Something is in flight; a client that reads none of its responses (write-paused) does not count. */
    boolean busy() {
        return c.exchanges.pending() && !c.gate.paused(ReadGate.WRITES);
    }

    /** The request {@code r}, or a head that never completed (null), was not received in time. */
    void timedOut(RequestHead r) {
        c.reject(r != null ? r : RequestHead.refused(Refusal.REQUEST_TIMEOUT), Refusal.REQUEST_TIMEOUT);
    }

    void closeIdle() {
        closing = true;
        c.ctx().close();
    }
}
