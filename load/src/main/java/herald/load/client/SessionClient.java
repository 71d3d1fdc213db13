package herald.load.client;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * One simulated user's connection for session workloads: one request at a time, each answered by a
 * future holding the whole response. Keeps its connection open between requests, or opens a new one per
 * request (as the reference news feed tester does). Safe to call from any thread, one call at a time.
 */
public final class SessionClient implements ConnectionListener, AutoCloseable {
  private final EventLoop loop;
  private final Bootstrap bootstrap;
  private final String host;
  private final int port;
  private final boolean newConnection;
  private final long timeoutNanos;
  private HttpConnection conn;
  private boolean connected;
  private byte[] pending;
  private boolean pendingHead;
  private long sent;
  private CompletableFuture<Response> result;
  private ScheduledFuture<?> timer;

  public SessionClient(EventLoop loop, String host, int port, boolean newConnection, long timeoutNanos) {
    this.loop = loop;
    this.host = host;
    this.port = port;
    this.newConnection = newConnection;
    this.timeoutNanos = timeoutNanos;
    this.bootstrap = Transport.bootstrap((int) Math.max(1, timeoutNanos / 1_000_000)).group(loop);
  }

  /** Sends an encoded request; the future fails with {@link RequestFailure} when no response comes. */
  public CompletableFuture<Response> send(byte[] request, boolean head) {
    CompletableFuture<Response> f = new CompletableFuture<>();
    loop.execute(() -> start(request, head, f));
    return f;
  }

  private void start(byte[] request, boolean head, CompletableFuture<Response> f) {
    if (result != null) {
      f.completeExceptionally(new IllegalStateException("a request is already in flight on this session"));
      return;
    }
    result = f;
    sent = System.nanoTime();
    timer = loop.schedule(this::timeout, timeoutNanos, TimeUnit.NANOSECONDS);
    if (conn != null && connected && !newConnection) {
      conn.send(Unpooled.wrappedBuffer(request), head);
    } else {
      pending = request;
      pendingHead = head;
      if (conn == null) open();
    }
  }

  private void open() {
    HttpConnection c = new HttpConnection(this, true, null);
    conn = c;
    connected = false;
    bootstrap.clone().handler(c).connect(host, port).addListener(r -> {
      if (!r.isSuccess()) c.connectFailed(r.cause());
    });
  }

  private void timeout() {
    if (conn != null) conn.fail(ErrorKind.TIMEOUT, null);
    else finish(null, new RequestFailure(ErrorKind.TIMEOUT, null));
  }

  @Override
  public void onConnected(HttpConnection c) {
    if (c != conn) return;
    connected = true;
    if (pending != null) {
      byte[] r = pending;
      pending = null;
      c.send(Unpooled.wrappedBuffer(r), pendingHead);
    }
  }

  @Override
  public void onResponse(HttpConnection c, int status, ByteBuf body, boolean keepAlive) {
    byte[] bytes = body == null ? new byte[0] : ByteBufUtil.getBytes(body);
    if (body != null) body.release();
    if (newConnection || !keepAlive) {
      conn = null;
      connected = false;
      if (keepAlive) c.channel().close();
    }
    finish(new Response(status, bytes, sent, System.nanoTime()), null);
  }

  @Override
  public void onClosed(HttpConnection c, boolean inFlight, ErrorKind kind, Throwable cause) {
    if (c != conn) return;
    conn = null;
    connected = false;
    if (result != null && (inFlight || pending != null || kind == ErrorKind.CONNECT || kind == ErrorKind.TIMEOUT)) {
      pending = null;
      finish(null, new RequestFailure(kind, cause));
    }
  }

  private void finish(Response r, Throwable error) {
    CompletableFuture<Response> f = result;
    result = null;
    if (timer != null) timer.cancel(false);
    timer = null;
    if (f == null) return;
    if (error != null) f.completeExceptionally(error);
    else f.complete(r);
  }

  @Override
  public void close() {
    loop.execute(() -> {
      if (conn != null && conn.channel() != null) conn.channel().close();
      conn = null;
    });
  }
}
