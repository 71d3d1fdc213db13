package herald.http.server;

import io.netty.buffer.ByteBuf;
import java.io.InputStream;
import java.util.Arrays;

/**
 * Accumulates a request body (Content-Length or chunked) into one byte array, so the handler gets an
 * InputStream that holds no Netty buffer: nothing to release, nothing to leak.
 */
final class BodyBuffer {
    private byte[] bytes;
    private int size;

    BodyBuffer(int expected) {
        bytes = new byte[Math.max(expected, 16)];
    }

    int size() {
        return size;
    }

    void append(ByteBuf buf) {
        int n = buf.readableBytes();
        if (size + n > bytes.length) {
            bytes = Arrays.copyOf(bytes, Math.max(size + n, bytes.length * 2));
        }
        buf.getBytes(buf.readerIndex(), bytes, size, n);
        size += n;
    }

    /** The bytes so far, as a new array of exactly {@link #size} bytes. */
    byte[] copy() {
        return Arrays.copyOf(bytes, size);
    }

    InputStream toInputStream() {
        return new BytesInputStream(bytes, size);
    }

    /** An unsynchronized, read-once InputStream over a byte array. */
    static final class BytesInputStream extends InputStream {
        private final byte[] bytes;
        private final int end;
        private int pos;

        BytesInputStream(byte[] bytes, int end) {
            this.bytes = bytes;
            this.end = end;
        }

        @Override
        public int read() {
            return pos < end ? bytes[pos++] & 0xff : -1;
        }

        @Override
        public int read(byte[] b, int off, int len) {
            if (len == 0) {
                return 0;
            }
            if (pos >= end) {
                return -1;
            }
            int n = Math.min(len, end - pos);
            System.arraycopy(bytes, pos, b, off, n);
            pos += n;
            return n;
        }

        @Override
        public long skip(long n) {
            int k = (int) Math.max(0, Math.min(n, end - pos));
            pos += k;
            return k;
        }

        @Override
        public int available() {
            return end - pos;
        }

        @Override
        public byte[] readAllBytes() {
            byte[] out = Arrays.copyOfRange(bytes, pos, end);
            pos = end;
            return out;
        }
    }
}
