package herald.http.server;

import herald.http.config.HandlerMode;
import herald.http.config.ServerConfig;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayDeque;

/**
 * One per channel: assembles requests (enforcing the body limit before the handler), keeps pipelined
 * requests in order (one exchange at a time, up to maxPipelined queued), applies the idle and request
 * timeouts, and flushes once per read batch.
 */
public final class HttpConnection extends ChannelInboundHandlerAdapter {
    final ServerContext server;
    final ServerConfig config;
    RingRequest.Connection info;
    private ChannelHandlerContext ctx;
    private EventLoop eventLoop;
    /** The request being received. */
    private final RequestReceiver receiver;
    private final ArrayDeque<Exchange> queue = new ArrayDeque<>(4);
    /** Exchanges handed to a worker after {@code active}, answered in order (pipelining off the event loop). */
    private final ArrayDeque<Exchange> running = new ArrayDeque<>(4);
    private boolean completingChain;
    private Exchange active;
    private boolean closing;
    /** Why the connection is not read now (pipelined queue full, writes backed up, streamed body unread). */
    private ReadGate gate;
    Handoff handoff;
    private boolean draining;
    /** The client shut down its sending side (FIN): no request follows the ones already received. */
    private boolean inputShut;
    private java.util.concurrent.ScheduledFuture<?> headerTimeout;
    private ConnectionTimer timer;
    /** Fixed responses of the current read batch, written as one buffer on flush. */
    OutputBatch output;
    private final Http1Decoder decoder;

    /** Set on a connection accepted beyond {@code :max-connections}, in the reserve: health probes only. */
    static final io.netty.util.AttributeKey<Boolean> RESERVE = io.netty.util.AttributeKey.valueOf("herald-reserve");
    /** This connection (or the HTTP/2 connection of this stream) is in the reserve. */
    boolean reserveOnly;

    HttpConnection(ServerContext server, Http1Decoder decoder) {
        this.server = server;
        this.config = server.config;
        this.decoder = decoder;
        this.receiver = new RequestReceiver(this, config, decoder);
    }

    EventLoop eventLoop() {
        return eventLoop;
    }

    /** Runs {@code r} on this connection's event loop; dropped when the loop has shut down. */
    void onLoop(Runnable r) {
        try {
            eventLoop.execute(r);
        } catch (java.util.concurrent.RejectedExecutionException stopped) {
            // the server is gone; so is the connection
        }
    }

