package herald.load.client;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http2.DefaultHttp2Connection;
import io.netty.handler.codec.http2.DefaultHttp2ConnectionDecoder;
import io.netty.handler.codec.http2.DefaultHttp2ConnectionEncoder;
import io.netty.handler.codec.http2.DefaultHttp2FrameReader;
import io.netty.handler.codec.http2.DefaultHttp2FrameWriter;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2ConnectionAdapter;
import io.netty.handler.codec.http2.Http2ConnectionEncoder;
import io.netty.handler.codec.http2.Http2ConnectionHandler;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.codec.http2.Http2Stream;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.collection.IntObjectHashMap;

/**
 * One HTTP/2 client connection (h2 over TLS after ALPN, or h2c by prior knowledge) carrying up to N
 * requests at once, one per {@link Stream} lane: each lane sends its request on a new stream and gets its
 * response, a reset or a timeout of its own. Netty's connection handler does framing, HPACK and flow control;
 * this class maps streams to lanes. Lanes are connected once the server's first SETTINGS is read.
 */
public final class Http2Connection extends Http2ConnectionHandler {
  private static final int WINDOW = 1 << 24;

  private final ConnectionListener listener;
  private final boolean keepBody;
  private final boolean tls;
  private final Stream[] lanes;
  private final IntObjectHashMap<Stream> active = new IntObjectHashMap<>();
  private ChannelHandlerContext ctx;
  private boolean ready;
  private boolean draining;
  private boolean closing;
  private ErrorKind failure;
  private Throwable cause;

  /** One request at a time on this connection: a stream slot. */
  public final class Stream implements Lane {
    private final int index;
    private final Object attachment;
    private final ChannelFutureListener writeListener = f -> {
      if (!f.isSuccess()) writeFailed(f.cause());
    };
    private int id;
    private boolean inFlight;
    private boolean closedReported;
    private int status;
    private ByteBuf body;

    Stream(int index, Object attachment) {
      this.index = index;
      this.attachment = attachment;
    }

    /** The connection this lane belongs to. */
    Http2Connection owner() {
      return Http2Connection.this;
    }

    @Override public Object attachment() { return attachment; }
    @Override public int index() { return index; }
    @Override public boolean inFlight() { return inFlight; }
    @Override public void close() { if (ctx != null) ctx.channel().close(); }
    @Override public String tlsSession() { return tls && ctx != null ? Tls.sessionOf(ctx.channel()) : null; }

    @Override
    public void send(PreparedRequest request) {
      if (inFlight) throw new IllegalStateException("a request is already in flight on this stream slot");
      if (closedReported || !ready || draining) {
        closedReported = true;
        listener.onClosed(this, true, ErrorKind.WRITE, new IllegalStateException("HTTP/2 connection not usable"));
        return;
      }
      int next = connection().local().incrementAndGetNextStreamId();
      if (next < 0) {  // stream ids exhausted: drain this connection, the owner reconnects
        draining = true;
        closedReported = true;
        listener.onClosed(this, true, ErrorKind.WRITE, new IllegalStateException("HTTP/2 stream ids exhausted"));
        drainIdle();
        return;
      }
      id = next;
      inFlight = true;
      status = 0;
      active.put(id, this);
      ByteBuf data = request.http2Body(tls);
      Http2Headers headers = request.http2Headers(tls);
      encoder().writeHeaders(ctx, id, headers, 0, data == null, ctx.newPromise().addListener(writeListener));
      if (data != null) encoder().writeData(ctx, id, data, 0, true, ctx.newPromise().addListener(writeListener));
      flush(ctx);
    }

    @Override
    public void fail(ErrorKind kind, Throwable why) {
      if (!inFlight) return;
      int stream = id;
      requestFailed(this, kind, why);
      encoder().writeRstStream(ctx, stream, Http2Error.CANCEL.code(), ctx.newPromise());
      ctx.flush();
    }

    private void writeFailed(Throwable why) {
      if (inFlight) requestFailed(this, ErrorKind.WRITE, why);
    }
  }

