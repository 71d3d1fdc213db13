package herald.load.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.http2.DefaultHttp2FrameReader;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersDecoder;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.collection.IntObjectHashMap;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.List;

/**
 * One HTTP/2 client connection (h2 over TLS after ALPN, or h2c by prior knowledge) carrying up to N
 * requests at once, one per {@link Stream} lane: each lane sends its request on a new stream and gets its
 * response, a reset or a timeout of its own. Netty's frame reader parses frames and decodes HPACK; this
 * class keeps only what a client of whole requests needs (stream ids to lanes, both flow-control windows)
 * and writes its frames itself: a request's header block is encoded once ({@link HeaderBlock}), and every
 * frame of one read (or one event-loop turn) goes out in one buffer and one flush. Lanes are connected
 * once the server's first SETTINGS is read.
 */
public final class Http2Connection extends ByteToMessageDecoder {
  private static final int WINDOW = 1 << 24;
  private static final int DEFAULT_WINDOW = 65_535;
  private static final byte DATA = 0, HEADERS = 1, RST_STREAM = 3, SETTINGS = 4, PING = 6, WINDOW_UPDATE = 8, CONTINUATION = 9;
  private static final int END_STREAM = 1, ACK = 1, END_HEADERS = 4;
  private static final byte[] PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

  private final ConnectionListener listener;
  private final boolean keepBody;
  private final boolean tls;
  private final Stream[] lanes;
  private final IntObjectHashMap<Stream> active = new IntObjectHashMap<>();
  private final ArrayDeque<Stream> blocked = new ArrayDeque<>();
  private final StatusOnly responseHeaders = new StatusOnly();
  private final DefaultHttp2FrameReader reader = new DefaultHttp2FrameReader(new DefaultHttp2HeadersDecoder(false) {
    @Override
    protected Http2Headers newHeaders() {  // HPACK still decodes every field (its table must stay right); we keep :status
      responseHeaders.status = null;
      return responseHeaders;
    }
  });
  private final Frames frames = new Frames();
  private final ChannelFutureListener writeListener = f -> {
    if (!f.isSuccess()) failConnection(ErrorKind.WRITE, f.cause());
  };
  private final Runnable flushTask = this::flushOut;
  private ChannelHandlerContext ctx;
  private ByteBuf out;
  /** The write buffer, reused when the previous flush has let go of it. */
  private ByteBuf spare;
  private boolean flushQueued, firstFrameChecked, prefaceSent, closed;
  private int nextStreamId = 1;
  private int peerMaxFrame = 16_384;
  private int peerInitialWindow = DEFAULT_WINDOW;
  private long sendWindow = DEFAULT_WINDOW;
  private int unacknowledged;
  private boolean ready;
  private boolean draining;
  private ErrorKind failure;
  private Throwable cause;

  /** One request at a time on this connection: a stream slot. */
  public final class Stream implements Lane {
    private final int index;
    private final Object attachment;
    private int id;
    private boolean inFlight;
    private boolean closedReported;
    private int status;
    private ByteBuf body;
    private ByteBuf pending;
    private long window;
    private int unacknowledged;

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
      if (nextStreamId < 0) {  // stream ids exhausted: drain this connection, the owner reconnects
        draining = true;
        closedReported = true;
        listener.onClosed(this, true, ErrorKind.WRITE, new IllegalStateException("HTTP/2 stream ids exhausted"));
        drainIdle();
        return;
      }
      id = nextStreamId;
      nextStreamId += 2;
      inFlight = true;
      status = 0;
      unacknowledged = 0;
      window = peerInitialWindow;
      active.put(id, this);
      ByteBuf data = request.http2Body(tls);
      writeHeaders(id, request.http2Block(tls), data == null);
      if (data != null) {
        pending = data;
        sendData(this);
      }
      flushSoon();
    }

