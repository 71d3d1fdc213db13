package herald.load.client;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http2.DefaultHttp2FrameReader;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersDecoder;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import java.io.IOException;

/**
 * Reads the server's frames (Netty's frame reader, HPACK decoded into headers that keep only {@code :status})
 * and says what each means to a client of whole requests: a response's status from HEADERS,
 * its body from DATA (acknowledged by WINDOW_UPDATE once per half window, per stream and for the connection),
 * SETTINGS and PING acknowledged, resets and GOAWAY failing the streams they end. Connection state (windows,
 * open streams, readiness) stays behind the connection's {@link Http2Wire}.
 */
final class Http2Frames extends Http2FrameAdapter {
  private final Http2Wire wire;
  private final boolean keepBody;
  private final StatusOnly responseHeaders = new StatusOnly();
  private final DefaultHttp2FrameReader reader = new DefaultHttp2FrameReader(new DefaultHttp2HeadersDecoder(false) {
    @Override
    protected Http2Headers newHeaders() {  // HPACK still decodes every field (its table must stay right); we keep :status
      responseHeaders.status = null;
      return responseHeaders;
    }
  });
  /** Bytes received on the connection since its last WINDOW_UPDATE. */
  private int unacknowledged;

  Http2Frames(Http2Wire wire, boolean keepBody) {
    this.wire = wire;
    this.keepBody = keepBody;
  }

  /** Reads the whole frames in {@code in}, calling this listener for each. */
  void read(ChannelHandlerContext ctx, ByteBuf in) throws Http2Exception {
    reader.readFrame(ctx, in, this);
  }

  /** Frees the reader's buffers (the connection closed). */
  void close() {
    reader.close();
  }

  @Override
  public void onSettingsRead(ChannelHandlerContext ctx, Http2Settings settings) {
    wire.frame(0, Http2Wire.SETTINGS, Http2Wire.ACK, 0);
    wire.settings(settings);
  }

  @Override
  public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers, int padding, boolean endStream) {
    Http2Stream s = wire.stream(streamId);
    if (s == null) return;
    if (s.status == 0) {
      CharSequence st = headers.status();
      int code = st == null ? 0 : parseStatus(st);
      if (code >= 100 && code < 200 && !endStream) return;  // interim response
      s.status = code;
    }
    if (endStream) wire.complete(s);
  }

  @Override
  public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers, int dependency,
                            short weight, boolean exclusive, int padding, boolean endStream) {
    onHeadersRead(ctx, streamId, headers, padding, endStream);
  }

  @Override
  public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding, boolean endOfStream) {
    int n = data.readableBytes() + padding;
    unacknowledged += n;
    if (unacknowledged >= Http2Wire.WINDOW / 2) {  // one WINDOW_UPDATE per half window
      wire.frame(4, Http2Wire.WINDOW_UPDATE, 0, 0).writeInt(unacknowledged);
      unacknowledged = 0;
    }
    Http2Stream s = wire.stream(streamId);
    if (s == null) return n;
    if (keepBody) {
      if (s.body == null) s.body = ctx.alloc().heapBuffer(Math.max(256, data.readableBytes()));
      s.body.writeBytes(data, data.readerIndex(), data.readableBytes());
    }
    if (endOfStream) {
      wire.complete(s);
    } else if ((s.unacknowledged += n) >= Http2Wire.WINDOW / 2) {
      wire.frame(4, Http2Wire.WINDOW_UPDATE, 0, streamId).writeInt(s.unacknowledged);
      s.unacknowledged = 0;
    }
    return n;
  }

  @Override
  public void onWindowUpdateRead(ChannelHandlerContext ctx, int streamId, int increment) {
    wire.windowUpdate(streamId, increment);
  }

  @Override
  public void onPingRead(ChannelHandlerContext ctx, long data) {
    wire.frame(8, Http2Wire.PING, Http2Wire.ACK, 0).writeLong(data);
  }

  @Override
  public void onRstStreamRead(ChannelHandlerContext ctx, int streamId, long errorCode) {
    Http2Stream s = wire.stream(streamId);
    if (s != null) {
      Http2Error e = Http2Error.valueOf(errorCode);
      wire.requestFailed(s, ErrorKind.READ, new IOException("stream reset by the server: " + (e == null ? errorCode : e.name())));
    }
  }

  @Override
  public void onPushPromiseRead(ChannelHandlerContext ctx, int streamId, int promisedStreamId, Http2Headers headers,
                                int padding) throws Http2Exception {
    throw Http2Exception.connectionError(Http2Error.PROTOCOL_ERROR, "PUSH_PROMISE although push is disabled");
  }

  @Override
  public void onGoAwayRead(ChannelHandlerContext ctx, int lastStreamId, long errorCode, ByteBuf debugData) {
    wire.goAway(lastStreamId);
  }

  /** Response headers that keep only {@code :status}: the only field a run needs, without a map entry per field. */
  private static final class StatusOnly extends DefaultHttp2Headers {
    CharSequence status;

    StatusOnly() {
      super(false);
    }

    @Override
    public Http2Headers add(CharSequence name, CharSequence value) {
      if (status == null && name.length() == 7 && io.netty.util.AsciiString.contentEquals(":status", name)) status = value;
      return this;
    }

    @Override
    public CharSequence status() {
      return status;
    }
  }

  private static int parseStatus(CharSequence s) {
    int n = 0;
    for (int i = 0; i < s.length(); i++) {
      int d = s.charAt(i) - '0';
      if (d < 0 || d > 9) return 0;
      n = n * 10 + d;
    }
    return n;
  }
}
