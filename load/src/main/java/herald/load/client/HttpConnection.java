package herald.load.client;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import java.io.IOException;

/**
 * One HTTP/1.1 client connection without pipelining: at most one request in flight. Last in its channel's
 * pipeline (after the SslHandler over TLS); parses responses itself and reports them to its
 * {@link ConnectionListener}. Over TLS it is connected once the handshake succeeded.
 */
public final class HttpConnection extends ChannelInboundHandlerAdapter implements Lane, ResponseParser.Sink {
  private final ConnectionListener listener;
  private final boolean keepBody;
  private final boolean tls;
  private ResponseParser parser;
  private Channel channel;
  private boolean ready;
  private boolean inFlight;
  private boolean writing;
  private boolean closedReported;
  private ErrorKind failure;
  private Throwable cause;
  /** The shared request last sent and this connection's buffer of it (see {@link #bytesOf}). */
  private PreparedRequest lastShared;
  private ByteBuf lastSharedBytes;
  /** Free for the owner's use (the slot or session this connection serves). */
  public Object attachment;

  /** A plaintext connection. */
  public HttpConnection(ConnectionListener listener, boolean keepBody, Object attachment) {
    this(listener, keepBody, attachment, false);
  }

  /** {@code tls}: an SslHandler precedes this handler, so the connection is ready after its handshake. */
  public HttpConnection(ConnectionListener listener, boolean keepBody, Object attachment, boolean tls) {
    this.listener = listener;
    this.keepBody = keepBody;
    this.attachment = attachment;
    this.tls = tls;
  }

  /** The channel, once registered. */
  public Channel channel() {
    return channel;
  }

  @Override
  public Object attachment() {
    return attachment;
  }

  @Override
  public int index() {
    return 0;
  }

  @Override
  public String tlsSession() {
    return tls ? Tls.sessionOf(channel) : null;
  }

  @Override
  public boolean inFlight() {
    return inFlight;
  }

  @Override
  public void send(PreparedRequest request) {
    send(bytesOf(request), request.head());
  }

  /**
   * The buffer to write for {@code request}: for a shared request the same one every time, rewound (its bytes
   * never change and freeing it does nothing; the previous write of it is complete, since its answer came
   * back), so a constant load allocates no buffer per request.
   */
  private ByteBuf bytesOf(PreparedRequest request) {
    if (!request.isShared()) return request.http1();
    if (request != lastShared) {
      lastShared = request;
      lastSharedBytes = request.http1();
    }
    return lastSharedBytes.readerIndex(0);
  }

  @Override
  public void close() {
    if (channel != null) channel.close();
  }

  /** Writes a request (the connection takes ownership of {@code request}); call on the event loop. */
  public void send(ByteBuf request, boolean headRequest) {
    if (inFlight) {
      request.release();
      throw new IllegalStateException("a request is already in flight on this connection");
    }
    inFlight = true;
    parser.expectNoBody(headRequest);
    writing = true;
    channel.writeAndFlush(request, channel.voidPromise());  // a failed write fires exceptionCaught
    writing = false;
  }

  /** Closes the connection, reporting {@code kind} for a request in flight (e.g. a timeout). */
  @Override
  public void fail(ErrorKind kind, Throwable why) {
    if (failure == null) {
      failure = kind;
      cause = why;
    }
    if (channel != null) channel.close();
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    channel = ctx.channel();
    parser = new ResponseParser(this, keepBody, ctx.alloc());
  }

  @Override
  public void channelActive(ChannelHandlerContext ctx) {
    if (!tls) {
      ready = true;
      listener.onConnected(this);
    }
  }

  @Override
  public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
    if (evt instanceof SslHandshakeCompletionEvent e) {
      if (e.isSuccess()) {
        ready = true;
        listener.onConnected(this);
      } else {
        fail(ErrorKind.CONNECT, e.cause());
      }
    }
    ctx.fireUserEventTriggered(evt);
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    ByteBuf in = (ByteBuf) msg;
    try {
      parser.feed(in);
    } catch (ResponseParser.ParseException e) {
      fail(ErrorKind.PARSE, e);
    } finally {
      in.release();
    }
  }

  @Override
  public void onResponse(int status, ByteBuf body, boolean keepAlive) {
    if (!inFlight) {
      if (body != null) body.release();
      fail(ErrorKind.PARSE, new IOException("response without a request"));
      return;
    }
    inFlight = false;
    if (!keepAlive) closedReported = true;  // an expected close: not a failure
    listener.onResponse(this, status, body, keepAlive);
    if (!keepAlive) channel.close();
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable e) {
    fail(!ready ? ErrorKind.CONNECT : writing ? ErrorKind.WRITE : ErrorKind.READ, e);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    if (inFlight && parser.readingUntilClose() && failure == null) parser.closed();
    parser.release();
    reportClosed();
  }

  private void reportClosed() {
    if (closedReported) return;
    closedReported = true;
    ErrorKind kind = failure != null ? failure : ready ? ErrorKind.READ : ErrorKind.CONNECT;
    listener.onClosed(this, inFlight, kind, cause);
    inFlight = false;
  }

  /** Called by the owner when connecting failed (the channel never became active). */
  public void connectFailed(Throwable why) {
    if (closedReported) return;
    closedReported = true;
    listener.onClosed(this, false, ErrorKind.CONNECT, why);
  }
}
