package herald.http.http2;

import herald.http.config.ServerConfig;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The first handler of a plaintext connection when HTTP/2 is on: reads until the first bytes either match the
 * HTTP/2 client preface (h2c with prior knowledge: the HTTP/2 handlers are added) or cannot (the HTTP/1.1
 * handlers are added, with the {@code Upgrade: h2c} watcher), then removes itself and passes the bytes on. Costs
 * one look per connection, nothing per request. A connection that sends nothing decisive is closed after the
 * shorter of the header and request timeouts (else the idle timeout).
 */
public final class PrefaceDetector extends ByteToMessageDecoder {
    private static final byte[] PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    private final Http2Host host;
    private ScheduledFuture<?> timeout;

    public PrefaceDetector(Http2Host host) {
        this.host = host;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        ServerConfig c = host.config();
        long ms = c.requestTimeoutMs > 0 ? c.requestTimeoutMs : c.idleTimeoutMs;
        if (c.headerTimeoutMs > 0 && (ms <= 0 || c.headerTimeoutMs < ms)) {
            ms = c.headerTimeoutMs;
        }
        if (ms > 0) {
            timeout = ctx.executor().schedule(() -> {
                if (!ctx.isRemoved()) {
                    ctx.close();
                }
            }, ms, TimeUnit.MILLISECONDS);
        }
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
        if (timeout != null) {
            timeout.cancel(false);
        }
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        int n = Math.min(in.readableBytes(), PREFACE.length);
        int start = in.readerIndex();
        for (int i = 0; i < n; i++) {
            if (in.getByte(start + i) != PREFACE[i]) {
                host.addHttp1(ctx.pipeline(), true);
                ctx.pipeline().remove(this);
                return;
            }
        }
        if (n == PREFACE.length) {
            Http2Pipelines.add(ctx.pipeline(), host);
            ctx.pipeline().remove(this);
        }
    }
}
