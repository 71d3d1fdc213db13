package herald.load.client;

import io.netty.buffer.ByteBuf;

/** Receives the events of one {@link HttpConnection}; every call happens on the connection's event loop. */
public interface ConnectionListener {
  /** The TCP connection is established and can take a request. */
  void onConnected(HttpConnection connection);

  /**
   * A whole response arrived. {@code body} is null unless the connection keeps bodies; the listener owns it
   * and must release it. {@code keepAlive} false means the connection closes right after this call.
   */
  void onResponse(HttpConnection connection, int status, ByteBuf body, boolean keepAlive);

  /**
   * The connection failed or closed. {@code inFlight} tells whether a request was waiting for its response
   * (it will get none); {@code kind} says why. The connection is unusable after this call.
   */
  void onClosed(HttpConnection connection, boolean inFlight, ErrorKind kind, Throwable cause);
}
