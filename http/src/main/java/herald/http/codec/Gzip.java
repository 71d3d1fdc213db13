package herald.http.codec;

import java.io.ByteArrayOutputStream;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.CRC32;
import java.util.zip.Deflater;

/**
 * gzip (RFC 1952) encoding of whole response bodies with pooled {@link Deflater}s, and
 * {@code Accept-Encoding} negotiation.
 */
public final class Gzip {
  private Gzip() {}

  private static final int POOL_MAX = Math.max(4, 2 * Runtime.getRuntime().availableProcessors());
  @SuppressWarnings("unchecked")
  private static final ConcurrentLinkedDeque<Deflater>[] POOLS = new ConcurrentLinkedDeque[10];
  private static final AtomicInteger[] POOLED = new AtomicInteger[10];

  static {
    for (int i = 0; i < 10; i++) {
      POOLS[i] = new ConcurrentLinkedDeque<>();
      POOLED[i] = new AtomicInteger();
    }
  }

  private static final byte[] HEADER = {0x1f, (byte) 0x8b, Deflater.DEFLATED, 0, 0, 0, 0, 0, 0, (byte) 0xff};

  /** gzip-compresses {@code b[off, off+len)} at {@code level} (0-9). */
  public static byte[] compress(byte[] b, int off, int len, int level) {
    if (level < 0 || level > 9) throw new IllegalArgumentException("gzip level must be 0-9: " + level);
    Deflater d = POOLS[level].pollFirst();
    if (d == null) d = new Deflater(level, true);
    else POOLED[level].decrementAndGet();
    try {
      ByteArrayOutputStream out = new ByteArrayOutputStream(Math.max(64, len / 3 + 32));
      out.write(HEADER, 0, HEADER.length);
      d.setInput(b, off, len);
      d.finish();
      byte[] buf = new byte[Math.min(65536, Math.max(512, len / 2 + 64))];
      while (!d.finished()) {
        int n = d.deflate(buf);
        out.write(buf, 0, n);
      }
      CRC32 crc = new CRC32();
      crc.update(b, off, len);
      writeIntLE(out, (int) crc.getValue());
      writeIntLE(out, len);
      return out.toByteArray();
    } finally {
      d.reset();
      if (POOLED[level].incrementAndGet() <= POOL_MAX) POOLS[level].offerFirst(d);
      else {
        POOLED[level].decrementAndGet();
        d.end();
      }
    }
  }

  private static void writeIntLE(ByteArrayOutputStream out, int v) {
    out.write(v);
    out.write(v >>> 8);
    out.write(v >>> 16);
    out.write(v >>> 24);
  }

  /**
   * True when an {@code Accept-Encoding} value accepts gzip: {@code gzip} (or {@code x-gzip}) with a
   * q-value above 0, or {@code *} with q above 0 and gzip not refused explicitly. Null or empty: false.
   */
  public static boolean acceptsGzip(String acceptEncoding) {
    if (acceptEncoding == null || acceptEncoding.isEmpty()) return false;
    int gzip = -1;
    int star = -1;
    int len = acceptEncoding.length();
    int start = 0;
    while (start < len) {
      int comma = acceptEncoding.indexOf(',', start);
      int end = comma < 0 ? len : comma;
      int semi = acceptEncoding.indexOf(';', start);
      int tokEnd = (semi < 0 || semi > end) ? end : semi;
      String token = acceptEncoding.substring(start, tokEnd).trim();
      int q = tokEnd < end ? qValue(acceptEncoding.substring(tokEnd + 1, end)) : 1000;
      if (token.equalsIgnoreCase("gzip") || token.equalsIgnoreCase("x-gzip")) gzip = Math.max(gzip, q);
      else if (token.equals("*")) star = q;
      start = end + 1;
    }
    return gzip >= 0 ? gzip > 0 : star > 0;
  }

  /** The q parameter of "q=0.5" in thousandths; a malformed or missing q counts as 1. */
  private static int qValue(String params) {
    for (String p : params.split(";")) {
      String t = p.trim();
      if (t.length() > 2 && (t.charAt(0) == 'q' || t.charAt(0) == 'Q') && t.charAt(1) == '=') {
        try {
          double d = Double.parseDouble(t.substring(2).trim());
          return d <= 0 ? 0 : (int) Math.round(Math.min(1.0, d) * 1000);
        } catch (NumberFormatException e) {
          return 1000;
        }
      }
    }
    return 1000;
  }
}
