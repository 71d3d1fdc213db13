package herald.http.server;

import herald.http.config.HandlerMode;
import herald.http.config.ServerConfig;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
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
    private HttpRequest head;
    private BodyBuffer body;
    private boolean headKeepAlive;
    private final ArrayDeque<Exchange> queue = new ArrayDeque<>(4);
    /** Exchanges handed to a worker after {@code active}, answered in order (pipelining off the event loop). */
    private final ArrayDeque<Exchange> running = new ArrayDeque<>(4);
    private boolean completingChain;
    private Exchange active;
    private boolean closing;
    private boolean readPaused;
    /** The outbound buffer is over the write high water mark: read nothing, start nothing, until it drains. */
    private boolean writePaused;
    Handoff handoff;
    private boolean draining;
    /** The client shut down its sending side (FIN): no request follows the ones already received. */
    private boolean inputShut;
    private java.util.concurrent.ScheduledFuture<?> headerTimeout;
    private ConnectionTimer timer;
    /** Fixed responses of the current read batch, written as one buffer on flush. */
    OutputBatch output;
    private final Http1Decoder decoder;

    HttpConnection(ServerContext server, Http1Decoder decoder) {
        this.server = server;
        this.config = server.config;
        this.decoder = decoder;
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
        if (closing) {
            return;
        }
        Http1Request h1 = r instanceof Http1Request h ? h : null;
        int status = h1 != null ? h1.status : RequestDecoder.headStatus(r, config.maxBodyBytes);
        if (status > 100) {
            reject(r, Refusal.of(r.decoderResult().cause(), status));
            return;
        } else if (status == 100) {
            output.writeContinue();
        }
        if (h1 != null ? h1.absolute : r.uri().charAt(0) != '/') {
            RequestHead.useTargetHost(r);
        }
        head = r;
        headKeepAlive = h1 != null ? h1.keepAlive
            : KeepAlive.of(r.protocolVersion(), r.headers().get(HttpHeaderNames.CONNECTION));
        timer.headNanos = 0;
    }

    /** First body bytes of the current request: check the declared length once, then collect. */
    private boolean startBody() {
        long length = HttpUtil.getContentLength(head, -1L);
        if (length > config.maxBodyBytes) {
            return false;
        }
        body = new BodyBuffer(length > 0 ? (int) length : 1024);
        return true;
    }

    private void onContent(HttpContent c) {
        if (closing || head == null) {
            return;
        }
        if (c.decoderResult().isFailure()) {
            Throwable cause = c.decoderResult().cause();
            reject(head, Refusal.of(cause, RequestDecoder.statusOf(cause)));
            return;
        }
        if (c.content().isReadable()) {
            if (body == null && !startBody()
                || body.size() + (long) c.content().readableBytes() > config.maxBodyBytes) {
                reject(head, Refusal.BODY_TOO_LARGE);
                return;
            }
            body.append(c.content());
        }
        if (c instanceof LastHttpContent) {
            Exchange ex = new Exchange(this, head, body == null ? null : body.toInputStream(), headKeepAlive, 0);
            head = null;
            body = null;
            if (decoder != null) {
                decoder.partialSince = 0;
            }
            enqueue(ex);
        }
    }

    /** Answers {@code why} in order, then closes: nothing after this request is read. */
    private void reject(HttpRequest r, Refusal why) {
        head = null;
        body = null;
        closing = true;
        queue.add(Exchange.rejected(this, r, why));
        drain();
    }

    private void enqueue(Exchange ex) {
        if (server.offLoop && output.reading && active == null) {
            queue.add(ex); // dispatched at the end of the read, with the requests read after it
            if (!readPaused && queue.size() > config.maxPipelined) {
                readPaused = true;
                ctx.channel().config().setAutoRead(false);
            }
            return;
        }
        if (active == null && queue.isEmpty() && !draining && !writePaused) {
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
        if (!readPaused && queue.size() >= config.maxPipelined) {
            readPaused = true;
            ctx.channel().config().setAutoRead(false);
        }
    }

    /** Starts queued exchanges one at a time; re-entrant calls return at once. */
    private void drain() {
        if (draining) {
            return;
        }
        draining = true;
        try {
            while (active == null && !queue.isEmpty() && !writePaused) {
                start(queue.poll());
            }
        } finally {
            draining = false;
        }
        if (readPaused && queue.isEmpty() && !closing && !writePaused) {
            readPaused = false;
            ctx.channel().config().setAutoRead(true);
        }
    }

    private void start(Exchange ex) {
        active = ex;
        if (ex.reject != 0) {
            ServerAnswers.write(this, ex, (Refusal) ex.response);
            return;
        }
        if (config.mode == HandlerMode.EVENT_LOOP) {
            ex.invoke();
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
        if (ex != active || ex.written || completingChain) {
            return; // not its turn yet (or already written): finished() of the one before picks it up
        }
        completingChain = true;
        try {
            Exchange cur = ex;
            while (cur != null) {
                cur.written = true;
                if (cur.keepAlive && server.draining && queue.isEmpty() && running.isEmpty() && head == null) {
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
            output.closeAfterFlush(!inputShut && (ex.reject != 0 || head != null));
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
        head = null;
        body = null;
        decoder.partialSince = 0;
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
        if (active == null && queue.isEmpty() && running.isEmpty() && head == null) {
            closing = true;
            ctx.close();
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        boolean writable = ctx.channel().isWritable();
        if (!writable && !writePaused && !closing) {
            writePaused = true;
            ctx.channel().config().setAutoRead(false);
        } else if (writable && writePaused) {
            writePaused = false;
            drain();
            if (!readPaused && !closing) {
                ctx.channel().config().setAutoRead(true);
            }
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
        head = null;
        body = null;
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
        return head;
    }

    /** Something is in flight; a client that reads none of its responses (write-paused) does not count. */
    boolean busy() {
        return (active != null || !queue.isEmpty()) && !writePaused;
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
