package herald.load.client;

import io.netty.channel.ConnectTimeoutException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.util.Locale;

/** Why a TCP connect failed, so that a run can say so precisely (refused is not unreachable). */
public enum ConnectFailure {
  /** Nothing listens on the port (RST): the server is down or on another port. */
  REFUSED,
  /** No answer within the connect timeout (a firewall dropping packets, a host that is down). */
  TIMEOUT,
  /** No route to the host or its network. */
  UNREACHABLE,
  /** The host name did not resolve. */
  UNKNOWN_HOST,
  /** The TLS handshake failed (an untrusted certificate, no common protocol version or cipher). */
  TLS,
  /** HTTP/2 could not start: the server did not select h2 by ALPN, or did not answer the h2c preface. */
  PROTOCOL,
  /** Anything else (see the exception's message). */
  OTHER;

  /** The lower-case, hyphenated name used in results ("refused", "unknown-host", ...). */
  public String label() {
    return name().toLowerCase(Locale.ROOT).replace('_', '-');
  }

  /**
   * The kind of a connect failure's cause. Classes first; the message next, because the native transport
   * reports every errno of connect(2) as a ConnectException whose message carries strerror.
   */
  public static ConnectFailure of(Throwable cause) {
    for (Throwable t = cause; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof UnknownHostException) return UNKNOWN_HOST;
      if (t instanceof ConnectTimeoutException || t instanceof SocketTimeoutException) return TIMEOUT;
      if (t instanceof NoRouteToHostException) return UNREACHABLE;
      if (t instanceof javax.net.ssl.SSLException) return TLS;
      if (t instanceof io.netty.handler.codec.http2.Http2Exception) return PROTOCOL;
    }
    String m = cause == null || cause.getMessage() == null ? "" : cause.getMessage().toLowerCase(Locale.ROOT);
    if (m.contains("refused")) return REFUSED;
    if (m.contains("timed out")) return TIMEOUT;
    if (m.contains("unreachable") || m.contains("no route to host")) return UNREACHABLE;
    return OTHER;
  }

  /**
   * The words to show for a failure of kind TLS or PROTOCOL (the message of the TLS or HTTP/2 exception in
   * the cause chain), or the exception itself for OTHER.
   */
  public static String detail(Throwable cause) {
    for (Throwable t = cause; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if ((t instanceof javax.net.ssl.SSLException || t instanceof io.netty.handler.codec.http2.Http2Exception)
          && t.getMessage() != null) {
        return t.getMessage();
      }
    }
    return String.valueOf(cause);
  }
}
