package herald.load.client;

import io.netty.buffer.ByteBuf;

/** Receives the events of the {@link Lane}s of a connection; every call happens on the connection's event loop. */
public interface ConnectionListener {
  /** The lane's connection is established (over TLS: handshake done; HTTP/2: the server's SETTINGS read). */
  void onConnected(Lane lane);

  /**
   * A whole response arrived. {@code body} is null unless the connection keeps bodies; the listener owns it
   * and must release it. {@code keepAlive} false means the lane is unusable after this call (its connection
   * closes, or an HTTP/2 connection drains after GOAWAY).
   */
  void onResponse(Lane lane, int status, ByteBuf body, boolean keepAlive);

  /**
   * The request in flight on the lane failed while the lane stays usable (an HTTP/2 stream reset by the
   * server, or timed out and reset by us); {@code kind} says why.
   */
  void onRequestFailed(Lane lane, ErrorKind kind, Throwable cause);

  /**
   * The lane's connection failed or closed. {@code inFlight} tells whether a request was waiting for its
   * response (it will get none); {@code kind} says why. The lane is unusable after this call.
   */
  void onClosed(Lane lane, boolean inFlight, ErrorKind kind, Throwable cause);
}