    ChannelHandlerContext ctx() {
        return ctx;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        this.eventLoop = ctx.channel().eventLoop();
        this.output = new OutputBatch(ctx);
        this.gate = new ReadGate(ctx);
        io.netty.channel.Channel socket = ctx.channel() instanceof io.netty.handler.codec.http2.Http2StreamChannel
            ? ctx.channel().parent() : ctx.channel();
        reserveOnly = config.reservedConnections > 0 && socket.hasAttr(RESERVE);
        info = RingRequest.Connection.of(ctx.channel(), server.serverPort, config.proxy);
        handoff = server.handoff(eventLoop);
        timer = new ConnectionTimer(this, config, decoder);
        timer.start(eventLoop);
        if (decoder != null) {
            // a client's FIN ends its requests, not the connection: answer what it sent (inputShutdown)
            ctx.channel().config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, true);
            if (config.headerTimeoutMs > 0) {
                headerTimeout = eventLoop.schedule(this::headerTimedOut, config.headerTimeoutMs,
                    java.util.concurrent.TimeUnit.MILLISECONDS);
            }
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        output.reading = true;
        timer.readSinceTick = true;
        if (msg instanceof LastHttpContent && config.mode == HandlerMode.EVENT_LOOP) {
            output.out(); // allocate where the stack is shallow: the leak detector's sampled traces stay cheap
        }
        try {
            if (msg instanceof HttpRequest r) {
                onHead(r);
            }
            if (msg instanceof HttpContent c) {
                onContent(c);
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        output.reading = false;
        if (active == null && !queue.isEmpty()) {
            drain(); // off the event loop: the requests of this read go to one worker together
        }
        output.endBatch();
    }

    private void onHead(HttpRequest r) {
        if (!closing) {
            receiver.onHead(r);
            timer.headNanos = 0;
        }
    }

    private void onContent(HttpContent c) {
        if (!closing) {
            receiver.onContent(c);
        }
    }

    /** Answers {@code why} in order, then closes: nothing after this request is read. */
    void reject(HttpRequest r, Refusal why) {
        receiver.abandon("request refused");
        closing = true;
        queue.add(Exchange.rejected(this, r, why));
        drain();
    }

    /**
     * The streamed body of {@code ex} is refused (over {@code :max-body-bytes}, or malformed): {@code why} is its
     * answer, now when it is the exchange being answered (its handler's answer, when it comes, is dropped), else in
     * its turn; the connection closes after it.
     */
    void refuseStreamed(Exchange ex, Refusal why) {
        closing = true;
        ex.refusal = why;
        ex.keepAlive = false;
        if (ex == active && !ex.written) {
            ex.written = true;
            ServerAnswers.write(this, ex, why);
        }
    }

    /** A streamed body holds enough unread bytes: stop reading the connection (or the HTTP/2 stream). */
    void pauseBodyReading() {
        gate.pause(ReadGate.BODY);
    }

    /** The handler took the streamed body's unread bytes below its low water mark: read again (event loop). */
    void resumeBodyReading() {
        if (gate.paused(ReadGate.BODY)) {
            gate.resume(ReadGate.BODY, !closing && ctx.channel().isActive());
        }
    }

    void enqueue(Exchange ex) {
        if (server.offLoop && output.reading && active == null) {
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
    private void drain() {
        if (draining) {
            return;
        }
        draining = true;
        try {
            while (active == null && !queue.isEmpty() && !gate.paused(ReadGate.WRITES)) {
                start(queue.poll());
            }
        } finally {
            draining = false;
        }
        if (gate.paused(ReadGate.PIPELINE) && queue.isEmpty() && !closing && !gate.paused(ReadGate.WRITES)) {
            gate.resume(ReadGate.PIPELINE, true);
        }
    }

    private void start(Exchange ex) {
        active = ex;
        if (ex.reject != 0) {
            ServerAnswers.write(this, ex, (Refusal) ex.response);
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
            ServerAnswers.write(this, ex, Refusal.TOO_MANY_PENDING);
        } else {
            dispatch(ex);
        }
    }

    /** Hands {@code ex}, and the requests pipelined behind it, to one worker that runs them in order. */
    private void dispatch(Exchange ex) {
        long now = System.nanoTime();
        ex.queuedAt = now;
        try {
            handoff.submit(queue.isEmpty() ? ex : Exchange.Batch.of(ex, queue, running, server, now));
            server.stats.queued(1 + running.size());
        } catch (RuntimeException rejected) {
            server.pending.addAndGet(-(1 + running.size()));
            running.clear();
            ServerAnswers.write(this, ex, Refusal.STOPPING);
        }
    }
    /** The handler answered: write the response (event loop). */
    void complete(Exchange ex) {
        if (!ctx.channel().isActive()) {
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
                if (cur.keepAlive && server.draining && queue.isEmpty() && running.isEmpty() && receiver.head == null) {
                    cur.keepAlive = false;
                }
                ResponseWriter.write(this, cur);
                Exchange next = active;
                cur = next != null && next != cur && next.ready && !next.written ? next : null;
            }
        } finally {
            completingChain = false;
        }
    }
    /** Called by the writer once the response is fully handed to Netty. */
    void finished(Exchange ex) {
        if (ex != active) {
            return;
        }
        active = null;
        if (server.accessLog != null) {
            server.accessLog.record(ex, info);
        }
        if (!ctx.channel().isActive()) {
            running.clear();
            return;
        }
        if (!ex.keepAlive || (server.draining && queue.isEmpty() && running.isEmpty())) {
            running.clear();
            closing = true;
            queue.clear();
            output.closeAfterFlush(!inputShut && (ex.reject != 0 || receiver.head != null || ex.bodyLeft()));
            return;
        }
        Exchange next = running.poll();
        if (next != null) {
            active = next;
            if (!next.ready) {
                output.flushLater();
            } else if (!completingChain) {
                complete(next);
            }
            return;
        }
        output.flushLater();
        drain();
    }
    /**
     * The exchange became a WebSocket ({@code ex}) or the connection HTTP/2 (null): this handler is gone from the
     * pipeline, and a FIN closes the connection again. A WebSocket whose client already sent its FIN could never
     * close cleanly: it is closed.
     */
    void upgraded(Exchange ex) {
        active = null;
        closing = true;
        queue.clear();
        running.clear();
        timer.cancel();
        if (decoder != null) {
            ctx.channel().config().setOption(ChannelOption.ALLOW_HALF_CLOSURE, false);
            if (inputShut && ex != null) {
                ctx.close();
            }
        }
    }

    /**
     * The client shut down its sending side (a FIN after its last request: {@code nc -N}, HTTP/1.0 tools, some
     * proxies). Every complete request is still answered, in order: the last one is answered with
     * {@code Connection: close} and the connection closes after it; a request cut short by the FIN can never
     * complete and is dropped. With nothing to answer, the connection closes now.
     */
    private void inputShutdown() {
        inputShut = true;
        receiver.abandon("the client ended its input before the whole request body");
        if (closing) {
            if (output.lingering) {
                ctx.close(); // the error answer is out and the client is done: no reason to linger
            }
            return;
        }
        Exchange last = queue.peekLast();
        if (last == null) {
            last = running.peekLast();
        }
        if (last == null) {
            last = active;
        }
        if (last == null) {
            closing = true;
            output.closeAfterFlush(false);
        } else {
            last.keepAlive = false; // finished() closes after it
        }
    }

    /** Graceful shutdown: close now when idle, else after the current exchange (or the one being received). */
    void shutdown() {
        if (active == null && queue.isEmpty() && running.isEmpty() && receiver.head == null) {
            closing = true;
            ctx.close();
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        boolean writable = ctx.channel().isWritable();
        if (!writable && !gate.paused(ReadGate.WRITES) && !closing) {
            gate.pause(ReadGate.WRITES);
        } else if (writable && gate.paused(ReadGate.WRITES)) {
            gate.resume(ReadGate.WRITES, false);
            drain();
            gate.resume(0, !closing);
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt == HeraldServer.SHUTDOWN_EVENT) {
            shutdown();
        } else if (evt == ChannelInputShutdownEvent.INSTANCE && decoder != null) {
            inputShutdown();
        } else {
            ctx.fireUserEventTriggered(evt);
        }
    }

    /**
     * {@code :header-timeout-ms} after the connection began, no complete request head: a client holding sockets
     * open without asking anything. Closed; with 408 when part of a head arrived.
     */
    private void headerTimedOut() {
        if (timer.headNanos != ConnectionTimer.NO_HEAD_YET || !open() || active != null || !queue.isEmpty()) {
            return;
        }
        if (decoder.partialSince != 0) {
            timedOut(null);
        } else {
            closeIdle();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        timer.cancel();
        if (headerTimeout != null) {
            headerTimeout.cancel(false);
        }
        if (server.closing) {
            Exchange.interrupt(active, running); // the server stopped for good
        }
        queue.clear();
        running.clear();
        receiver.abandon("the client connection closed before the whole request body");
        output.release();
        ctx.fireChannelInactive();
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        output.release();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }

    // ---- for the ConnectionTimer ----
    boolean open() {
        return !closing && ctx.channel().isActive();
    }

    HttpRequest receiving() {
        return receiver.head;
    }

    /** Something is in flight; a client that reads none of its responses (write-paused) does not count. */
    boolean busy() {
        return (active != null || !queue.isEmpty()) && !gate.paused(ReadGate.WRITES);
    }

    /** The request {@code r}, or a head that never completed (null), was not received in time. */
    void timedOut(HttpRequest r) {
        reject(r != null ? r : Http1Request.refused(Refusal.REQUEST_TIMEOUT), Refusal.REQUEST_TIMEOUT);
    }

    void closeIdle() {
        closing = true;
        ctx.close();
    }
}
