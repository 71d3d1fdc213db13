package herald.http.codec;

import java.io.IOException;
import java.io.InputStream;
import java.util.zip.CRC32;
import java.util.zip.Deflater;

/**
 * An InputStream that reads a source stream and yields it gzip-compressed (RFC 1952), for streamed
 * response bodies. When the source has nothing more available right away, the compressor is flushed
 * ({@code SYNC_FLUSH}) so a slowly produced body still reaches the client piece by piece. {@link #close()}
 * closes the source and frees the native compressor.
 */
public final class GzipInputStream extends ChunkInputStream {
  private static final byte[] HEADER = {0x1f, (byte) 0x8b, Deflater.DEFLATED, 0, 0, 0, 0, 0, 0, (byte) 0xff};

  private final InputStream source;
  private final Deflater deflater;
  private final CRC32 crc = new CRC32();
  private final byte[] in = new byte[8192];
  private final byte[] out = new byte[8192];
  private int outPos;
  private int outLen;
  private long total;
  private int state; // 0: header, 1: body, 2: trailer, 3: done
  private int flush = Deflater.NO_FLUSH;
  private boolean inputDone;
  private boolean closed;

  public GzipInputStream(InputStream source, int level) {
    if (level < 0 || level > 9) throw new IllegalArgumentException("gzip level must be 0-9: " + level);
    this.source = source;
    this.deflater = new Deflater(level, true);
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    if (closed) throw new IOException("stream closed");
    if (len == 0) return 0;
    while (outPos == outLen) {
      if (state == 3) return -1;
      fill();
    }
    int n = Math.min(len, outLen - outPos);
    System.arraycopy(out, outPos, b, off, n);
    outPos += n;
    return n;
  }

  private void fill() throws IOException {
    outPos = 0;
    outLen = 0;
    switch (state) {
      case 0 -> {
        System.arraycopy(HEADER, 0, out, 0, HEADER.length);
        outLen = HEADER.length;
        state = 1;
      }
      case 1 -> deflateSome();
      case 2 -> {
        int c = (int) crc.getValue();
        int size = (int) total;
        byte[] t = {(byte) c, (byte) (c >>> 8), (byte) (c >>> 16), (byte) (c >>> 24),
            (byte) size, (byte) (size >>> 8), (byte) (size >>> 16), (byte) (size >>> 24)};
        System.arraycopy(t, 0, out, 0, 8);
        outLen = 8;
        state = 3;
      }
      default -> { }
    }
  }

  private void deflateSome() throws IOException {
    while (true) {
      if (deflater.finished()) {
        state = 2;
        return;
      }
      int n = deflater.deflate(out, 0, out.length, flush);
      if (n > 0) {
        outLen = n;
        return;
      }
      if (deflater.needsInput() && !inputDone) {
        int r = source.read(in, 0, in.length);
        if (r < 0) {
          inputDone = true;
          flush = Deflater.NO_FLUSH;
          deflater.finish();
        } else if (r > 0) {
          crc.update(in, 0, r);
          total += r;
          deflater.setInput(in, 0, r);
          flush = source.available() > 0 ? Deflater.NO_FLUSH : Deflater.SYNC_FLUSH;
        }
      }
    }
  }

  @Override
  public void close() throws IOException {
    if (closed) return;
    closed = true;
    deflater.end();
    source.close();
  }
}
