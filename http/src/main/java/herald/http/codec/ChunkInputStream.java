package herald.http.codec;

import java.io.IOException;
import java.io.InputStream;

/**
 * An InputStream whose subclasses read in chunks only: the one-byte {@link #read()} goes through
 * {@link #read(byte[], int, int)}, so each stream states its logic once.
 */
public abstract class ChunkInputStream extends InputStream {
    @Override
    public final int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public abstract int read(byte[] b, int off, int len) throws IOException;
}
