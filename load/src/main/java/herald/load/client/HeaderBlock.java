package herald.load.client;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * An HPACK header block (RFC 7541) that never touches the dynamic table: pseudo-headers by their static
 * table entries, every other field a literal without indexing and without Huffman coding. Such a block
 * means the same whatever the decoder's table holds, so a request is encoded once and its bytes sent on
 * every stream of every connection.
 */
final class HeaderBlock {
  private final ByteArrayOutputStream out = new ByteArrayOutputStream(128);

  /** Appends {@code :method}: GET and POST as indexed fields (static entries 2 and 3). */
  HeaderBlock method(String m) {
    if (m.equals("GET")) out.write(0x80 | 2);
    else if (m.equals("POST")) out.write(0x80 | 3);
    else literal(2, m);
    return this;
  }

  /** Appends {@code :scheme} (static entries 6 and 7). */
  HeaderBlock scheme(boolean https) {
    out.write(0x80 | (https ? 7 : 6));
    return this;
  }

  /** Appends {@code :path} ("/" is static entry 4, another path a literal with name index 4). */
  HeaderBlock path(String p) {
    if (p.equals("/")) out.write(0x80 | 4);
    else literal(4, p);
    return this;
  }

  /** Appends {@code :authority} (name index 1). */
  HeaderBlock authority(String a) {
    literal(1, a);
    return this;
  }

  /** Appends a regular field; {@code name} must be lower-case already. */
  HeaderBlock add(String name, String value) {
    out.write(0x00);
    string(name);
    string(value);
    return this;
  }

  /** The block's bytes. */
  byte[] bytes() {
    return out.toByteArray();
  }

  /** A literal field without indexing whose name is static entry {@code nameIndex} (a 4-bit prefix). */
  private void literal(int nameIndex, String value) {
    integer(0x00, 4, nameIndex);
    string(value);
  }

  private void string(String s) {
    byte[] b = s.getBytes(StandardCharsets.ISO_8859_1);
    integer(0x00, 7, b.length);  // H = 0: raw octets
    out.write(b, 0, b.length);
  }

  /** RFC 7541 5.1: {@code value} with an N-bit prefix, the high bits of the first octet from {@code mask}. */
  private void integer(int mask, int prefixBits, int value) {
    int max = (1 << prefixBits) - 1;
    if (value < max) {
      out.write(mask | value);
      return;
    }
    out.write(mask | max);
    value -= max;
    while (value >= 0x80) {
      out.write((value & 0x7f) | 0x80);
      value >>>= 7;
    }
    out.write(value);
  }
}
