package herald.http.websocket;

import herald.http.server.HeraldServer;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.util.ReferenceCountUtil;
import java.nio.ByteBuffer;

/** Turns (aggregated) WebSocket frames into listener events; answers pings when the listener does not. */
final class WebSocketFrameHandler extends ChannelInboundHandlerAdapter {
    private final HeraldWebSocket socket;

    WebSocketFrameHandler(HeraldWebSocket socket) {
        this.socket = socket;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        try {
            if (msg instanceof TextWebSocketFrame t) {
                socket.message(t.text());
            } else if (msg instanceof BinaryWebSocketFrame b) {
                socket.message(ByteBuffer.wrap(ByteBufUtil.getBytes(b.content())));
            } else if (msg instanceof PingWebSocketFrame p) {
                if (socket.handlesPing()) {
                    socket.ping(ByteBuffer.wrap(ByteBufUtil.getBytes(p.content())));
                } else if (ctx.channel().isActive()) {
                    ctx.writeAndFlush(new PongWebSocketFrame(p.content().retain()));
                }
            } else if (msg instanceof PongWebSocketFrame p) {
                socket.pong(ByteBuffer.wrap(ByteBufUtil.getBytes(p.content())));
            } else if (msg instanceof CloseWebSocketFrame c) {
                socket.peerClosed(c.statusCode(), c.reasonText());
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt == HeraldServer.SHUTDOWN_EVENT) {
            socket.close(1001, "server shutting down");
        } else {
            ctx.fireUserEventTriggered(evt);
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        socket.closed();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (cause instanceof CorruptedWebSocketFrameException c && c.closeStatus() != null) {
            socket.failed(c.closeStatus().code(), c.closeStatus().reasonText());
        }
        socket.error(cause);
        ctx.close();
    }
}
