package herald.load.client;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http2.Http2Error;

/**
 * One request at a time on an HTTP/2 connection: a stream slot ({@link Lane}). Each request opens a new stream
 * through the connection's {@link Http2Wire}; the slot keeps that stream's state (id, status, body, its send
 * window and the bytes it has received but not yet acknowledged). Every method runs on the event loop.
 */
final class Http2Stream implements Lane {
  private final Http2Wire wire;
  private final ConnectionListener listener;
  private final int index;
  private final Object attachment;
  /** The current stream's id (valid while {@link #inFlight}). */
  int id;
  boolean inFlight;
  /** True once the listener heard {@code onClosed} for this lane: it is unusable. */
  boolean closedReported;
  /** The response's status, 0 until its final (non-1xx) HEADERS. */
  int status;
  /** The response body read so far (when the connection keeps bodies). */
  ByteBuf body;
  /** The request body still to send (flow control), or null. */
  ByteBuf pending;
  /** The server's window for this stream. */
  long window;
  /** Bytes received on this stream since its last WINDOW_UPDATE. */
  int unacknowledged;

  Http2Stream(Http2Wire wire, ConnectionListener listener, int index, Object attachment) {
    this.wire = wire;
    this.listener = listener;
    this.index = index;
    this.attachment = attachment;
  }

  /** The connection this lane belongs to (the channel handler to install). */
  Http2Connection owner() {
    return (Http2Connection) wire;
  }

  @Override public Object attachment() { return attachment; }
  @Override public int index() { return index; }
  @Override public boolean inFlight() { return inFlight; }
  @Override public void close() { wire.close(); }
  @Override public String tlsSession() { return wire.tlsSession(); }

  @Override
  public void send(PreparedRequest request) {
    if (inFlight) throw new IllegalStateException("a request is already in flight on this stream slot");
    if (closedReported || !wire.usable()) {
      closedReported = true;
      listener.onClosed(this, true, ErrorKind.WRITE, new IllegalStateException("HTTP/2 connection not usable"));
      return;
    }
    int streamId = wire.open(this);
    if (streamId < 0) {  // stream ids exhausted: the connection drains, the owner reconnects
      closedReported = true;
      listener.onClosed(this, true, ErrorKind.WRITE, new IllegalStateException("HTTP/2 stream ids exhausted"));
      wire.drainIdle();
      return;
    }
    id = streamId;
    inFlight = true;
    status = 0;
    unacknowledged = 0;
    window = wire.initialWindow();
    ByteBuf data = request.http2Body(wire.tls());
    writeHeaders(request.http2Block(wire.tls()), data == null);
    if (data != null) {
      pending = data;
      wire.sendData(this);
    }
    wire.flushSoon();
  }

  @Override
  public void fail(ErrorKind kind, Throwable why) {
    if (!inFlight) return;
    int stream = id;
    wire.requestFailed(this, kind, why);
    wire.frame(4, Http2Wire.RST_STREAM, 0, stream).writeInt((int) Http2Error.CANCEL.code());
    wire.flushSoon();
  }

  /** HEADERS (and CONTINUATION frames past the server's frame size) carrying the request's header block. */
  private void writeHeaders(byte[] block, boolean endStream) {
    int max = wire.maxFrame();
    int first = Math.min(block.length, max);
    int flags = (endStream ? Http2Wire.END_STREAM : 0) | (first == block.length ? Http2Wire.END_HEADERS : 0);
    wire.frame(first, Http2Wire.HEADERS, flags, id).writeBytes(block, 0, first);
    for (int at = first; at < block.length; ) {
      int n = Math.min(block.length - at, max);
      wire.frame(n, Http2Wire.CONTINUATION, at + n == block.length ? Http2Wire.END_HEADERS : 0, id).writeBytes(block, at, n);
      at += n;
    }
  }

  /** Drops what the stream holds (the connection closed). */
  void release() {
    if (body != null) { body.release(); body = null; }
    pending = null;
  }
}