    @Override
    public void fail(ErrorKind kind, Throwable why) {
      if (!inFlight) return;
      int stream = id;
      requestFailed(this, kind, why);
      frame(4, RST_STREAM, 0, stream).writeInt((int) Http2Error.CANCEL.code());
      flushSoon();
    }
  }

  /** A connection with one lane per attachment; {@code tls}: h2 by ALPN after an SslHandler, else h2c. */
  Http2Connection(ConnectionListener listener, boolean keepBody, Object[] attachments, boolean tls) {
    this.listener = listener;
    this.keepBody = keepBody;
    this.tls = tls;
    this.lanes = new Stream[attachments.length];
    for (int i = 0; i < attachments.length; i++) lanes[i] = new Stream(i, attachments[i]);
  }

  /** The lanes, in order. */
  Lane[] lanes() {
    return lanes.clone();
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) throws Exception {
    this.ctx = ctx;
    if (ctx.channel().isActive()) sendPreface();
  }

  @Override
  public void channelActive(ChannelHandlerContext ctx) throws Exception {
    sendPreface();
    super.channelActive(ctx);
  }

  /** The client preface: the magic, our SETTINGS (no push, 16 MiB stream windows), the connection's window. */
  private void sendPreface() {
    if (prefaceSent) return;
    prefaceSent = true;
    buffer().writeBytes(PREFACE);
    frame(12, SETTINGS, 0, 0).writeShort(0x2).writeInt(0).writeShort(0x4).writeInt(WINDOW);
    frame(4, WINDOW_UPDATE, 0, 0).writeInt(WINDOW - DEFAULT_WINDOW);
    flushOut();
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext ctx) throws Exception {
    super.channelReadComplete(ctx);
    flushOut();
  }

  @Override
  protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> ignored) throws Exception {
    if (!firstFrameChecked) {
      if (in.readableBytes() < 4) return;
      if (in.getByte(in.readerIndex() + 3) != SETTINGS) {
        throw Http2Exception.connectionError(Http2Error.PROTOCOL_ERROR,
            "the server's first frame was not SETTINGS (it began with %s)", ByteBufUtil.hexDump(in, in.readerIndex(), Math.min(8, in.readableBytes())));
      }
      firstFrameChecked = true;
    }
    reader.readFrame(ctx, in, frames);
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
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable e) {
    failConnection(ready ? ErrorKind.READ : ErrorKind.CONNECT, e);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) throws Exception {
    if (failure == null && !ready) {
      failure = ErrorKind.CONNECT;
      cause = Http2Exception.connectionError(Http2Error.PROTOCOL_ERROR,
          "the connection closed before the server's first SETTINGS frame");
    }
    try {
      super.channelInactive(ctx);
    } finally {
      reader.close();
      closed = true;
      out = null;
      if (spare != null) { spare.release(); spare = null; }
      ErrorKind kind = failure != null ? failure : ready ? ErrorKind.READ : ErrorKind.CONNECT;
      for (Stream s : lanes) {
        if (s.body != null) { s.body.release(); s.body = null; }
        s.pending = null;
        if (s.closedReported) continue;
        s.closedReported = true;
        boolean was = s.inFlight;
        s.inFlight = false;
        listener.onClosed(s, was, kind, cause);
      }
      active.clear();
      blocked.clear();
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

  // ---- writing: frames go into one buffer, flushed at the end of the read or of the event-loop turn ----

  private ByteBuf buffer() {
    if (out == null) {
      if (spare == null || spare.refCnt() != 1) {
        if (spare != null) spare.release();
        spare = ctx.alloc().ioBuffer(4096);
      }
      out = spare.clear();
    }
    return out;
  }

  /** Appends a frame header and returns the buffer for its {@code length} bytes of payload. */
  private ByteBuf frame(int length, byte type, int flags, int streamId) {
    return buffer().writeMedium(length).writeByte(type).writeByte(flags).writeInt(streamId);
  }

  private void writeHeaders(int streamId, byte[] block, boolean endStream) {
    int first = Math.min(block.length, peerMaxFrame);
    int flags = (endStream ? END_STREAM : 0) | (first == block.length ? END_HEADERS : 0);
    frame(first, HEADERS, flags, streamId).writeBytes(block, 0, first);
    for (int at = first; at < block.length; ) {
      int n = Math.min(block.length - at, peerMaxFrame);
      frame(n, CONTINUATION, at + n == block.length ? END_HEADERS : 0, streamId).writeBytes(block, at, n);
      at += n;
    }
  }

  /** Sends as much of {@code s}'s pending body as both windows allow; the rest waits for WINDOW_UPDATE. */
  private void sendData(Stream s) {
    ByteBuf b = s.pending;
    while (b != null) {
      int n = (int) Math.min(Math.min(b.readableBytes(), peerMaxFrame), Math.min(s.window, sendWindow));
      boolean last = n == b.readableBytes();
      if (n <= 0 && !last) {
        if (!blocked.contains(s)) blocked.add(s);
        return;
      }
      frame(n, DATA, last ? END_STREAM : 0, s.id).writeBytes(b, b.readerIndex(), n);
      b.skipBytes(n);
      s.window -= n;
      sendWindow -= n;
      if (last) b = s.pending = null;
    }
  }

  private void unblock() {
    for (int i = blocked.size(); i > 0; i--) {
      Stream s = blocked.poll();
      if (s.inFlight && s.pending != null) sendData(s);
    }
  }

  /**
   * Flushes at the end of this event-loop turn: after the read in progress (its channelReadComplete flushes
   * first), or after the tasks and timers that send now. Never left to channelReadComplete alone: a handler
   * before this one (SslHandler) may deliver bytes without one following.
   */
  private void flushSoon() {
    if (flushQueued || out == null) return;
    flushQueued = true;
    ctx.executor().execute(flushTask);
  }

  private void flushOut() {
    flushQueued = false;
    ByteBuf b = out;
    if (b == null) return;
    out = null;
    if (closed) {  // frames made after the channel closed (a reset on a timer): nothing sends them
      b.release();
      spare = null;
      return;
    }
    ctx.writeAndFlush(b.retain()).addListener(writeListener);
  }

  // ---- reading ----

  private void requestFailed(Stream s, ErrorKind kind, Throwable why) {
    active.remove(s.id);
    s.pending = null;
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
    s.pending = null;
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
    public void onSettingsRead(ChannelHandlerContext ctx, Http2Settings settings) throws Http2Exception {
      frame(0, SETTINGS, ACK, 0);
      Integer frameSize = settings.maxFrameSize();
      if (frameSize != null) peerMaxFrame = frameSize;
      Integer initial = settings.initialWindowSize();
      if (initial != null) {
        int delta = initial - peerInitialWindow;
        peerInitialWindow = initial;
        for (Stream s : lanes) if (s.inFlight) s.window += delta;
        if (delta > 0) unblock();
      }
      if (ready) return;
      Long max = settings.maxConcurrentStreams();
      if (max != null && max < lanes.length) {
        failConnection(ErrorKind.CONNECT, Http2Exception.connectionError(Http2Error.REFUSED_STREAM,
            "the server allows %d concurrent streams per connection, fewer than the %d asked for", max, lanes.length));
        return;
      }
      ready = true;
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
      int n = data.readableBytes() + padding;
      unacknowledged += n;
      if (unacknowledged >= WINDOW / 2) {  // one WINDOW_UPDATE per half window
        frame(4, WINDOW_UPDATE, 0, 0).writeInt(unacknowledged);
        unacknowledged = 0;
      }
      Stream s = active.get(streamId);
      if (s == null) return n;
      if (keepBody) {
        if (s.body == null) s.body = ctx.alloc().heapBuffer(Math.max(256, data.readableBytes()));
        s.body.writeBytes(data, data.readerIndex(), data.readableBytes());
      }
      if (endOfStream) {
        complete(s);
      } else if ((s.unacknowledged += n) >= WINDOW / 2) {
        frame(4, WINDOW_UPDATE, 0, streamId).writeInt(s.unacknowledged);
        s.unacknowledged = 0;
      }
      return n;
    }

    @Override
    public void onWindowUpdateRead(ChannelHandlerContext ctx, int streamId, int increment) {
      if (streamId == 0) {
        sendWindow += increment;
      } else {
        Stream s = active.get(streamId);
        if (s == null) return;
        s.window += increment;
      }
      unblock();
    }

    @Override
    public void onPingRead(ChannelHandlerContext ctx, long data) {
      frame(8, PING, ACK, 0).writeLong(data);
    }

    @Override
    public void onRstStreamRead(ChannelHandlerContext ctx, int streamId, long errorCode) {
      Stream s = active.get(streamId);
      if (s != null) {
        Http2Error e = Http2Error.valueOf(errorCode);
        requestFailed(s, ErrorKind.READ, new IOException("stream reset by the server: " + (e == null ? errorCode : e.name())));
      }
    }

    @Override
    public void onPushPromiseRead(ChannelHandlerContext ctx, int streamId, int promisedStreamId, Http2Headers headers,
                                  int padding) throws Http2Exception {
      throw Http2Exception.connectionError(Http2Error.PROTOCOL_ERROR, "PUSH_PROMISE although push is disabled");
    }

    @Override
    public void onGoAwayRead(ChannelHandlerContext ctx, int lastStreamId, long errorCode, ByteBuf debugData) {
      draining = true;
      for (Stream s : lanes) {  // streams the server did not take: they get no response
        if (s.inFlight && s.id > lastStreamId) {
          requestFailed(s, ErrorKind.READ, new IOException("stream closed before the whole response"));
        }
      }
      drainIdle();
    }
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