  /** A connection with one lane per attachment; {@code tls}: h2 by ALPN after an SslHandler, else h2c. */
  Http2Connection(ConnectionListener listener, boolean keepBody, Object[] attachments, boolean tls) {
    this(new DefaultHttp2ConnectionEncoder(new DefaultHttp2Connection(false), new DefaultHttp2FrameWriter()),
        listener, keepBody, attachments, tls);
  }

  private Http2Connection(Http2ConnectionEncoder encoder, ConnectionListener listener, boolean keepBody,
                          Object[] attachments, boolean tls) {
    super(new DefaultHttp2ConnectionDecoder(encoder.connection(), encoder, new DefaultHttp2FrameReader(false)),
        encoder, initialSettings());
    this.listener = listener;
    this.keepBody = keepBody;
    this.tls = tls;
    this.lanes = new Stream[attachments.length];
    for (int i = 0; i < attachments.length; i++) lanes[i] = new Stream(i, attachments[i]);
    gracefulShutdownTimeoutMillis(0);
    decoder().frameListener(new Frames());
    connection().addListener(new Http2ConnectionAdapter() {
      @Override
      public void onStreamClosed(Http2Stream stream) {
        if (closing) return;
        Stream s = active.get(stream.id());
        if (s != null) requestFailed(s, ErrorKind.READ, new java.io.IOException("stream closed before the whole response"));
      }
    });
  }

  private static Http2Settings initialSettings() {
    return new Http2Settings().pushEnabled(false).initialWindowSize(WINDOW);
  }

  /** The lanes, in order. */
  Lane[] lanes() {
    return lanes.clone();
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) throws Exception {
    this.ctx = ctx;
    super.handlerAdded(ctx);
  }

