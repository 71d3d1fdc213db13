package herald.load.client;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http2.Http2Settings;

/**
 * What an HTTP/2 connection ({@link Http2Connection}) offers its stream lanes ({@link Http2Stream}) and its
 * frame listener ({@link Http2Frames}): its write buffer, its send-side flow-control windows and its table of
 * open streams. Every call happens on the connection's event loop.
 */
interface Http2Wire {
  byte DATA = 0, HEADERS = 1, RST_STREAM = 3, SETTINGS = 4, PING = 6, WINDOW_UPDATE = 8, CONTINUATION = 9;
  int END_STREAM = 1, ACK = 1, END_HEADERS = 4;
  /** Our receive window, per stream and for the connection (SETTINGS and the preface's WINDOW_UPDATE). */
  int WINDOW = 1 << 24;

  // ---- the write buffer ----

  /** Appends a frame header to the write buffer and returns the buffer for its {@code length} bytes of payload. */
  ByteBuf frame(int length, byte type, int flags, int streamId);

  /** Flushes the write buffer at the end of this event-loop turn. */
  void flushSoon();

  /** The largest frame payload the server accepts. */
  int maxFrame();

  // ---- the send windows ----

  /** The send window a new stream starts with (the server's SETTINGS_INITIAL_WINDOW_SIZE). */
  int initialWindow();

  /** Sends as much of {@code s}'s pending body as both windows allow; the rest waits for a WINDOW_UPDATE. */
  void sendData(Http2Stream s);

  /** The server's SETTINGS: frame size and initial window applied; the first one makes the connection ready. */
  void settings(Http2Settings settings);

  /** The server's WINDOW_UPDATE for the connection (stream 0) or one stream. */
  void windowUpdate(int streamId, int increment);

  // ---- the streams ----

  /** True when a new stream may open (the server's SETTINGS read, no GOAWAY, not closed). */
  boolean usable();

  /** Registers {@code s} under a new stream id and returns it; -1 when ids ran out (the connection drains). */
  int open(Http2Stream s);

  /** The open stream with id {@code streamId}, or null. */
  Http2Stream stream(int streamId);

  /** {@code s}'s response is whole: it goes to the listener (with {@code keepAlive} false while draining). */
  void complete(Http2Stream s);

  /** {@code s}'s request failed (reset, timeout); the lane stays usable unless the connection drains. */
  void requestFailed(Http2Stream s, ErrorKind kind, Throwable why);

  /** The server's GOAWAY: streams above {@code lastStreamId} fail, the others finish, then the connection closes. */
  void goAway(int lastStreamId);

  /** Lanes without a request leave now (draining), the others after their response; closes once none is open. */
  void drainIdle();

  // ---- the channel ----

  /** Closes the connection (every lane of it). */
  void close();

  /** The negotiated TLS protocol and cipher suite, or null without TLS. */
  String tlsSession();

  /** True over TLS (the :scheme of requests). */
  boolean tls();
}
