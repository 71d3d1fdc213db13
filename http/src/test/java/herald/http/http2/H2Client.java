package herald.http.http2;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2GoAwayFrame;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2ResetFrame;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2SettingsFrame;
import io.netty.handler.codec.http2.Http2StreamChannel;
import io.netty.handler.codec.http2.Http2StreamChannelBootstrap;
import io.netty.util.ReferenceCountUtil;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A small HTTP/2 client for tests, on Netty's own HTTP/2 codec: plaintext with prior knowledge (no upgrade), one
 * connection, one stream per request, many at once. Records the server's SETTINGS and any GOAWAY. It sends header
 * lists larger than the server's SETTINGS allow, so the server's own limit can be tested.
 */
public final class H2Client implements AutoCloseable {
    /** One answer: status, headers (lower-case names, values in order), the body; resetCode: -1, or the RST_STREAM code that ended it. */
    public record Response(int status, Map<String, List<String>> headers, byte[] body, long resetCode) {
        public String text() {
            return new String(body, java.nio.charset.StandardCharsets.UTF_8);
        }

        public String header(String name) {
            List<String> v = headers.get(name);
            return v == null ? null : String.join(",", v);
        }
    }

    private final EventLoopGroup group;
    private final Channel channel;
    private final CountDownLatch settingsSeen = new CountDownLatch(1);
    private volatile Http2Settings serverSettings;
    private volatile Long goAwayLastStream;

    private H2Client(String host, int port) throws InterruptedException {
        group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        channel = new Bootstrap().group(group).channel(NioSocketChannel.class)
            .handler(new ChannelInitializer<SocketChannel>() {
                @Override
                protected void initChannel(SocketChannel ch) {
                    ch.pipeline().addLast(Http2FrameCodecBuilder.forClient().encoderIgnoreMaxHeaderListSize(true).build(),
                        new Http2MultiplexHandler(new ChannelInboundHandlerAdapter()),
                        new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                if (msg instanceof Http2SettingsFrame s) {
                                    serverSettings = s.settings();
                                    settingsSeen.countDown();
                                } else if (msg instanceof Http2GoAwayFrame g) {
                                    goAwayLastStream = (long) g.lastStreamId();
                                }
                                ReferenceCountUtil.release(msg);
                            }
                        });
                }
            }).connect(host, port).sync().channel();
        settingsSeen.await(5, TimeUnit.SECONDS);
    }

    /** Connects with prior knowledge to {@code host:port} and waits for the server's SETTINGS. */
    public static H2Client connect(String host, int port) throws InterruptedException {
        return new H2Client(host, port);
    }

    public Http2Settings serverSettings() {
        return serverSettings;
    }

    /** The last stream id of the GOAWAY the server sent, or null. */
    public Long goAwayLastStream() {
        return goAwayLastStream;
    }

    public boolean isOpen() {
        return channel.isActive();
    }

    /** Sends a request on a new stream; {@code headers} may repeat names as a list of [name, value] pairs. */
    public CompletableFuture<Response> send(String method, String path, List<String[]> headers, byte[] body) {
        return send(method, path, headers, body, false);
    }

    /** Sends only the HEADERS of a request with a body that never comes (the stream stays open). */
    public CompletableFuture<Response> sendHeadersOnly(String method, String path) {
        return send(method, path, null, null, true);
    }

    private CompletableFuture<Response> send(String method, String path, List<String[]> headers, byte[] body,
                                             boolean stall) {
        CompletableFuture<Response> result = new CompletableFuture<>();
        Http2StreamChannelBootstrap b = new Http2StreamChannelBootstrap(channel).handler(new Collector(result));
        b.open().addListener(f -> {
            if (!f.isSuccess()) {
                result.completeExceptionally(f.cause());
                return;
            }
            Http2StreamChannel s = (Http2StreamChannel) f.getNow();
            Http2Headers h = new DefaultHttp2Headers().method(method).path(path).scheme("http")
                .authority("127.0.0.1");
            if (headers != null) {
                for (String[] kv : headers) {
                    h.add(kv[0], kv[1]);
                }
            }
            boolean noBody = body == null;
            s.write(new DefaultHttp2HeadersFrame(h, noBody && !stall));
            if (!noBody) {
                int chunk = 16384;
                for (int off = 0; off < body.length || off == 0; off += chunk) {
                    int n = Math.min(chunk, body.length - off);
                    boolean last = off + n >= body.length;
                    s.write(new DefaultHttp2DataFrame(Unpooled.wrappedBuffer(body, off, n), last));
                    if (last) {
                        break;
                    }
                }
            }
            s.flush();
        });
        return result;
    }

    /** {@link #send} and wait up to 60 s (a loaded 2-core CI machine). */
    public Response request(String method, String path, List<String[]> headers, byte[] body) throws Exception {
        return send(method, path, headers, body).get(60, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        channel.close().awaitUninterruptibly();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly();
    }

    /** Gathers one stream's answer. */
    private static final class Collector extends ChannelInboundHandlerAdapter {
        private final CompletableFuture<Response> result;
        private final Map<String, List<String>> headers = new LinkedHashMap<>();
        private final ByteArrayOutputStream body = new ByteArrayOutputStream();
        private int status;

        Collector(CompletableFuture<Response> result) {
            this.result = result;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            try {
                if (msg instanceof Http2HeadersFrame h) {
                    CharSequence st = h.headers().status();
                    if (st != null && status == 0) {
                        status = Integer.parseInt(st.toString());
                    }
                    h.headers().forEach(e -> {
                        String name = e.getKey().toString();
                        if (!name.startsWith(":")) {
                            headers.computeIfAbsent(name, k -> new ArrayList<>()).add(e.getValue().toString());
                        }
                    });
                    if (h.isEndStream()) {
                        done(-1);
                    }
                } else if (msg instanceof Http2DataFrame d) {
                    ByteBuf c = d.content();
                    byte[] b = new byte[c.readableBytes()];
                    c.getBytes(c.readerIndex(), b);
                    body.write(b, 0, b.length);
                    if (d.isEndStream()) {
                        done(-1);
                    }
                } else if (msg instanceof Http2ResetFrame r) {
                    done(r.errorCode());
                }
            } finally {
                ReferenceCountUtil.release(msg);
            }
        }

        private void done(long resetCode) {
            result.complete(new Response(status, headers, body.toByteArray(), resetCode));
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            result.completeExceptionally(new java.io.IOException("stream closed without an answer"));
        }
    }
}
