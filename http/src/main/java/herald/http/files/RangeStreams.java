package herald.http.files;

import herald.http.codec.ChunkInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * InputStream bodies for Range answers over sources that are not files (classpath resources inside jars): a
 * slice of a stream, and a multipart body whose slices are opened one after the other as the body is written.
 */
public final class RangeStreams {
    private RangeStreams() {}

    /** {@code length} bytes of {@code in} after skipping {@code offset}; closing it closes {@code in}. */
    public static InputStream slice(InputStream in, long offset, long length) throws IOException {
        try {
            in.skipNBytes(offset);
        } catch (IOException | RuntimeException e) {
            in.close();
            throw e;
        }
        return new Slice(in, length);
    }

    /**
     * The concatenation of {@code parts}, each a {@code byte[]} or a {@code Callable<InputStream>} called when the
     * body reaches it (and closed after it); closing the result closes the part being read.
     */
    public static InputStream concat(List<?> parts) {
        return new Concat(parts.toArray());
    }

    private static final class Slice extends InputStream {
        private final InputStream in;
        private long left;

        Slice(InputStream in, long left) {
            this.in = in;
            this.left = left;
        }

        @Override
        public int read() throws IOException {
            if (left <= 0) {
                return -1;
            }
            int b = in.read();
            if (b >= 0) {
                left--;
            }
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            if (left <= 0) {
                return -1;
            }
            int n = in.read(b, off, (int) Math.min(len, left));
            if (n > 0) {
                left -= n;
            }
            return n;
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }

    private static final class Concat extends ChunkInputStream {
        private final Object[] parts;
        private int next;
        private InputStream cur;

        Concat(Object[] parts) {
            this.parts = parts;
        }

        private boolean advance() throws IOException {
            if (cur != null) {
                cur.close();
                cur = null;
            }
            if (next == parts.length) {
                return false;
            }
            Object p = parts[next];
            parts[next++] = null;
            if (p instanceof byte[] b) {
                cur = new java.io.ByteArrayInputStream(b);
            } else {
                try {
                    cur = (InputStream) ((Callable<?>) p).call();
                } catch (IOException e) {
                    throw e;
                } catch (Exception e) {
                    throw new UncheckedIOException(new IOException(e));
                }
            }
            return true;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            while (true) {
                if (cur == null && !advance()) {
                    return -1;
                }
                int n = cur.read(b, off, len);
                if (n > 0) {
                    return n;
                }
                if (n < 0 && !advance()) {
                    return -1;
                }
            }
        }

        @Override
        public void close() throws IOException {
            if (cur != null) {
                cur.close();
                cur = null;
            }
            next = parts.length;
        }
    }
}
