package herald.http.websocket;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.socket.DuplexChannel;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CorruptedWebSocketFrameException;
import io.netty.handler.codec.http.websocketx.WebSocketCloseStatus;
import io.netty.handler.codec.http.websocketx.WebSocketFrameDecoder;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.ReferenceCountUtil;
import java.util.concurrent.TimeUnit;

/**
 * The close handshake of one WebSocket (RFC 6455 7.1), on the channel's event loop except {@link #sendClose}.
 *
 * <ul>
 *   <li>The server closes ({@link HeraldWebSocket#close}): close frame, then wait up to {@code closeWaitMs} ({@code :websocket-close-wait-ms})
 *       for the peer's close; on it the connection closes at once (the server closes TCP first, 7.1.1).</li>
 *   <li>The peer closes: the close is echoed once with the peer's code (none when it sent none), then the
 *       connection ends gracefully.</li>
 *   <li>The peer breaks the protocol (a bad frame, an oversized message, bad UTF-8, a bad close frame): a close
 *       frame with the code (1002, 1009, 1007; 7.1.7), then the connection ends gracefully.</li>
 * </ul>
 * Ending gracefully: after the last frame is flushed (and, over TLS, a close_notify), the output is shut down
 * (FIN), input is read and dropped for up to {@link #LINGER_MS}, and the connection closes when the peer closes its
 * side or at that bound, so the peer reads the close frame rather than a TCP reset. Nothing is sent after a close
 * frame.
 */
final class CloseHandshake {
    /** How long input is discarded after the last frame before the connection is closed anyway. */
    static final long LINGER_MS = 2000;
    static final String DISCARD = "herald-ws-discard";

    enum Why { LOCAL, ECHO, FAIL }

    private final Channel ch;
    private final HeraldWebSocket socket;
    /** How long a close the server started waits for the peer's close. */
    private final long closeWaitMs;
    // event-loop state
    private boolean failed;
    private boolean peerClosed;
    private boolean closeFlushed;
    private boolean finishing;

    CloseHandshake(Channel ch, HeraldWebSocket socket, long closeWaitMs) {
        this.ch = ch;
        this.socket = socket;
        this.closeWaitMs = closeWaitMs;
    }

    /** True once the peer broke the protocol: later frames are dropped, not delivered. */
    boolean failed() {
        return failed;
    }

    /** Writes this socket's only close frame (any thread); what follows depends on {@code why}. */
    void sendClose(CloseWebSocketFrame frame, Why why) {
        ch.writeAndFlush(frame).addListener(f -> closeWritten(f.isSuccess(), why));
    }

    private void closeWritten(boolean ok, Why why) {
        closeFlushed = true;
        if (!ok) {
            socket.closeNotSent();
            ch.close();
        } else if (why != Why.LOCAL) {
            finish();
        } else if (peerClosed) {
            ch.close();
        } else if (failed) {
            finish();
        } else {
            ch.eventLoop().schedule(() -> { ch.close(); }, closeWaitMs, TimeUnit.MILLISECONDS);
        }
    }

    /** The peer's close frame ({@code code} -1 when it carried none). */
    void peerClose(int code, String reason) {
        if (failed || peerClosed) {
            return;
        }
        if (code >= 0 && !CloseCodes.valid(code)) {
            String why = "invalid close code " + code;
            fail(CloseCodes.PROTOCOL_ERROR, why,
                new CorruptedWebSocketFrameException(WebSocketCloseStatus.PROTOCOL_ERROR, why));
            return;
        }
        peerClosed = true;
        if (socket.claimClose(code < 0 ? CloseCodes.NO_STATUS : code, reason == null ? "" : reason)) {
            sendClose(code < 0 ? new CloseWebSocketFrame() : new CloseWebSocketFrame(code, ""), Why.ECHO);
        } else if (closeFlushed) {
            ch.close(); // the handshake the server started is complete
        }
    }

    /** The peer broke the protocol: close frame {@code code} (unless one was sent already), then end gracefully. */
    void fail(int code, String reason, Throwable cause) {
        if (failed || peerClosed) {
            return;
        }
        failed = true;
        socket.error(cause);
        discardInput();
        String r = CloseCodes.fit(reason);
        if (socket.claimClose(code, r)) {
            sendClose(new CloseWebSocketFrame(code, r), Why.FAIL);
        } else if (closeFlushed) {
            finish();
        } // else the server's own close frame is on its way: closeWritten finishes
    }

    /** After the last frame: FIN, drop input, close when the peer closes or after {@link #LINGER_MS}. */
    private void finish() {
        if (finishing) {
            return;
        }
        finishing = true;
        if (ch instanceof DuplexChannel d && ch.isActive() && !d.isOutputShutdown()) {
            discardInput();
            ch.config().setAutoRead(true);
            SslHandler tls = ch.pipeline().get(SslHandler.class);
            ChannelFuture flushed = tls == null ? ch.newSucceededFuture() : tls.closeOutbound(); // close_notify
            flushed.addListener(n -> d.shutdownOutput().addListener(f -> {
                if (!f.isSuccess()) {
                    ch.close();
                }
            }));
            ch.eventLoop().schedule(() -> { ch.close(); }, LINGER_MS, TimeUnit.MILLISECONDS);
        } else {
            ch.close();
        }
    }

    /** Drops every byte that arrives from now on, before the frame decoder sees it. */
    private void discardInput() {
        ChannelPipeline p = ch.pipeline();
        ChannelHandlerContext decoder = p.context(WebSocketFrameDecoder.class);
        if (decoder != null && p.get(DISCARD) == null) {
            p.addBefore(decoder.name(), DISCARD, Discard.INSTANCE);
        }
    }

    @ChannelHandler.Sharable
    private static final class Discard extends ChannelInboundHandlerAdapter {
        static final Discard INSTANCE = new Discard();

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ReferenceCountUtil.release(msg);
        }
    }
}
