package herald.http.server;

import io.netty.channel.ChannelHandlerContext;

/**
 * Why a connection (or HTTP/2 stream) is not being read, one bit per reason: too many pipelined requests queued,
 * too many response bytes unwritten, a streamed request body with too many bytes unread. The first reason turns
 * the channel's autoRead off; clearing the last one may turn it back on (event loop only).
 */
final class ReadGate {
    static final int PIPELINE = 1;
    static final int WRITES = 2;
    static final int BODY = 4;

    private final ChannelHandlerContext ctx;
    private int reasons;

    ReadGate(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    boolean paused(int reason) {
        return (reasons & reason) != 0;
    }

    void pause(int reason) {
        if (reasons == 0) {
            ctx.channel().config().setAutoRead(false);
        }
        reasons |= reason;
    }

    /** Clears {@code reason} (0: none); reads again when no reason is left and {@code read}. */
    void resume(int reason, boolean read) {
        reasons &= ~reason;
        if (reasons == 0 && read) {
            ctx.channel().config().setAutoRead(true);
        }
    }
}
