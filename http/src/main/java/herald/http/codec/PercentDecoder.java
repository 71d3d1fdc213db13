package herald.http.codec;

import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;

/**
 * Percent-decoding ({@code %XX}) of a region of a string, optionally with {@code +} as a space.
 *
 * <p>Lenient by design: a {@code %} not followed by two hex digits is kept literally, and byte sequences
 * that are invalid in the charset become U+FFFD. It never throws, so a hostile query string cannot turn a
 * request into a 500. Characters that are not escaped are kept as they are (the input is text).
 */
public final class PercentDecoder {
  private PercentDecoder() {}

  /** Decodes all of {@code s} as UTF-8, {@code +} kept literally (path segments). */
  public static String decodePath(String s) {
    return decode(s, 0, s.length(), StandardCharsets.UTF_8, false);
  }

  /**
   * Decodes {@code s[start, end)}. Returns a substring without copying bytes when nothing needs decoding.
   *
   * @param plusIsSpace true for query strings and form bodies, false for paths
   */
  public static String decode(String s, int start, int end, Charset cs, boolean plusIsSpace) {
    int i = start;
    for (; i < end; i++) {
      char c = s.charAt(i);
      if (c == '%' || (plusIsSpace && c == '+')) break;
    }
    if (i == end) return (start == 0 && end == s.length()) ? s : s.substring(start, end);
    String ascii = decodeAscii(s, start, end, cs, plusIsSpace);
    if (ascii != null) return ascii;
    StringBuilder sb = new StringBuilder(end - start);
    sb.append(s, start, i);
    byte[] buf = null;
    while (i < end) {
      char c = s.charAt(i);
      if (c == '%' && isHexPair(s, i + 1, end)) {
        if (buf == null) buf = new byte[(end - i) / 3 + 1];
        int n = 0;
        while (i < end && s.charAt(i) == '%' && isHexPair(s, i + 1, end)) {
          buf[n++] = (byte) ((hex(s.charAt(i + 1)) << 4) | hex(s.charAt(i + 2)));
          i += 3;
        }
        sb.append(new String(buf, 0, n, cs));
      } else {
        sb.append(plusIsSpace && c == '+' ? ' ' : c);
        i++;
      }
    }
    return sb.toString();
  }

  /** The common case, input all ASCII: decode into one byte[] and make one String; null otherwise. */
  private static String decodeAscii(String s, int start, int end, Charset cs, boolean plusIsSpace) {
    byte[] buf = new byte[end - start];
    int n = 0;
    for (int i = start; i < end; i++) {
      char c = s.charAt(i);
      if (c >= 0x80) return null;
      if (c == '%' && isHexPair(s, i + 1, end)) {
        buf[n++] = (byte) ((hex(s.charAt(i + 1)) << 4) | hex(s.charAt(i + 2)));
        i += 2;
      } else {
        buf[n++] = (byte) (plusIsSpace && c == '+' ? ' ' : c);
      }
    }
    return new String(buf, 0, n, cs);
  }

  /** True when {@code s[i, end)} contains a '%' or, with {@code plusIsSpace}, a '+'. */
  public static boolean needsDecoding(String s, int i, int end, boolean plusIsSpace) {
    for (; i < end; i++) {
      char c = s.charAt(i);
      if (c == '%' || (plusIsSpace && c == '+')) return true;
    }
    return false;
  }

  private static boolean isHexPair(String s, int i, int end) {
    return i + 1 < end && hex(s.charAt(i)) >= 0 && hex(s.charAt(i + 1)) >= 0;
  }

  static int hex(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
}
