package herald.http.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.socket.DuplexChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * One pooled direct buffer that the fixed responses of a read batch are encoded into, written to the channel as
 * a single message before anything else is written and on flush: 16 pipelined responses, one write. Flushes
 * asked for during a read batch or a hand-off drain happen once, at its end.
 */
final class OutputBatch {
    private static final int LARGE = 65536;
    private static final long LINGER_MS = 2000;
    private static final byte[] CONTINUE = "HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    private final ChannelHandlerContext ctx;
    private ByteBuf batch;
    /** A read batch is in progress: flushes wait for its end. */
    boolean reading;
    /** A {@link Handoff} drain is writing answers: flushes wait for its end. */
    boolean deferred;
    private boolean needsFlush;
    /** The connection's output is shut down and its input is being dropped until it closes. */
    boolean lingering;
    /** The event loop's scratch state, looked up on first use (a field read is cheaper than a thread-local). */
    private LoopState loop;

    OutputBatch(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    /** The scratch state of the connection's event loop (call on the event loop only). */
    LoopState loop() {
        LoopState l = loop;
        if (l == null) {
            loop = l = LoopState.get();
        }
        return l;
    }

    ByteBuf out() {
        if (batch == null) {
            batch = ctx.alloc().directBuffer(4096);
        }
        return batch;
    }

    void writeBatch() {
        ByteBuf b = batch;
        if (b != null) {
            batch = null;
            if (b.isReadable()) {
                ctx.write(b, ctx.voidPromise());
            } else {
                b.release();
            }
        }
    }

    /** Hands a large batch to Netty early, so one read batch never buffers without bound. */
    void writeIfLarge() {
        if (batch != null && batch.readableBytes() > LARGE) {
            writeBatch();
        }
    }

    void write(Object msg) {
        writeBatch();
        ctx.write(msg, ctx.voidPromise());
    }

    /** Flush now, or at the end of the current read batch or hand-off drain. */
    void flushLater() {
        if (reading || deferred) {
            needsFlush = true;
            writeIfLarge();
        } else {
            flushNow();
        }
    }

    /** The end of a read batch or a drain: flush what waited for it. */
    void endBatch() {
        if (needsFlush && !reading && !deferred) {
            needsFlush = false;
            flushNow();
        }
    }

    void flushNow() {
        writeBatch();
        ctx.flush();
    }

    /** Sends "100 Continue" now, after whatever is batched. */
    void writeContinue() {
        writeBatch();
        ctx.writeAndFlush(Unpooled.wrappedBuffer(CONTINUE));
    }

    /**
     * Flushes, then closes; with {@code linger}, half-closes first and reads (and drops) input for up to two
     * seconds, so a client still sending a request body reads the response instead of a reset.
     */
    void closeAfterFlush(boolean linger) {
        writeBatch();
        ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener((ChannelFutureListener) f -> {
            if (linger && f.channel() instanceof DuplexChannel d && f.channel().isActive() && !d.isInputShutdown()) {
                f.channel().config().setAutoRead(true);
                lingering = true;
                d.shutdownOutput();
                f.channel().eventLoop().schedule(() -> { f.channel().close(); }, LINGER_MS, TimeUnit.MILLISECONDS);
            } else {
                f.channel().close();
            }
        });
    }

    void release() {
        if (batch != null) {
            batch.release();
            batch = null;
        }
    }
}
