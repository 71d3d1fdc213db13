package herald.load.client;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * One simulated user's connection for session workloads: one request at a time, each answered by a
 * future holding the whole response. Keeps its connection open between requests, or opens a new one per
 * request (as the reference news feed tester does). HTTP/1.1 or HTTP/2 (one stream at a time on its own
 * connection), over TCP or TLS, as its {@link Target} says. Safe to call from any thread, one call at a time.
 */
public final class SessionClient implements ConnectionListener, AutoCloseable {
  private final EventLoop loop;
  private final Target target;
  private final SessionGroup group;
  private final boolean newConnection;
  private final long timeoutNanos;
  private Lane conn;
  private boolean connected;
  private byte[] pending;
  private boolean pendingHead;
  private long sent;
  private CompletableFuture<Response> result;
  private ScheduledFuture<?> timer;
  private boolean closed;

  /** A session on {@code loop} to {@code target} (whose connect timeout should be the request timeout). */
  public SessionClient(EventLoop loop, Target target, boolean newConnection, long timeoutNanos) {
    this.loop = loop;
    this.target = target;
    this.group = null;
    this.newConnection = newConnection;
    this.timeoutNanos = timeoutNanos;
  }

  /** A session sharing the HTTP/2 connections of {@code group}: one stream of them at a time. */
  public SessionClient(SessionGroup group, long timeoutNanos) {
    this.loop = group.loop();
    this.target = group.target();
    this.group = group;
    this.newConnection = false;
    this.timeoutNanos = timeoutNanos;
    group.add(this);
  }

  /** True while this session has no lane (the group opens a connection for every such member). */
  boolean detached() {
    return conn == null;
  }

  /** Gives this session its lane on a new connection of its group. */
  void attach(Lane lane) {
    conn = lane;
    connected = false;
  }

  /** Sends an encoded request; the future fails with {@link RequestFailure} when no response comes. */
  public CompletableFuture<Response> send(byte[] request, boolean head) {
    CompletableFuture<Response> f = new CompletableFuture<>();
    loop.execute(() -> start(request, head, f));
    return f;
  }

  /**
   * Sends an encoded request at {@code notBeforeNanos} ({@link System#nanoTime()}) or, when that has passed, at once.
   * The event loop's own timer waits (no thread sleeps and wakes to hand the request over), and a request's latency
   * and timeout count from when it is written.
   */
  public CompletableFuture<Response> send(byte[] request, boolean head, long notBeforeNanos) {
    long wait = notBeforeNanos - System.nanoTime();
    if (wait <= 0) return send(request, head);
    CompletableFuture<Response> f = new CompletableFuture<>();
    loop.schedule(() -> start(request, head, f), wait, TimeUnit.NANOSECONDS);
    return f;
  }

  private void start(byte[] request, boolean head, CompletableFuture<Response> f) {
    if (closed) {
      f.completeExceptionally(new IllegalStateException("the session is closed"));
      return;
    }
    if (result != null) {
      f.completeExceptionally(new IllegalStateException("a request is already in flight on this session"));
      return;
    }
    result = f;
    sent = System.nanoTime();
    timer = loop.schedule(this::timeout, timeoutNanos, TimeUnit.NANOSECONDS);
    if (conn != null && connected && !newConnection) {
      conn.send(PreparedRequest.once(request, head));
    } else {
      pending = request;
      pendingHead = head;
      if (conn == null) open();
    }
  }

  private void open() {
    if (group != null) {
      group.open();
      return;
    }
    Lane[] lanes = target.newConnection(this, true, new Object[1]);
    conn = lanes[0];
    connected = false;
    target.connect(loop, lanes);
  }

  private void timeout() {
    if (conn != null) conn.fail(ErrorKind.TIMEOUT, null);
    else finish(null, new RequestFailure(ErrorKind.TIMEOUT, null));
  }

  @Override
  public void onConnected(Lane c) {
    if (c != conn) return;
    connected = true;
    if (pending != null) {
      byte[] r = pending;
      pending = null;
      c.send(PreparedRequest.once(r, pendingHead));
    }
  }

  @Override
  public void onResponse(Lane c, int status, ByteBuf body, boolean keepAlive) {
    byte[] bytes = body == null ? new byte[0] : ByteBufUtil.getBytes(body);
    if (body != null) body.release();
    if (newConnection || !keepAlive) {
      conn = null;
      connected = false;
      if (keepAlive) c.close();
    }
    finish(new Response(status, bytes, sent, System.nanoTime()), null);
  }

  @Override
  public void onRequestFailed(Lane c, ErrorKind kind, Throwable cause) {
    if (c == conn) finish(null, new RequestFailure(kind, cause));
  }

  @Override
  public void onClosed(Lane c, boolean inFlight, ErrorKind kind, Throwable cause) {
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
      closed = true;
      if (conn != null) conn.close();
      conn = null;
    });
  }
}
