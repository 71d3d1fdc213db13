package herald.http.http2;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerAdapter;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http2.DefaultHttp2FrameWriter;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;

/**
 * An HTTP/2 client for conformance tests that sends exactly the frames it is told to, valid or not, over a plain
 * socket (frames encoded with Netty's {@link DefaultHttp2FrameWriter}, or raw bytes), and reads the server's frames
 * one by one without interpreting them (header blocks are not decoded).
 */
public final class RawFrames implements AutoCloseable {
    public static final int DATA = 0;
    public static final int HEADERS = 1;
    public static final int RST_STREAM = 3;
    public static final int SETTINGS = 4;
    public static final int GOAWAY = 7;
    public static final int CLOSED = -1;
    private static final byte[] PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    /** A frame the server sent; {@code code} is the error code of RST_STREAM and GOAWAY, else -1; type -1: closed. */
    public record Frame(int type, int flags, int stream, long code) {
        @Override
        public String toString() {
            return type == CLOSED ? "connection closed" : "frame type " + type + " flags " + flags + " stream " + stream
                + (code >= 0 ? " code " + code : "");
        }
    }

    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;
    private final EmbeddedChannel encoder = new EmbeddedChannel(new ChannelHandlerAdapter() {});
    private final ChannelHandlerContext ctx = encoder.pipeline().firstContext();
    private final DefaultHttp2FrameWriter writer = new DefaultHttp2FrameWriter();

    private RawFrames(int port, int timeoutMs) throws IOException {
        socket = new Socket("127.0.0.1", port);
        socket.setSoTimeout(timeoutMs);
        in = new DataInputStream(socket.getInputStream());
        out = socket.getOutputStream();
    }

    /** Connects, sends the preface and an empty SETTINGS, acknowledges the server's SETTINGS. */
    public static RawFrames connect(int port) throws IOException {
        RawFrames c = new RawFrames(port, 5000);
        c.raw(PREFACE);
        c.writer.writeSettings(c.ctx, new Http2Settings(), c.ctx.newPromise());
        c.writer.writeSettingsAck(c.ctx, c.ctx.newPromise());
        c.flush();
        return c;
    }

    /** Connects without sending anything. */
    public static RawFrames connectBare(int port) throws IOException {
        return new RawFrames(port, 5000);
    }

    /** The request pseudo-headers of a GET of {@code path} (a null path is left out). */
    public static Http2Headers get(String path) {
        Http2Headers h = new DefaultHttp2Headers().method("GET").scheme("http").authority("127.0.0.1");
        return path == null ? h : h.path(path);
    }

    /** {@code h} with the field {@code name: value} added. */
    public static Http2Headers with(Http2Headers h, String name, String value) {
        h.add(name, value);
        return h;
    }

    public RawFrames headers(int stream, Http2Headers h, boolean endStream) throws IOException {
        writer.writeHeaders(ctx, stream, h, 0, endStream, ctx.newPromise());
        return flush();
    }

    public RawFrames data(int stream, byte[] body, boolean endStream) throws IOException {
        writer.writeData(ctx, stream, Unpooled.wrappedBuffer(body), 0, endStream, ctx.newPromise());
        return flush();
    }

    public RawFrames windowUpdate(int stream, int increment) throws IOException {
        return raw(frame(8, 0, stream, new byte[] {(byte) (increment >>> 24), (byte) (increment >>> 16),
            (byte) (increment >>> 8), (byte) increment}));
    }

    /** A frame header and payload as given, with no checks. */
    public static byte[] frame(int type, int flags, int stream, byte[] payload) {
        byte[] f = new byte[9 + payload.length];
        f[0] = (byte) (payload.length >>> 16);
        f[1] = (byte) (payload.length >>> 8);
        f[2] = (byte) payload.length;
        f[3] = (byte) type;
        f[4] = (byte) flags;
        f[5] = (byte) (stream >>> 24);
        f[6] = (byte) (stream >>> 16);
        f[7] = (byte) (stream >>> 8);
        f[8] = (byte) stream;
        System.arraycopy(payload, 0, f, 9, payload.length);
        return f;
    }

    public RawFrames raw(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
        return this;
    }

    private RawFrames flush() throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        encoder.flushOutbound();
        for (Object o; (o = encoder.readOutbound()) != null; ) {
            ByteBuf b = (ByteBuf) o;
            b.readBytes(bytes, b.readableBytes());
            b.release();
        }
        return raw(bytes.toByteArray());
    }

    /** The server's next frame; {@link #CLOSED} at the end of input or a reset; null after the read timeout. */
    public Frame next() throws IOException {
        byte[] head = new byte[9];
        try {
            in.readFully(head);
            int length = (head[0] & 0xff) << 16 | (head[1] & 0xff) << 8 | (head[2] & 0xff);
            int type = head[3] & 0xff;
            int stream = ((head[5] & 0x7f) << 24) | (head[6] & 0xff) << 16 | (head[7] & 0xff) << 8 | (head[8] & 0xff);
            byte[] payload = new byte[length];
            in.readFully(payload);
            long code = -1;
            if (type == RST_STREAM) {
                code = uint(payload, 0);
            } else if (type == GOAWAY) {
                code = uint(payload, 4);
            }
            return new Frame(type, head[4] & 0xff, stream, code);
        } catch (SocketTimeoutException slow) {
            return null;
        } catch (EOFException | java.net.SocketException closed) {
            return new Frame(CLOSED, 0, 0, -1);
        }
    }

    /**
     * Reads frames until one of {@code type} (RST_STREAM, GOAWAY), a GOAWAY or the end of the connection; returns
     * it, or null when none came within the read timeout.
     */
    public Frame await(int type) throws IOException {
        for (Frame f; (f = next()) != null; ) {
            if (f.type() == type || f.type() == GOAWAY || f.type() == CLOSED) {
                return f;
            }
        }
        return null;
    }

    private static long uint(byte[] b, int at) {
        return ((long) (b[at] & 0xff) << 24) | (b[at + 1] & 0xff) << 16 | (b[at + 2] & 0xff) << 8 | (b[at + 3] & 0xff);
    }

    @Override
    public void close() throws IOException {
        socket.close();
        encoder.finishAndReleaseAll();
    }
}
