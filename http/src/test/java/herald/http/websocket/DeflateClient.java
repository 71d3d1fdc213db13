package herald.http.websocket;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketClientHandshaker;
import io.netty.handler.codec.http.websocketx.WebSocketClientHandshakerFactory;
import io.netty.handler.codec.http.websocketx.WebSocketClientProtocolHandler;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketVersion;
import io.netty.handler.codec.http.websocketx.extensions.compression.WebSocketClientCompressionHandler;
import java.net.URI;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A test client: Netty's WebSocket client with its permessage-deflate handler over a real TCP connection. It
 * records the RSV bits of every frame as they are on the wire (before inflating, after deflating) and queues the
 * messages it receives (a String per text message, a byte[] per binary one, "close:CODE" for a close frame).
 */
public final class DeflateClient implements AutoCloseable {
    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final Channel channel;
    /** The RSV bits of each data frame the server sent, as read off the wire. */
    public final List<Integer> inboundRsv = new CopyOnWriteArrayList<>();
    /** The RSV bits of each data frame this client sent, as written to the wire. */
    public final List<Integer> outboundRsv = new CopyOnWriteArrayList<>();
    /** Received messages. */
    public final BlockingQueue<Object> messages = new LinkedBlockingQueue<>();
    /** The Sec-WebSocket-Extensions the server answered (null: none). */
    public volatile String extensions;

    /** Connects to ws://127.0.0.1:port/path and waits for the handshake (offering permessage-deflate when deflate). */
    public DeflateClient(int port, String path, boolean deflate) throws Exception {
        WebSocketClientHandshaker hs = WebSocketClientHandshakerFactory.newHandshaker(
            new URI("ws://127.0.0.1:" + port + path), WebSocketVersion.V13, null, true, new DefaultHttpHeaders(),
            16 * 1024 * 1024);
        WebSocketClientProtocolHandler protocol = new WebSocketClientProtocolHandler(hs, false); // close frames reach the Collector
        channel = new Bootstrap().group(group).channel(NioSocketChannel.class)
            .handler(new ChannelInitializer<SocketChannel>() {
                @Override
                protected void initChannel(SocketChannel ch) {
                    ch.pipeline().addLast(new HttpClientCodec(), new HttpObjectAggregator(65536), new Wire());
                    if (deflate) {
                        ch.pipeline().addLast(new WebSocketClientCompressionHandler(64 * 1024 * 1024));
                    }
                    ch.pipeline().addLast(protocol, new Collector());
                }
            })
            .connect("127.0.0.1", port).sync().channel();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!hs.isHandshakeComplete()) {
            if (System.nanoTime() > deadline || !channel.isActive()) {
                close();
                throw new IllegalStateException("no WebSocket handshake");
            }
            Thread.sleep(5);
        }
    }

    /** Sends a text message (one frame). */
    public void sendText(String s) throws InterruptedException {
        channel.writeAndFlush(new TextWebSocketFrame(s)).sync();
    }

    /** Sends a binary message (one frame). */
    public void sendBinary(byte[] b) throws InterruptedException {
        channel.writeAndFlush(new BinaryWebSocketFrame(io.netty.buffer.Unpooled.wrappedBuffer(b))).sync();
    }

    /** The next received message, or null after {@code ms}. */
    public Object receive(long ms) throws InterruptedException {
        return messages.poll(ms, TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() {
        if (channel != null) {
            channel.close().awaitUninterruptibly();
        }
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly();
    }

    /** Sits between the frame codec and the compression handlers: sees frames as they are on the wire. */
    private final class Wire extends ChannelDuplexHandler {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (msg instanceof io.netty.handler.codec.http.FullHttpResponse r) {
                extensions = r.headers().get("Sec-WebSocket-Extensions");
            } else if (msg instanceof TextWebSocketFrame || msg instanceof BinaryWebSocketFrame) {
                inboundRsv.add(((WebSocketFrame) msg).rsv());
            }
            ctx.fireChannelRead(msg);
        }

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            if (msg instanceof TextWebSocketFrame || msg instanceof BinaryWebSocketFrame) {
                outboundRsv.add(((WebSocketFrame) msg).rsv());
            }
            ctx.write(msg, promise);
        }
    }

    private final class Collector extends SimpleChannelInboundHandler<WebSocketFrame> {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, WebSocketFrame f) {
            if (f instanceof TextWebSocketFrame t) {
                messages.add(t.text());
            } else if (f instanceof BinaryWebSocketFrame b) {
                messages.add(io.netty.buffer.ByteBufUtil.getBytes(b.content()));
            } else if (f instanceof CloseWebSocketFrame c) {
                messages.add("close:" + c.statusCode());
            }
        }
    }
}
