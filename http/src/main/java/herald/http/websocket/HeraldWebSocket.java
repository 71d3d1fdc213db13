package herald.http.websocket;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.handler.codec.http.websocketx.BinaryWebSocketFrame;
import io.netty.handler.codec.http.websocketx.CloseWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PingWebSocketFrame;
import io.netty.handler.codec.http.websocketx.PongWebSocketFrame;
import io.netty.handler.codec.http.websocketx.TextWebSocketFrame;
import io.netty.handler.codec.http.websocketx.WebSocketFrame;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The socket handed to a WebSocket listener. Sends are thread-safe; a sender off the event loop waits while
 * the channel is not writable, so a slow peer bounds memory. Listener callbacks run through one
 * {@link SerialExecutor}: on-open first, on-close last and only after on-open.
 */
public final class HeraldWebSocket {
    private final Channel ch;
    private final WebSocketListener listener;
    private final SerialExecutor serial;
    private final CloseHandshake close;
    private final AtomicBoolean closeSent = new AtomicBoolean();
    private final AtomicBoolean closeFired = new AtomicBoolean();
    private volatile int closeCode = CloseCodes.ABNORMAL;
    private volatile String closeReason = "";

    HeraldWebSocket(Channel ch, WebSocketListener listener, Executor executor, long closeWaitMs) {
        this.ch = ch;
        this.listener = listener;
        this.serial = new SerialExecutor(executor);
        this.close = new CloseHandshake(ch, this, closeWaitMs);
    }

    /** The underlying Netty channel. */
    public Channel channel() {
        return ch;
    }

    /** True until either side started the close handshake or the connection dropped. */
    public boolean isOpen() {
        return ch.isActive() && !closeSent.get();
    }

    /** Sends a text (CharSequence) or binary (byte[], ByteBuffer) message. */
    public void send(Object message) {
        write(frame(message));
    }

    /** Sends like {@link #send} and completes the future when the frame is written. */
    public CompletableFuture<Void> sendAsync(Object message) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        WebSocketFrame f = frame(message);
        if (!isOpen()) {
            f.release();
            done.completeExceptionally(new IllegalStateException("websocket is closed"));
            return done;
        }
        ch.writeAndFlush(f).addListener(r -> {
            if (r.isSuccess()) {
                done.complete(null);
            } else {
                done.completeExceptionally(r.cause());
            }
        });
        return done;
    }

    /** Sends a ping; {@code data} (byte[], ByteBuffer, String or nil) is at most 125 bytes (RFC 6455 5.5). */
    public void ping(Object data) {
        write(new PingWebSocketFrame(control(data)));
    }

    /** Sends an unsolicited pong; {@code data} as for {@link #ping}. */
    public void pong(Object data) {
        write(new PongWebSocketFrame(control(data)));
    }

    /**
     * Starts the close handshake: sends close {@code code}; the connection closes when the peer answers, or after
     * a second without an answer. Throws IllegalArgumentException for a code a close frame may not carry (see
     * {@link CloseCodes#valid}) or a reason over 123 UTF-8 bytes; does nothing once a close frame was sent.
     */
    public void close(int code, String reason) {
        String r = reason == null ? "" : reason;
        if (!CloseCodes.valid(code)) {
            throw new IllegalArgumentException("websocket close code " + code
                + " cannot be sent (1000-1003, 1007-1014 or 3000-4999)");
        }
        if (ByteBufUtil.utf8Bytes(r) > CloseCodes.MAX_REASON_BYTES) {
            throw new IllegalArgumentException("websocket close reason of " + ByteBufUtil.utf8Bytes(r)
                + " UTF-8 bytes (at most " + CloseCodes.MAX_REASON_BYTES + ")");
        }
        if (claimClose(code, r)) {
            close.sendClose(new CloseWebSocketFrame(code, r), CloseHandshake.Why.LOCAL); // fails when gone: 1006
        }
    }

    private void write(WebSocketFrame f) {
        if (!isOpen()) {
            f.release();
            throw new IllegalStateException("websocket is closed");
        }
        ChannelFuture cf = ch.writeAndFlush(f);
        if (!ch.isWritable() && !ch.eventLoop().inEventLoop()) {
            cf.awaitUninterruptibly();
        }
    }

    private WebSocketFrame frame(Object message) {
        if (message instanceof CharSequence cs) {
            return new TextWebSocketFrame(ByteBufUtil.writeUtf8(ch.alloc(), cs));
        }
        return new BinaryWebSocketFrame(bytes(message));
    }

    private static ByteBuf control(Object data) {
        ByteBuf b = bytes(data);
        if (b.readableBytes() > CloseCodes.MAX_CONTROL_PAYLOAD) {
            int n = b.readableBytes();
            b.release();
            throw new IllegalArgumentException("a ping or pong carries at most " + CloseCodes.MAX_CONTROL_PAYLOAD
                + " bytes (RFC 6455 5.5), not " + n);
        }
        return b;
    }

    private static ByteBuf bytes(Object data) {
        if (data == null) {
            return Unpooled.EMPTY_BUFFER;
        }
        if (data instanceof byte[] b) {
            return Unpooled.copiedBuffer(b);
        }
        if (data instanceof ByteBuffer bb) {
            return Unpooled.copiedBuffer(bb.duplicate());
        }
        if (data instanceof CharSequence cs) {
            return Unpooled.copiedBuffer(cs, java.nio.charset.StandardCharsets.UTF_8);
        }
        throw new IllegalArgumentException("cannot send a " + data.getClass().getName()
            + " over a websocket (use a String, byte[] or ByteBuffer)");
    }

    // ---- events from the frame handler (event loop), delivered to the listener in order ----

    void opened() {
        serial.execute(() -> call(() -> listener.onOpen(this)));
    }

    void message(Object msg) {
        serial.execute(() -> call(() -> listener.onMessage(this, msg)));
    }

    boolean handlesPing() {
        return listener.handlesPing();
    }

    void ping(ByteBuffer data) {
        serial.execute(() -> call(() -> listener.onPing(this, data)));
    }

    void pong(ByteBuffer data) {
        serial.execute(() -> call(() -> listener.onPong(this, data)));
    }

    void error(Throwable t) {
        serial.execute(() -> {
            try {
                listener.onError(this, t);
            } catch (Throwable ignored) {
                // an on-error that fails has nowhere left to report
            }
        });
    }

    /** The close handshake of this socket (for the frame handler). */
    CloseHandshake handshake() {
        return close;
    }

    /** True when this call is the one that sends the socket's close frame: records what on-close reports. */
    boolean claimClose(int code, String reason) {
        if (!closeSent.compareAndSet(false, true)) {
            return false;
        }
        closeCode = code;
        closeReason = reason;
        return true;
    }

    /** The close frame could not be written: on-close reports 1006, not a code the peer never got. */
    void closeNotSent() {
        closeCode = CloseCodes.ABNORMAL;
        closeReason = "";
    }

    /** True once a close frame was sent (or is on its way): no frame may follow it. */
    boolean closeSent() {
        return closeSent.get();
    }

    /** The connection is gone: on-close once, with the handshake's code or 1006. */
    void closed() {
        if (closeFired.compareAndSet(false, true)) {
            int code = closeCode;
            String reason = closeReason;
            serial.execute(() -> call(() -> listener.onClose(this, code, reason)));
        }
    }

    private void call(Runnable r) {
        try {
            r.run();
        } catch (Throwable t) {
            try {
                listener.onError(this, t);
            } catch (Throwable ignored) {
                // nowhere left to report
            }
        }
    }
}
