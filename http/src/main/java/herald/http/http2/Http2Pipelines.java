package herald.http.http2;

import herald.http.config.ServerConfig;
import herald.http.server.HeraldServer;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http2.Http2FrameCodec;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
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
        Http2FrameCodec codec = Http2FrameCodecBuilder.forServer()
            .initialSettings(settings(config))
            .validateHeaders(true)
            .gracefulShutdownTimeoutMillis(config.shutdownTimeoutMs)
            .build();
        Object facts = host.connectionFacts(p.channel());
        if (config.idleTimeoutMs > 0) {
            p.addLast("herald-h2-idle", new IdleStateHandler(0, 0, config.idleTimeoutMs, TimeUnit.MILLISECONDS));
        }
        p.addLast(CODEC, codec)
            .addLast("herald-h2-streams", new Http2MultiplexHandler(new ChannelInitializer<Http2StreamChannel>() {
                @Override
                protected void initChannel(Http2StreamChannel ch) {
                    ch.pipeline().addLast(STREAM_ADAPTER, new StreamAdapter(config.maxRequestLineBytes));
                    host.addStreamHandler(ch.pipeline(), facts);
                }
            }))
            .addLast("herald-h2-control", new Control(codec));
        return codec;
    }

    /**
     * Graceful stop: on the server's shutdown event the connection is closed through the codec, which sends GOAWAY,
     * refuses new streams and closes once the open ones are done (or the shutdown timeout passed). Idle: closed when
     * nothing was read or written for the idle timeout and no stream is open.
     */
    static final class Control extends ChannelInboundHandlerAdapter {
        private final Http2FrameCodec codec;

        Control(Http2FrameCodec codec) {
            this.codec = codec;
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            if (evt == HeraldServer.SHUTDOWN_EVENT) {
                ctx.close();
            } else if (evt instanceof IdleStateEvent) {
                if (codec.connection().numActiveStreams() == 0) {
                    ctx.close();
                }
            } else {
                ctx.fireUserEventTriggered(evt);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    /** The channel's pipeline is HTTP/2 (for tests and diagnostics). */
    public static boolean isHttp2(Channel ch) {
        return ch.pipeline().get(CODEC) != null;
    }
}
