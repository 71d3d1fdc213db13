package herald.http.files;

import java.io.File;
import java.util.Objects;

/**
 * A Ring response body: {@code length} bytes of {@code file} from {@code offset} (a {@code Range} answer). Sent
 * like a whole {@code java.io.File} body: zero-copy ({@code FileRegion}) on plaintext HTTP/1.1, in chunks on TLS
 * and HTTP/2, with {@code Content-Length: length}.
 */
public final class FileRange {
    public final File file;
    public final long offset;
    public final long length;

    public FileRange(File file, long offset, long length) {
        this.file = Objects.requireNonNull(file, "file");
        if (offset < 0 || length < 0) {
            throw new IllegalArgumentException("offset and length must be >= 0: " + offset + ", " + length);
        }
        this.offset = offset;
        this.length = length;
    }

    @Override
    public String toString() {
        return "FileRange[" + file + " " + offset + "+" + length + "]";
    }
}
