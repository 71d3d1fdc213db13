package herald.http.server;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * An OutputStream onto a channel for streamed response bodies, chunk-framed when asked. Each flush sends a
 * chunk; a full buffer sends one too. The writing thread waits while the channel is not writable, so a slow
 * client bounds memory. Closing ends the body and runs {@code onClose} once.
 */
final class ChannelOutputStream extends OutputStream {
    private static final int SIZE = 8192;
    private static final int RESERVE = 10;
    private static final byte[] LAST = "0\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    private final Channel ch;
    private final boolean chunked;
    private final Runnable onClose;
    private ByteBuf buf;
    private boolean closed;
    /** Body bytes handed to the channel (the access log's figure). */
    private long written;

    ChannelOutputStream(Channel ch, boolean chunked, Runnable onClose) {
        this.ch = ch;
        this.chunked = chunked;
        this.onClose = onClose;
    }

    private void ensure() {
        if (buf == null) {
            buf = ch.alloc().directBuffer(SIZE + RESERVE + 2);
            buf.writerIndex(RESERVE).readerIndex(RESERVE);
        }
    }

    @Override
    public synchronized void write(int b) throws IOException {
        check();
        ensure();
        buf.writeByte(b);
        if (buf.readableBytes() >= SIZE) {
            emit(false);
        }
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) throws IOException {
        check();
        while (len > 0) {
            ensure();
            int n = Math.min(len, SIZE - buf.readableBytes());
            buf.writeBytes(b, off, n);
            off += n;
            len -= n;
            if (buf.readableBytes() >= SIZE) {
                emit(false);
            }
        }
    }

    @Override
    public synchronized void flush() throws IOException {
        check();
        emit(true);
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (ch.isActive()) {
                emit(false);
                ch.writeAndFlush(chunked ? Unpooled.wrappedBuffer(LAST) : Unpooled.EMPTY_BUFFER);
            }
        } catch (IOException ignored) {
            // the client went away; onClose still runs
        } finally {
            release();
            onClose.run();
        }
    }

    /** Body bytes handed to the channel so far. */
    synchronized long written() {
        return written;
    }

    /** Ends the stream without the terminating chunk (after a failure): the caller closes the channel. */
    synchronized void abort() {
        if (!closed) {
            closed = true;
            release();
            onClose.run();
        }
    }

    private void release() {
        if (buf != null) {
            buf.release();
            buf = null;
        }
    }

    private void check() throws IOException {
        if (closed) {
            throw new IOException("response body stream is closed");
        }
        if (!ch.isActive()) {
            throw new IOException("client connection closed");
        }
    }

    private void emit(boolean flush) throws IOException {
        if (buf == null || !buf.isReadable()) {
            if (flush) {
                ch.flush();
            }
            return;
        }
        ByteBuf out = buf;
        buf = null;
        written += out.readableBytes();
        if (chunked) {
            frame(out);
        }
        ChannelFuture f = flush ? ch.writeAndFlush(out) : ch.write(out);
        if (!ch.isWritable() && !ch.eventLoop().inEventLoop()) {
            if (!flush) {
                ch.flush();
            }
            f.awaitUninterruptibly();
            if (!f.isSuccess()) {
                throw new IOException("client connection closed", f.cause());
            }
        }
    }

    /** Adds "size-hex CRLF" in the reserved prefix and a CRLF after the data. */
    private static void frame(ByteBuf out) {
        int n = out.readableBytes();
        String hex = Integer.toHexString(n);
        int start = RESERVE - hex.length() - 2;
        out.setCharSequence(start, hex, StandardCharsets.US_ASCII);
        out.setShort(start + hex.length(), 0x0d0a);
        out.readerIndex(start);
        out.writeShort(0x0d0a);
    }
}
