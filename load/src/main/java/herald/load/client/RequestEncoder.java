package herald.load.client;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;

/** Encodes an HTTP/1.1 request to bytes once, so that the hot path only writes a shared buffer. */
public final class RequestEncoder {
  private RequestEncoder() {}

  /**
   * Encodes a request. {@code headers} alternates names and values; Host and Content-Length are added
   * unless given. {@code body} may be null (no body, and no Content-Length for GET/HEAD).
   */
  public static byte[] encode(String method, String target, String hostHeader, List<String> headers, byte[] body) {
    if (method == null || method.isEmpty() || method.indexOf(' ') >= 0) {
      throw new IllegalArgumentException("bad HTTP method: " + method);
    }
    if (target == null || !(target.startsWith("/") || target.equals("*")) || target.indexOf(' ') >= 0) {
      throw new IllegalArgumentException("bad request target (must start with /, no spaces): " + target);
    }
    StringBuilder sb = new StringBuilder(128);
    sb.append(method).append(' ').append(target).append(" HTTP/1.1\r\n");
    boolean host = false, length = false;
    if (headers != null) {
      if (headers.size() % 2 != 0) throw new IllegalArgumentException("headers must be name/value pairs");
      for (int i = 0; i < headers.size(); i += 2) {
        String name = headers.get(i), value = headers.get(i + 1);
        if (name.indexOf('\n') >= 0 || value.indexOf('\n') >= 0 || name.indexOf(':') >= 0) {
          throw new IllegalArgumentException("bad header: " + name);
        }
        String lower = name.toLowerCase(Locale.ROOT);
        host |= lower.equals("host");
        length |= lower.equals("content-length");
        sb.append(name).append(": ").append(value).append("\r\n");
      }
    }
    if (!host) sb.append("Host: ").append(hostHeader).append("\r\n");
    boolean bodyless = body == null && (method.equals("GET") || method.equals("HEAD"));
    if (!length && !bodyless) sb.append("Content-Length: ").append(body == null ? 0 : body.length).append("\r\n");
    sb.append("\r\n");
    byte[] head = sb.toString().getBytes(StandardCharsets.ISO_8859_1);
    if (body == null || body.length == 0) return head;
    byte[] all = new byte[head.length + body.length];
    System.arraycopy(head, 0, all, 0, head.length);
    System.arraycopy(body, 0, all, head.length, body.length);
    return all;
  }
}
