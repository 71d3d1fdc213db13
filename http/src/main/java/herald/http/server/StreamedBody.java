package herald.http.server;

import herald.http.codec.ChunkInputStream;
import io.netty.buffer.ByteBuf;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;

/**
 * A request body the handler reads while it arrives (one larger than {@link #BUFFERED_LIMIT}, or of unknown
 * length that grew past it). The event loop {@link #offer}s each piece (copied: the stream holds no Netty buffer);
 * the handler's thread reads, waiting while nothing is there. Backpressure: above {@link #HIGH_WATER} unread bytes
 * the connection stops reading from its socket (HTTP/1.1: the client's writes block once the kernel's buffers are
 * full; HTTP/2: the stream's window is not replenished), and reading resumes once the handler has taken the
 * unread bytes below {@link #LOW_WATER}. A failure (the body over {@code :max-body-bytes}, the client gone or its
 * request cut short, no data for {@code :request-timeout-ms}) ends the stream with an IOException on the next read.
 */
final class StreamedBody extends ChunkInputStream {
    /** Bodies up to this size (declared, or received whole by then) are buffered before the handler runs. */
    static final int BUFFERED_LIMIT = 64 * 1024;
    static final int HIGH_WATER = 256 * 1024;
    static final int LOW_WATER = 64 * 1024;

    private final HttpConnection conn;
    private final long readTimeoutNanos;
    // ---- guarded by this ----
    private final ArrayDeque<byte[]> pieces = new ArrayDeque<>();
    private byte[] cur;
    private int pos;
    private long unread;
    private boolean ended;
    private boolean closed;
    private IOException failure;
    /** The connection's reading is paused for this body. */
    private boolean paused;
    private long received;

    StreamedBody(HttpConnection conn, BodyBuffer start, long readTimeoutMs) {
        this.conn = conn;
        this.readTimeoutNanos = readTimeoutMs > 0 ? TimeUnit.MILLISECONDS.toNanos(readTimeoutMs) : 0;
        if (start != null && start.size() > 0) {
            byte[] b = start.copy();
            pieces.add(b);
            unread = b.length;
            received = b.length;
        }
    }

    /** Bytes received so far (event loop). */
    synchronized long received() {
        return received;
    }

    /** A piece of the body arrived (event loop); true when the connection should stop reading for now. */
    synchronized boolean offer(ByteBuf buf) {
        int n = buf.readableBytes();
        received += n;
        if (closed || failure != null) {
            return false; // the handler is done with it: dropped
        }
        byte[] b = new byte[n];
        buf.getBytes(buf.readerIndex(), b);
        pieces.add(b);
        unread += n;
        notifyAll();
        if (unread > HIGH_WATER && !paused) {
            paused = true;
            return true;
        }
        return false;
    }

    /** The whole body arrived (event loop). */
    synchronized void end() {
        ended = true;
        notifyAll();
    }

    synchronized boolean isEnded() {
        return ended;
    }

    /** The body cannot complete: the next read throws {@code e} (any thread). */
    synchronized void fail(IOException e) {
        if (!ended && failure == null) {
            failure = e;
            pieces.clear();
            cur = null;
            unread = 0;
            notifyAll();
        }
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) {
            return 0;
        }
        boolean resume;
        int n;
        synchronized (this) {
            if (!await()) {
                return -1;
            }
            n = Math.min(len, cur.length - pos);
            System.arraycopy(cur, pos, b, off, n);
            pos += n;
            if (pos == cur.length) {
                cur = null;
            }
            unread -= n;
            resume = paused && unread <= LOW_WATER;
            if (resume) {
                paused = false;
            }
        }
        if (resume) {
            conn.onLoop(conn::resumeBodyReading);
        }
        return n;
    }

    /** Waits for a piece in {@code cur}; false at the end of the body. */
    private boolean await() throws IOException {
        if (closed) {
            throw new IOException("request body stream is closed");
        }
        long deadline = readTimeoutNanos > 0 ? System.nanoTime() + readTimeoutNanos : 0;
        while (cur == null) {
            if (failure != null) {
                throw failure;
            }
            byte[] next = pieces.poll();
            if (next != null) {
                cur = next;
                pos = 0;
                return true;
            }
            if (ended) {
                return false;
            }
            if (conn.eventLoop().inEventLoop()) {
                throw new IOException("the request body is read on the event loop before it arrived (reading it "
                    + "would block every connection of the loop): read it from another thread");
            }
            long left = deadline == 0 ? 0 : deadline - System.nanoTime();
            if (deadline != 0 && left <= 0) {
                failure = new IOException("no request body data for :request-timeout-ms");
                throw failure;
            }
            try {
                TimeUnit.NANOSECONDS.timedWait(this, deadline == 0 ? Long.MAX_VALUE : left);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted while reading the request body");
            }
        }
        return true;
    }

    @Override
    public synchronized int available() {
        return cur == null ? (pieces.isEmpty() ? 0 : pieces.peek().length) : cur.length - pos;
    }

    /** The handler is done with the body: what is buffered is dropped; what still arrives is dropped too. */
    @Override
    public void close() {
        boolean resume;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            pieces.clear();
            cur = null;
            unread = 0;
            resume = paused;
            paused = false;
        }
        if (resume) {
            conn.onLoop(conn::resumeBodyReading);
        }
    }
}
