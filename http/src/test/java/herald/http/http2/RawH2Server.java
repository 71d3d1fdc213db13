package herald.http.http2;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.util.AsciiString;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;

/**
 * The HTTP/2 ceiling for bench/results/http2.md: raw Netty h2c (prior knowledge only) with the same stream model
 * as herald (Http2FrameCodec + one child channel per stream), answering every request with {@code Hello, World!}
 * as text/plain with Server, Date and content-length, on the event loop. {@code --port N --threads N}; prints
 * {@code READY <port>}.
 */
public final class RawH2Server {
    private static final byte[] HELLO = "Hello, World!".getBytes(StandardCharsets.US_ASCII);
    private static final AsciiString TEXT = AsciiString.cached("text/plain");
    private static final AsciiString LENGTH = AsciiString.cached(String.valueOf(HELLO.length));
    private static final AsciiString SERVER = AsciiString.cached("netty");
    private static volatile AsciiString date = now();

    private RawH2Server() {}

    private static AsciiString now() {
        return new AsciiString(DateTimeFormatter.RFC_1123_DATE_TIME.format(ZonedDateTime.now(java.time.ZoneOffset.UTC)));
    }

    @ChannelHandler.Sharable
    static final class Hello extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            boolean end = msg instanceof Http2HeadersFrame h && h.isEndStream()
                || msg instanceof Http2DataFrame d && d.isEndStream();
            ReferenceCountUtil.release(msg);
            if (end) {
                Http2Headers hs = new DefaultHttp2Headers(false).status(AsciiString.cached("200"))
                    .add(AsciiString.cached("content-type"), TEXT).add(AsciiString.cached("server"), SERVER)
                    .add(AsciiString.cached("date"), date).add(AsciiString.cached("content-length"), LENGTH);
                ctx.write(new DefaultHttp2HeadersFrame(hs, false));
                ByteBuf body = Unpooled.wrappedBuffer(HELLO);
                ctx.write(new DefaultHttp2DataFrame(body, true));
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }
    }

    public static void main(String[] args) throws Exception {
        int port = 0;
        int threads = 1;
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (args[i].equals("--port")) {
                port = Integer.parseInt(args[i + 1]);
            } else if (args[i].equals("--threads")) {
                threads = Integer.parseInt(args[i + 1]);
            }
        }
        boolean epoll = Epoll.isAvailable();
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(threads,
            epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
        group.scheduleAtFixedRate(() -> date = now(), 1, 1, java.util.concurrent.TimeUnit.SECONDS);
        Hello hello = new Hello();
        Channel ch = new ServerBootstrap().group(group)
            .channel(epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class)
            .childOption(ChannelOption.TCP_NODELAY, true)
            .childHandler(new ChannelInitializer<SocketChannel>() {
                @Override
                protected void initChannel(SocketChannel c) {
                    c.pipeline().addLast(Http2FrameCodecBuilder.forServer()
                            .initialSettings(new Http2Settings().maxConcurrentStreams(128)).build(),
                        new Http2MultiplexHandler(hello));
                }
            }).bind("127.0.0.1", port).sync().channel();
        System.out.println("READY " + ((InetSocketAddress) ch.localAddress()).getPort());
        ch.closeFuture().sync();
    }
}
