package herald.load.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.http2.Http2Error;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.collection.IntObjectHashMap;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.List;

/**
 * One HTTP/2 client connection (h2 over TLS after ALPN, or h2c by prior knowledge) carrying up to N
 * requests at once, one per {@link Http2Stream} lane: each lane sends its request on a new stream and gets its
 * response, a reset or a timeout of its own. {@link Http2Frames} reads the server's frames (with Netty's frame
 * reader and HPACK decoder) and says what each means; this class keeps only the connection's state (stream ids to
 * lanes, the send windows, readiness, draining) and writes its frames itself: a request's header block is
 * encoded once ({@link HeaderBlock}), and every frame of one read (or one event-loop turn) goes out in one
 * buffer and one flush. Lanes are connected once the server's first SETTINGS is read.
 */
public final class Http2Connection extends ByteToMessageDecoder implements Http2Wire {
  private static final int DEFAULT_WINDOW = 65_535;
  private static final byte[] PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

  private final ConnectionListener listener;
  private final boolean tls;
  private final boolean keepBody;
  private final Http2Stream[] lanes;
  private final IntObjectHashMap<Http2Stream> active = new IntObjectHashMap<>();
  private final ArrayDeque<Http2Stream> blocked = new ArrayDeque<>();
  private final Http2Frames frames;
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
  private boolean ready;
  private boolean draining;
  private ErrorKind failure;
  private Throwable cause;

  /** A connection with one lane per attachment; {@code tls}: h2 by ALPN after an SslHandler, else h2c. */
  Http2Connection(ConnectionListener listener, boolean keepBody, Object[] attachments, boolean tls) {
    this.listener = listener;
    this.tls = tls;
    this.keepBody = keepBody;
    this.frames = new Http2Frames(this, keepBody);
    this.lanes = new Http2Stream[attachments.length];
    for (int i = 0; i < attachments.length; i++) lanes[i] = new Http2Stream(this, listener, i, attachments[i]);
  }

  /** The lanes, in order. */
  Lane[] lanes() {
    return lanes.clone();
  }

  // ---- the channel's events ----

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
    frames.read(ctx, in);
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
      frames.close();
      closed = true;
      out = null;
      if (spare != null) { spare.release(); spare = null; }
      ErrorKind kind = failure != null ? failure : ready ? ErrorKind.READ : ErrorKind.CONNECT;
      for (Http2Stream s : lanes) {
        s.release();
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
    for (Http2Stream s : lanes) {
      if (s.closedReported) continue;
      s.closedReported = true;
      listener.onClosed(s, false, ErrorKind.CONNECT, why);
    }
  }

  private void failConnection(ErrorKind kind, Throwable why) {
    if (failure == null) { failure = kind; cause = why; }
    ctx.close();
  }

  @Override
  public void close() {
    if (ctx != null) ctx.channel().close();
  }

  @Override
  public String tlsSession() {
    return tls && ctx != null ? Tls.sessionOf(ctx.channel()) : null;
  }

  @Override
  public boolean tls() {
    return tls;
  }

  // ---- the write buffer: frames go into one buffer, flushed at the end of the read or of the event-loop turn ----

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

  @Override
  public ByteBuf frame(int length, byte type, int flags, int streamId) {
    return buffer().writeMedium(length).writeByte(type).writeByte(flags).writeInt(streamId);
  }

  @Override
  public int maxFrame() {
    return peerMaxFrame;
  }

  /**
   * Flushes at the end of this event-loop turn: after the read in progress (its channelReadComplete flushes
   * first), or after the tasks and timers that send now. Never left to channelReadComplete alone: a handler
   * before this one (SslHandler) may deliver bytes without one following.
   */
  @Override
  public void flushSoon() {
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

  // ---- the send windows ----

  @Override
  public int initialWindow() {
    return peerInitialWindow;
  }

  @Override
  public void sendData(Http2Stream s) {
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
      Http2Stream s = blocked.poll();
      if (s.inFlight && s.pending != null) sendData(s);
    }
  }

  @Override
  public void settings(Http2Settings settings) {
    Integer frameSize = settings.maxFrameSize();
    if (frameSize != null) peerMaxFrame = frameSize;
    Integer initial = settings.initialWindowSize();
    if (initial != null) {
      int delta = initial - peerInitialWindow;
      peerInitialWindow = initial;
      for (Http2Stream s : lanes) if (s.inFlight) s.window += delta;
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
    for (Http2Stream s : lanes) if (!s.closedReported) listener.onConnected(s);
  }

  @Override
  public void windowUpdate(int streamId, int increment) {
    if (streamId == 0) {
      sendWindow += increment;
    } else {
      Http2Stream s = active.get(streamId);
      if (s == null) return;
      s.window += increment;
    }
    unblock();
  }

  // ---- the streams ----

  @Override
  public boolean usable() {
    return ready && !draining;
  }

  @Override
  public int open(Http2Stream s) {
    if (nextStreamId < 0) {
      draining = true;
      return -1;
    }
    int id = nextStreamId;
    nextStreamId += 2;
    active.put(id, s);
    return id;
  }

  @Override
  public Http2Stream stream(int streamId) {
    return active.get(streamId);
  }

  @Override
  public void requestFailed(Http2Stream s, ErrorKind kind, Throwable why) {
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

  @Override
  public void complete(Http2Stream s) {
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

  @Override
  public void goAway(int lastStreamId) {
    draining = true;
    for (Http2Stream s : lanes) {  // streams the server did not take: they get no response
      if (s.inFlight && s.id > lastStreamId) {
        requestFailed(s, ErrorKind.READ, new IOException("stream closed before the whole response"));
      }
    }
    drainIdle();
  }

  @Override
  public void drainIdle() {
    for (Http2Stream s : lanes) {
      if (s.inFlight || s.closedReported) continue;
      s.closedReported = true;
      listener.onClosed(s, false, ErrorKind.READ, null);
    }
    if (active.isEmpty()) ctx.close();
  }
}
