package herald.load.client;

/**
 * One request at a time on a connection: a whole HTTP/1.1 connection ({@link HttpConnection}), or one stream
 * slot of an HTTP/2 connection ({@link Http2Stream} of an {@link Http2Connection}). Events come to the {@link ConnectionListener} the
 * lane was made with, on the connection's event loop; every method must be called on that loop.
 */
public interface Lane {
  /** Sends a request; at most one is in flight per lane. */
  void send(PreparedRequest request);

  /**
   * Fails the request in flight with {@code kind} (a timeout). HTTP/1.1 closes the connection
   * ({@link ConnectionListener#onClosed} follows); HTTP/2 resets the stream only
   * ({@link ConnectionListener#onRequestFailed} follows) and the lane stays usable.
   */
  void fail(ErrorKind kind, Throwable why);

  /** Closes the connection this lane belongs to (every lane of it). */
  void close();

  /** True while a request waits for its response. */
  boolean inFlight();

  /** The owner's object this lane serves (a slot, a session). */
  Object attachment();

  /** The negotiated TLS protocol and cipher suite ("TLSv1.3 TLS_AES_128_GCM_SHA256"), or null without TLS. */
  String tlsSession();

  /** This lane's place on its connection, 0 for the first: per-connection events are counted on lane 0. */
  int index();
}
