package herald.http.http2;

import herald.http.config.ServerConfig;
import herald.http.server.HeraldServer;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.ssl.SslHandler;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/** Builds an HTTP/2 connection's pipeline: frame codec, one child channel per stream, shutdown and idle control. */
public final class Http2Pipelines {
    static final String CODEC = "herald-h2-codec";
    static final String STREAM_ADAPTER = "herald-h2-stream";

    private Http2Pipelines() {}

    /** The SETTINGS the server sends: concurrent streams and the header list size from the config. */
    public static Http2Settings settings(ServerConfig config) {
        return new Http2Settings()
            .maxConcurrentStreams(config.http2MaxConcurrentStreams)
            .maxHeaderListSize(config.maxHeaderBytes);
    }

    /** Adds the HTTP/2 handlers at the end of {@code p} and returns the frame codec. */
    public static Http2FrameCodec add(ChannelPipeline p, Http2Host host) {
        ServerConfig config = host.config();
        GuardedCodec codec = (GuardedCodec) GuardedCodec.builder()
            .initialSettings(settings(config))
            .validateHeaders(true)
            .gracefulShutdownTimeoutMillis(config.shutdownTimeoutMs)
            .build();
        Object facts = host.connectionFacts(p.channel());
        if (p.get(SslHandler.class) == null) {
            p.addLast("herald-h2-linger", new LingerClose(codec));
        }
        HeadersTracker frames = new HeadersTracker();
        codec.answers(host, frames);
        p.addLast("herald-h2-frames", frames)
            .addLast(CODEC, codec)
            .addLast("herald-h2-streams", new Http2MultiplexHandler(new ChannelInitializer<Http2StreamChannel>() {
                @Override
                protected void initChannel(Http2StreamChannel ch) {
                    ch.pipeline().addLast(STREAM_ADAPTER, new StreamAdapter(config.maxRequestLineBytes));
                    host.addStreamHandler(ch.pipeline(), facts);
                }
            }))
            .addLast("herald-h2-control", new Control(codec, config.idleTimeoutMs));
        return codec;
    }

    /**
     * Graceful stop: on the server's shutdown event the connection is closed through the codec, which sends GOAWAY,
     * refuses new streams and closes once the open ones are done (or the shutdown timeout passed). Idle: closed
     * (GOAWAY) once no stream has been open for the idle timeout, checked every tenth of it (no per-write cost).
     */
    static final class Control extends ChannelInboundHandlerAdapter {
        private final Http2FrameCodec codec;
        private final long idleMs;
        private ScheduledFuture<?> tick;
        private long busyAt = System.nanoTime();

        Control(Http2FrameCodec codec, long idleMs) {
            this.codec = codec;
            this.idleMs = idleMs;
        }

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            if (idleMs > 0) {
                long p = Math.max(10, idleMs / 10);
                tick = ctx.executor().scheduleAtFixedRate(() -> check(ctx), p, p, TimeUnit.MILLISECONDS);
            }
        }

        private void check(ChannelHandlerContext ctx) {
            long now = System.nanoTime();
            if (codec.connection().numActiveStreams() > 0) {
                busyAt = now;
            } else if (now - busyAt >= TimeUnit.MILLISECONDS.toNanos(idleMs) && ctx.channel().isActive()) {
                ctx.close();
            }
        }

        @Override
        public void handlerRemoved(ChannelHandlerContext ctx) {
            if (tick != null) {
                tick.cancel(false);
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            handlerRemoved(ctx);
            ctx.fireChannelInactive();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt == HeraldServer.SHUTDOWN_EVENT) {
                ctx.close();
            } else {
                ctx.fireUserEventTriggered(evt);
            }
        }

        /** Protocol errors were answered by the codec (RST_STREAM, or GOAWAY then close); anything else closes. */
        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (Http2CodecUtil.getEmbeddedHttp2Exception(cause) == null) {
                ctx.close();
            }
        }
    }

    /** The channel's pipeline is HTTP/2 (for tests and diagnostics). */
    public static boolean isHttp2(Channel ch) {
        return ch.pipeline().get(CODEC) != null;
    }
}