  @Override
  public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
    if (evt instanceof SslHandshakeCompletionEvent e) {
      if (!e.isSuccess()) {
        failConnection(ErrorKind.CONNECT, e.cause());
      } else {
        String p = ctx.pipeline().get(SslHandler.class).applicationProtocol();
        if (!"h2".equals(p)) {
          failConnection(ErrorKind.CONNECT, Http2Exception.connectionError(Http2Error.PROTOCOL_ERROR,
              "the server did not select h2 by ALPN (it selected %s)", p == null ? "no protocol" : p));
        }
      }
    }
    super.userEventTriggered(ctx, evt);
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable e) throws Exception {
    if (Http2CodecUtil.getEmbeddedHttp2Exception(e) != null) {
      if (failure == null && !ready) { failure = ErrorKind.CONNECT; cause = e; }
      super.exceptionCaught(ctx, e);
    } else {
      failConnection(ready ? ErrorKind.READ : ErrorKind.CONNECT, e);
    }
  }

  /** Netty's own errors (a bad preface or frame) come here, not through exceptionCaught. */
  @Override
  public void onError(ChannelHandlerContext ctx, boolean outbound, Throwable e) {
    if (failure == null && !ready) { failure = ErrorKind.CONNECT; cause = e; }
    super.onError(ctx, outbound, e);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    if (failure == null && !ready) {
      failure = ErrorKind.CONNECT;
      cause = Http2Exception.connectionError(Http2Error.PROTOCOL_ERROR,
          "the connection closed before the server's first SETTINGS frame");
    }
    closing = true;
    try {
      super.channelInactive(ctx);
    } finally {
      ErrorKind kind = failure != null ? failure : ready ? ErrorKind.READ : ErrorKind.CONNECT;
      for (Stream s : lanes) {
        if (s.body != null) { s.body.release(); s.body = null; }
        if (s.closedReported) continue;
        s.closedReported = true;
        boolean was = s.inFlight;
        s.inFlight = false;
        listener.onClosed(s, was, kind, cause);
      }
      active.clear();
    }
  }

  /** Called by the owner when connecting failed (the channel never became active). */
  void connectFailed(Throwable why) {
    for (Stream s : lanes) {
      if (s.closedReported) continue;
      s.closedReported = true;
      listener.onClosed(s, false, ErrorKind.CONNECT, why);
    }
  }

  private void failConnection(ErrorKind kind, Throwable why) {
    if (failure == null) { failure = kind; cause = why; }
    ctx.close();
  }

  private void requestFailed(Stream s, ErrorKind kind, Throwable why) {
    active.remove(s.id);
    if (s.body != null) { s.body.release(); s.body = null; }
    if (draining) {
      s.closedReported = true;
      s.inFlight = false;
      listener.onClosed(s, true, kind, why);
      if (active.isEmpty()) ctx.close();
    } else {
      s.inFlight = false;
      listener.onRequestFailed(s, kind, why);
    }
  }

  private void complete(Stream s) {
    active.remove(s.id);
    s.inFlight = false;
    ByteBuf b = s.body;
    s.body = null;
    if (keepBody && b == null) b = ctx.alloc().heapBuffer(0);
    if (draining) s.closedReported = true;
    listener.onResponse(s, s.status, b, !draining);
    if (draining && active.isEmpty()) ctx.close();
  }

  /** After GOAWAY (or when stream ids run out): lanes without a request leave now, the others after their response. */
  private void drainIdle() {
    for (Stream s : lanes) {
      if (s.inFlight || s.closedReported) continue;
      s.closedReported = true;
      listener.onClosed(s, false, ErrorKind.READ, null);
    }
    if (active.isEmpty()) ctx.close();
  }

  private final class Frames extends Http2FrameAdapter {
    @Override
    public void onSettingsRead(ChannelHandlerContext ctx, Http2Settings settings) {
      if (ready) return;
      Long max = settings.maxConcurrentStreams();
      if (max != null && max < lanes.length) {
        failConnection(ErrorKind.CONNECT, Http2Exception.connectionError(Http2Error.REFUSED_STREAM,
            "the server allows %d concurrent streams per connection, fewer than the %d asked for", max, lanes.length));
        return;
      }
      ready = true;
      try {
        connection().local().flowController().incrementWindowSize(connection().connectionStream(),
            WINDOW - Http2CodecUtil.DEFAULT_WINDOW_SIZE);
        ctx.flush();
      } catch (Http2Exception e) {
        failConnection(ErrorKind.CONNECT, e);
        return;
      }
      for (Stream s : lanes) if (!s.closedReported) listener.onConnected(s);
    }

    @Override
    public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers, int padding, boolean endStream) {
      Stream s = active.get(streamId);
      if (s == null) return;
      if (s.status == 0) {
        CharSequence st = headers.status();
        int code = st == null ? 0 : parseStatus(st);
        if (code >= 100 && code < 200 && !endStream) return;  // interim response
        s.status = code;
      }
      if (endStream) complete(s);
    }

    @Override
    public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers, int dependency,
                              short weight, boolean exclusive, int padding, boolean endStream) {
      onHeadersRead(ctx, streamId, headers, padding, endStream);
    }

    @Override
    public int onDataRead(ChannelHandlerContext ctx, int streamId, ByteBuf data, int padding, boolean endOfStream) {
      int processed = data.readableBytes() + padding;
      Stream s = active.get(streamId);
      if (s == null) return processed;
      if (keepBody) {
        if (s.body == null) s.body = ctx.alloc().heapBuffer(Math.max(256, data.readableBytes()));
        s.body.writeBytes(data, data.readerIndex(), data.readableBytes());
      }
      if (endOfStream) complete(s);
      return processed;
    }

    @Override
    public void onRstStreamRead(ChannelHandlerContext ctx, int streamId, long errorCode) {
      Stream s = active.get(streamId);
      if (s != null) {
        Http2Error e = Http2Error.valueOf(errorCode);
        requestFailed(s, ErrorKind.READ, new java.io.IOException("stream reset by the server: " + (e == null ? errorCode : e.name())));
      }
    }

    @Override
    public void onGoAwayRead(ChannelHandlerContext ctx, int lastStreamId, long errorCode, ByteBuf debugData) {
      draining = true;
      drainIdle();
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
