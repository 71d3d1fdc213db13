package herald.load.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Set;

/**
 * A request ready to send on any {@link Lane}: the HTTP/1.1 bytes {@link RequestEncoder} made, and the same
 * request as an HTTP/2 header block (pseudo-headers, lower-case names, connection-specific fields dropped;
 * HPACK-encoded once, see {@link HeaderBlock}) and DATA, derived from those bytes the first time an HTTP/2
 * lane sends it, so both protocols send one request.
 * A shared request (constant load) holds its bytes once in a direct buffer that every send duplicates;
 * it is used on one event loop only.
 */
public final class PreparedRequest {
  private static final Set<String> HOP_BY_HOP =
      Set.of("connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host");

  private final byte[] bytes;
  private final boolean head;
  private final ByteBuf raw;
  private final ByteBuf shared;
  private byte[] h2Block;
  private boolean h2Tls;
  private ByteBuf h2Body;

  private PreparedRequest(byte[] bytes, boolean head, boolean share) {
    this.bytes = bytes;
    this.head = head;
    this.raw = share ? Unpooled.directBuffer(bytes.length).writeBytes(bytes) : null;
    this.shared = share ? Unpooled.unreleasableBuffer(raw) : null;
  }

  /** A request sent many times: encoded once; call {@link #release()} when done. */
  public static PreparedRequest shared(byte[] http1, boolean head) {
    return new PreparedRequest(http1, head, true);
  }

  /** A request sent once. */
  public static PreparedRequest once(byte[] http1, boolean head) {
    return new PreparedRequest(http1, head, false);
  }

  /** True for a HEAD request (its response has no body). */
  public boolean head() {
    return head;
  }

  /** The HTTP/1.1 bytes as a buffer the caller may write (and so release). */
  ByteBuf http1() {
    return shared != null ? shared.duplicate() : Unpooled.wrappedBuffer(bytes);
  }

  /** True for a request sent many times ({@link #shared}), whose {@link #http1()} buffers are never freed. */
  boolean isShared() {
    return shared != null;
  }

  /** The HPACK-encoded HTTP/2 header block (not to be modified); {@code tls} gives the :scheme. */
  byte[] http2Block(boolean tls) {
    if (h2Block == null || h2Tls != tls) parse(tls);
    return h2Block;
  }

  /** The HTTP/2 body as a buffer the caller may write, or null when the request has none. */
  ByteBuf http2Body(boolean tls) {
    if (h2Block == null || h2Tls != tls) parse(tls);
    return h2Body == null ? null : h2Body.duplicate();
  }

  /** Frees the shared buffers. */
  public void release() {
    if (raw != null && raw.refCnt() > 0) raw.release();
  }

  private void parse(boolean tls) {
    String text = new String(bytes, StandardCharsets.ISO_8859_1);
    int end = text.indexOf("\r\n\r\n");
    if (end < 0) throw new IllegalArgumentException("not an HTTP/1.1 request head");
    String[] lines = text.substring(0, end).split("\r\n");
    String[] start = lines[0].split(" ");
    if (start.length != 3) throw new IllegalArgumentException("bad request line: " + lines[0]);
    HeaderBlock h = new HeaderBlock().method(start[0]).scheme(tls).path(start[1]);
    for (int i = 1; i < lines.length; i++) {  // pseudo-headers first: :authority from Host
      int colon = lines[i].indexOf(':');
      if (lines[i].substring(0, colon).trim().equalsIgnoreCase("host")) h.authority(lines[i].substring(colon + 1).trim());
    }
    for (int i = 1; i < lines.length; i++) {
      int colon = lines[i].indexOf(':');
      String name = lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT);
      String value = lines[i].substring(colon + 1).trim();
      if (name.equals("te") && !value.equalsIgnoreCase("trailers")) continue;
      if (!HOP_BY_HOP.contains(name)) h.add(name, value);
    }
    int bodyStart = end + 4;
    ByteBuf body = null;
    if (bodyStart < bytes.length) {
      ByteBuf b = raw != null ? raw.slice(bodyStart, bytes.length - bodyStart) : Unpooled.wrappedBuffer(bytes, bodyStart, bytes.length - bodyStart);
      body = Unpooled.unreleasableBuffer(b);
    }
    h2Block = h.bytes();
    h2Body = body;
    h2Tls = tls;
  }
}
