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
    private static final long CLOSE_WAIT_MS = 1000;

    private final Channel ch;
    private final WebSocketListener listener;
    private final SerialExecutor serial;
    private final AtomicBoolean closeSent = new AtomicBoolean();
    private final AtomicBoolean closeFired = new AtomicBoolean();
    private volatile int closeCode = 1006;
    private volatile String closeReason = "";

    HeraldWebSocket(Channel ch, WebSocketListener listener, Executor executor) {
        this.ch = ch;
        this.listener = listener;
        this.serial = new SerialExecutor(executor);
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

    public void ping(Object data) {
        write(new PingWebSocketFrame(bytes(data)));
    }

    public void pong(Object data) {
        write(new PongWebSocketFrame(bytes(data)));
    }

    /** Starts the close handshake; the connection closes when the peer answers or after a second. */
    public void close(int code, String reason) {
        if (!closeSent.compareAndSet(false, true)) {
            return;
        }
        closeCode = code;
        closeReason = reason == null ? "" : reason;
        if (!ch.isActive()) {
            return;
        }
        ch.writeAndFlush(new CloseWebSocketFrame(code, reason == null ? "" : reason))
            .addListener(f -> ch.eventLoop().schedule(() -> { ch.close(); }, CLOSE_WAIT_MS, TimeUnit.MILLISECONDS));
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

    /** Netty's codec already sent close {@code code} for a protocol violation: on-close reports it, not 1006. */
    void failed(int code, String reason) {
        if (closeSent.compareAndSet(false, true)) {
            closeCode = code;
            closeReason = reason == null ? "" : reason;
        }
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

    /** The peer sent a close frame: remember its code, answer it, close the connection. */
    void peerClosed(int code, String reason) {
        if (closeSent.compareAndSet(false, true)) {
            closeCode = code < 0 ? 1005 : code;
            closeReason = reason == null ? "" : reason;
            CloseWebSocketFrame answer = code < 0 ? new CloseWebSocketFrame() : new CloseWebSocketFrame(code, "");
            ch.writeAndFlush(answer).addListener(f -> ch.close());
        } else {
            ch.close();
        }
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
