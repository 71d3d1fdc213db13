package herald.http.server;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;

/**
 * One pooled direct buffer that the fixed responses of a read batch are encoded into, written to the channel as
 * a single message before anything else is written and on flush: 16 pipelined responses, one write.
 */
final class OutputBatch {
    private static final int LARGE = 65536;
    private final ChannelHandlerContext ctx;
    private ByteBuf batch;

    OutputBatch(ChannelHandlerContext ctx) {
        this.ctx = ctx;
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

    void flushNow() {
        writeBatch();
        ctx.flush();
    }

    void release() {
        if (batch != null) {
            batch.release();
            batch = null;
        }
    }
}
