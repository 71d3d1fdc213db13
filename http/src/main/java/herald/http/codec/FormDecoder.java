package herald.http.codec;

import clojure.lang.IPersistentMap;
import clojure.lang.IPersistentVector;
import clojure.lang.ITransientMap;
import clojure.lang.PersistentArrayMap;
import clojure.lang.PersistentVector;
import java.nio.charset.Charset;

/**
 * Decodes query strings and {@code application/x-www-form-urlencoded} bodies into a Clojure map with
 * String keys.
 *
 * <ul>
 *   <li>pairs are separated by {@code &}; a pair without {@code =} has the value {@code ""} ({@code a&b=1}
 *       gives {@code {"a" "", "b" "1"}}); empty pairs and pairs with an empty key are skipped;
 *   <li>{@code +} is a space, {@code %XX} a byte; bytes are decoded with the given charset;
 *   <li>a repeated key gives a vector of its values in order ({@code a=1&a=2} gives {@code {"a" ["1" "2"]}});
 *   <li>malformed escapes are kept literally (see {@link PercentDecoder}): decoding never fails;
 *   <li>more than {@code maxParams} pairs throw {@link TooManyParamsException} (hash-flooding guard).
 * </ul>
 */
public final class FormDecoder {
  private FormDecoder() {}

  /** Decodes a query string (text, as in Ring's {@code :query-string}); null gives an empty map. */
  public static IPersistentMap decode(String s, Charset cs, int maxParams) {
    if (s == null || s.isEmpty()) return PersistentArrayMap.EMPTY;
    ITransientMap m = PersistentArrayMap.EMPTY.asTransient();
    int n = 0;
    int len = s.length();
    int start = 0;
    while (start <= len) {
      int amp = s.indexOf('&', start);
      int end = amp < 0 ? len : amp;
      if (end > start) {
        int keyEnd = start;
        while (keyEnd < end && s.charAt(keyEnd) != '=') keyEnd++;
        if (keyEnd > start) {
          if (++n > maxParams) throw new TooManyParamsException(maxParams);
          String k = PercentDecoder.decode(s, start, keyEnd, cs, true);
          String v = keyEnd == end ? "" : PercentDecoder.decode(s, keyEnd + 1, end, cs, true);
          m = add(m, k, v);
        }
      }
      if (amp < 0) break;
      start = amp + 1;
    }
    return m.persistent();
  }

  /** Decodes a form body given as bytes in the charset {@code cs} (an ASCII-compatible charset). */
  public static IPersistentMap decode(byte[] b, int off, int len, Charset cs, int maxParams) {
    if (len == 0) return PersistentArrayMap.EMPTY;
    ITransientMap m = PersistentArrayMap.EMPTY.asTransient();
    int n = 0;
    int limit = off + len;
    int start = off;
    byte[] scratch = null;
    while (start <= limit) {
      int end = indexOf(b, (byte) '&', start, limit);
      if (end > start) {
        int eq = indexOf(b, (byte) '=', start, end);
        if (eq > start) {
          if (++n > maxParams) throw new TooManyParamsException(maxParams);
          if (scratch == null) scratch = new byte[len];
          String k = decodeBytes(b, start, eq, cs, scratch);
          String v = eq == end ? "" : decodeBytes(b, eq + 1, end, cs, scratch);
          m = add(m, k, v);
        }
      }
      if (end >= limit) break;
      start = end + 1;
    }
    return m.persistent();
  }

  private static ITransientMap add(ITransientMap m, String k, String v) {
    Object old = m.valAt(k);
    if (old == null) return m.assoc(k, v);
    if (old instanceof IPersistentVector vec) return m.assoc(k, vec.cons(v));
    return m.assoc(k, PersistentVector.create(old, v));
  }

  private static int indexOf(byte[] b, byte x, int from, int to) {
    for (int i = from; i < to; i++) if (b[i] == x) return i;
    return to;
  }

  private static String decodeBytes(byte[] b, int start, int end, Charset cs, byte[] out) {
    int n = 0;
    boolean plain = true;
    for (int i = start; i < end; i++) {
      byte c = b[i];
      if (c == '+') {
        out[n++] = ' ';
        plain = false;
      } else if (c == '%' && i + 2 < end && PercentDecoder.hex(b[i + 1]) >= 0 && PercentDecoder.hex(b[i + 2]) >= 0) {
        out[n++] = (byte) ((PercentDecoder.hex(b[i + 1]) << 4) | PercentDecoder.hex(b[i + 2]));
        i += 2;
        plain = false;
      } else {
        out[n++] = c;
      }
    }
    return plain ? new String(b, start, end - start, cs) : new String(out, 0, n, cs);
  }
}
