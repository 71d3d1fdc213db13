package herald.load.client;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.io.IOException;

/**
 * One HTTP/1.1 client connection without pipelining: at most one request in flight. Sits alone in its
 * channel's pipeline; parses responses itself and reports them to its {@link ConnectionListener}.
 */
public final class HttpConnection extends ChannelInboundHandlerAdapter implements ResponseParser.Sink {
  private final ConnectionListener listener;
  private final boolean keepBody;
  private ResponseParser parser;
  private Channel channel;
  private boolean inFlight;
  private boolean writing;
  private boolean closedReported;
  private ErrorKind failure;
  private Throwable cause;
  /** Free for the owner's use (the slot or session this connection serves). */
  public Object attachment;

  public HttpConnection(ConnectionListener listener, boolean keepBody, Object attachment) {
    this.listener = listener;
    this.keepBody = keepBody;
    this.attachment = attachment;
  }

  /** The channel, once registered. */
  public Channel channel() {
    return channel;
  }

  /** True while a request waits for its response. */
  public boolean inFlight() {
    return inFlight;
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
    listener.onConnected(this);
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
    fail(writing ? ErrorKind.WRITE : ErrorKind.READ, e);
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
    ErrorKind kind = failure != null ? failure : ErrorKind.READ;
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
