package herald.http.server;

import herald.http.config.HandlerMode;
import herald.http.config.ServerConfig;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.util.ReferenceCountUtil;

/**
 * One per channel (an HTTP/1.1 connection or an HTTP/2 stream): the Netty handler that takes the decoded request
 * parts to the {@link RequestReceiver} (which assembles requests and enforces the body limit before the handler),
 * pauses and resumes reading ({@link ReadGate}) and flushes once per read batch ({@link OutputBatch}). Two parts do
 * the rest: {@link ExchangeQueue} answers requests in order, pipelined ones included, and {@link ConnectionEnd}
 * closes the connection (after a last answer, on the client's half-close, on a timeout, at shutdown).
 */
public final class HttpConnection extends ChannelInboundHandlerAdapter {
    final ServerContext server;
    final ServerConfig config;
    ConnectionInfo info;
    private ChannelHandlerContext ctx;
    private EventLoop eventLoop;
    /** The request being received. */
    final RequestReceiver receiver;
    /** The exchanges in order: the one answered, those queued or handed to a worker behind it. */
    final ExchangeQueue exchanges;
    /** The close, half-close and timeout handling. */
    final ConnectionEnd end;
    /** Why the connection is not read now (pipelined queue full, writes backed up, streamed body unread). */
    ReadGate gate;
    Handoff handoff;
    /** Fixed responses of the current read batch, written as one buffer on flush. */
    OutputBatch output;
    /** The HTTP/1.1 decoder in front of this handler; null on an HTTP/2 stream. */
    final HeadProgress decoder;

    /** Set on a connection accepted beyond {@code :max-connections}, in the reserve: health probes only. */
    static final io.netty.util.AttributeKey<Boolean> RESERVE = io.netty.util.AttributeKey.valueOf("herald-reserve");
    /** This connection (or the HTTP/2 connection of this stream) is in the reserve. */
    boolean reserveOnly;

    HttpConnection(ServerContext server, HeadProgress decoder) {
        this.server = server;
        this.config = server.config;
        this.decoder = decoder;
        this.receiver = new RequestReceiver(this, config, decoder);
        this.exchanges = new ExchangeQueue(this);
        this.end = new ConnectionEnd(this);
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
        info = ConnectionInfo.of(ctx.channel(), server.serverPort, config.proxy);
        handoff = server.handoff(eventLoop);
        end.start();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        output.reading = true;
        end.read();
        RequestHead head = msg instanceof RequestHead r ? r : null;
        if ((head != null ? head.full : msg instanceof LastHttpContent) && config.mode == HandlerMode.EVENT_LOOP) {
            output.out(); // allocate where the stack is shallow: the leak detector's sampled traces stay cheap
        }
        try {
            if (head != null) {
                onHead(head);
                if (head.full) {
                    onContent(LastHttpContent.EMPTY_LAST_CONTENT); // the whole request: no content follows
                }
            } else if (msg instanceof HttpContent c) {
                onContent(c);
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        output.reading = false;
        exchanges.readDone(); // off the event loop: the requests of this read go to one worker together
        output.endBatch();
    }

    private void onHead(RequestHead r) {
        r.arrivedOn(info);
        if (!end.closing()) {
            receiver.onHead(r);
            end.headArrived();
        }
    }

    private void onContent(HttpContent c) {
        if (!end.closing()) {
            receiver.onContent(c);
        }
    }

    /** Answers {@code why} in order, then closes: nothing after this request is read. */
    void reject(RequestHead r, Refusal why) {
        r.arrivedOn(info);
        receiver.abandon("request refused");
        end.markClosing();
        exchanges.add(Exchange.rejected(this, r, why));
    }

    /**
     * The streamed body of {@code ex} is refused (over {@code :max-body-bytes}, or malformed): {@code why} is its
     * answer, now when it is the exchange being answered (its handler's answer, when it comes, is dropped), else in
     * its turn; the connection closes after it.
     */
    void refuseStreamed(Exchange ex, Refusal why) {
        end.markClosing();
        ex.refusal = why;
        ex.keepAlive = false;
        if (exchanges.isActive(ex) && !ex.written) {
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
            gate.resume(ReadGate.BODY, !end.closing() && ctx.channel().isActive());
        }
    }

    /** The request being received (its head arrived, not all of its body yet); null between requests. */
    RequestHead receiving() {
        return receiver.head;
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        boolean writable = ctx.channel().isWritable();
        if (!writable && !gate.paused(ReadGate.WRITES) && !end.closing()) {
            gate.pause(ReadGate.WRITES);
        } else if (writable && gate.paused(ReadGate.WRITES)) {
            gate.resume(ReadGate.WRITES, false);
            exchanges.drain();
            gate.resume(0, !end.closing());
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt == HeraldServer.SHUTDOWN_EVENT) {
            end.shutdown();
        } else if (evt == ChannelInputShutdownEvent.INSTANCE && decoder != null) {
            end.inputShutdown();
        } else {
            ctx.fireUserEventTriggered(evt);
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        end.closed();
        exchanges.closed(server.closing); // interrupted when the server stopped for good
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
}
