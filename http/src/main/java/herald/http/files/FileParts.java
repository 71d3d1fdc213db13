package herald.http.files;

import java.util.List;

/**
 * A Ring response body made of byte arrays and {@link FileRange}s, sent in order with
 * {@code Content-Length} = the sum of their lengths: a {@code multipart/byteranges} answer, whose part heads are
 * the byte arrays and whose file slices go out zero-copy where the connection allows it.
 */
public final class FileParts {
    private final Object[] parts;
    public final long length;

    /** {@code parts}: each a {@code byte[]} or a {@link FileRange}. */
    public FileParts(List<?> parts) {
        this.parts = parts.toArray();
        long n = 0;
        for (Object p : this.parts) {
            if (p instanceof byte[] b) {
                n += b.length;
            } else if (p instanceof FileRange r) {
                n += r.length;
            } else {
                throw new IllegalArgumentException("a FileParts part must be a byte[] or a FileRange, got " + p);
            }
        }
        this.length = n;
    }

    /** The parts (a copy). */
    public Object[] parts() {
        return parts.clone();
    }

    /** The part at {@code i} (no copy). */
    public Object part(int i) {
        return parts[i];
    }

    public int size() {
        return parts.length;
    }
}
