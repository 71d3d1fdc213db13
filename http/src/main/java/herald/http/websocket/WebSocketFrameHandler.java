package herald.http.websocket;

import herald.http.server.HeraldServer;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;

/**
 * Turns (aggregated) WebSocket frames into listener events; answers pings when the listener does not; turns
 * protocol errors into the close handshake ({@link CloseHandshake}). Outbound, it lets no frame follow a close.
 */
final class WebSocketFrameHandler extends ChannelDuplexHandler {
    private final HeraldWebSocket socket;
    private final CloseHandshake handshake;
    private boolean closeWritten;

    /** The largest message delivered; larger ones fail with 1009 (inflated ones can pass the decoder's check). */
    private final int maxMessageBytes;

    WebSocketFrameHandler(HeraldWebSocket socket) {
        this(socket, Integer.MAX_VALUE);
    }

    WebSocketFrameHandler(HeraldWebSocket socket, int maxMessageBytes) {
        this.socket = socket;
        this.handshake = socket.handshake();
        this.maxMessageBytes = maxMessageBytes;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        try {
            if (handshake.failed()) {
                return; // the peer broke the protocol: nothing after that is delivered
            }
            if (msg instanceof WebSocketFrame f && f.rsv() != 0) {
                // left set after permessage-deflate took RSV1 off: RSV2/RSV3, or RSV1 on a control frame
                handshake.fail(CloseCodes.PROTOCOL_ERROR, "reserved bits set",
                    new CorruptedWebSocketFrameException(WebSocketCloseStatus.PROTOCOL_ERROR, "reserved bits set"));
                return;
            }
            if ((msg instanceof TextWebSocketFrame || msg instanceof BinaryWebSocketFrame)
                && ((WebSocketFrame) msg).content().readableBytes() > maxMessageBytes) {
                handshake.fail(CloseCodes.TOO_BIG, "Message too big",
                    new TooLongFrameException("message over " + maxMessageBytes + " bytes once inflated"));
                return;
            }
            if (msg instanceof TextWebSocketFrame t) {
                socket.message(t.text());
            } else if (msg instanceof BinaryWebSocketFrame b) {
                socket.message(ByteBuffer.wrap(ByteBufUtil.getBytes(b.content())));
            } else if (msg instanceof PingWebSocketFrame p) {
                if (socket.closeSent()) {
                    return; // no pong after the close frame, and none the listener could send
                } else if (socket.handlesPing()) {
                    socket.ping(ByteBuffer.wrap(ByteBufUtil.getBytes(p.content())));
                } else {
                    ctx.channel().writeAndFlush(new PongWebSocketFrame(p.content().retain()));
                }
            } else if (msg instanceof PongWebSocketFrame p) {
                socket.pong(ByteBuffer.wrap(ByteBufUtil.getBytes(p.content())));
            } else if (msg instanceof CloseWebSocketFrame c) {
                handshake.peerClose(c.statusCode(), c.reasonText());
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    /** The close frame is the last frame on the wire (RFC 6455 5.5.1): later frames fail and are dropped. */
    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof WebSocketFrame) {
            if (closeWritten) {
                ReferenceCountUtil.release(msg);
                promise.setFailure(new ClosedChannelException());
                return;
            }
            closeWritten = msg instanceof CloseWebSocketFrame;
        }
        ctx.write(msg, promise);
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

    /**
     * A bad frame or message from the peer (the decoder, the UTF-8 validator, the aggregator) fails the
     * connection with its close code; a broken connection closes at once.
     */
    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (cause instanceof CorruptedWebSocketFrameException c) {
            WebSocketCloseStatus status = c.closeStatus();
            int code = status == null ? CloseCodes.PROTOCOL_ERROR : status.code();
            String reason = c.getMessage() != null ? c.getMessage() : status == null ? "" : status.reasonText();
            handshake.fail(code, reason, cause);
        } else if (cause instanceof TooLongFrameException || Compression.tooBig(cause)) {
            handshake.fail(CloseCodes.TOO_BIG, "Message too big", cause);
        } else if (cause instanceof IOException || cause.getCause() instanceof IOException) {
            if (!handshake.failed()) {
                socket.error(cause);
            }
            ctx.close(); // the connection is broken (a reset, a TLS failure): nothing can be sent
        } else if (cause instanceof DecoderException) {
            handshake.fail(CloseCodes.PROTOCOL_ERROR, "Protocol error", cause);
        } else {
            handshake.fail(CloseCodes.INTERNAL_ERROR, "Internal error", cause);
        }
    }
}
