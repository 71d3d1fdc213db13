package herald.http.http2;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.DuplexChannel;
import io.netty.util.ReferenceCountUtil;
import java.util.concurrent.TimeUnit;

/**
 * In front of a plaintext (h2c) connection's codec: when the codec closes the connection after a connection error,
 * the GOAWAY it wrote is followed by a half-close and input is read and dropped until the client closes (at most
 * {@value #LINGER_MS} ms), as on HTTP/1.1's error path. Closed at once, a connection with unread input (the rest of
 * an oversized frame, say) is reset by the kernel, and the reset can destroy the GOAWAY before the client reads it.
 * Over TLS the TLS handler closes with close_notify instead; other closes (idle, server stop) are not delayed.
 */
final class LingerClose extends ChannelDuplexHandler {
    static final long LINGER_MS = 1000;
    private final GuardedCodec codec;
    private boolean lingering;

    LingerClose(GuardedCodec codec) {
        this.codec = codec;
    }

    @Override
    public void close(ChannelHandlerContext ctx, ChannelPromise promise) {
        if (lingering || !codec.failed() || !(ctx.channel() instanceof DuplexChannel d) || !d.isActive()) {
            ctx.close(promise);
            return;
        }
        lingering = true;
        d.closeFuture().addListener(f -> promise.trySuccess());
        ctx.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener((ChannelFutureListener) f -> {
            if (!d.isActive()) {
                return;
            }
            d.config().setAutoRead(true);
            d.shutdownOutput(); // a FIN after the GOAWAY; the client's FIN (end of input) then closes the channel
            d.eventLoop().schedule(() -> {
                d.close();
            }, LINGER_MS, TimeUnit.MILLISECONDS);
        });
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (lingering) {
            ReferenceCountUtil.release(msg);
        } else {
            ctx.fireChannelRead(msg);
        }
    }
}
