package herald.load.client;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoop;
import io.netty.handler.ssl.SslContext;

/**
 * Where and how to connect: the resolved address and port, TLS (a client {@link SslContext} and the server
 * name for SNI and the certificate check) or plaintext, HTTP/1.1 or HTTP/2 (h2 by ALPN over TLS, h2c by
 * prior knowledge otherwise) with a number of streams per connection. Immutable; makes the connections.
 */
public final class Target {
  private final String address;
  private final int port;
  private final String serverName;
  private final SslContext ssl;
  private final boolean http2;
  private final int streams;
  private final int connectTimeoutMillis;

  /**
   * {@code address}: an IP literal (resolved once, before a run); {@code serverName}: the URL's host;
   * {@code ssl}: null for plaintext; {@code streams}: requests in flight per HTTP/2 connection (1 for HTTP/1.1).
   */
  public Target(String address, int port, String serverName, SslContext ssl, boolean http2, int streams,
                int connectTimeoutMillis) {
    if (streams < 1) throw new IllegalArgumentException("streams must be >= 1: " + streams);
    if (!http2 && streams != 1) throw new IllegalArgumentException("HTTP/1.1 has one request in flight per connection");
    this.address = address;
    this.port = port;
    this.serverName = serverName;
    this.ssl = ssl;
    this.http2 = http2;
    this.streams = streams;
    this.connectTimeoutMillis = connectTimeoutMillis;
  }

  /** A plaintext HTTP/1.1 target. */
  public static Target http1(String address, int port, int connectTimeoutMillis) {
    return new Target(address, port, address, null, false, 1, connectTimeoutMillis);
  }

  /** Requests in flight per connection: the streams of HTTP/2, 1 for HTTP/1.1. */
  public int lanesPerConnection() {
    return streams;
  }

  /** True over TLS. */
  public boolean tls() {
    return ssl != null;
  }

  /** True for HTTP/2. */
  public boolean http2() {
    return http2;
  }

  /** "h2", "h2c", "http/1.1" or "http/1.1 over TLS". */
  public String protocolName() {
    if (http2) return ssl != null ? "h2" : "h2c";
    return ssl != null ? "http/1.1 over TLS" : "http/1.1";
  }

  /**
   * The lanes of a new connection, one per attachment (at most {@link #lanesPerConnection()}), not yet
   * connected: store them, then call {@link #connect}, so that events (a connect failing at once
   * included) find them stored.
   */
  public Lane[] newConnection(ConnectionListener listener, boolean keepBody, Object[] attachments) {
    if (attachments.length < 1 || attachments.length > streams) {
      throw new IllegalArgumentException("lanes per connection: " + attachments.length + " of at most " + streams);
    }
    if (http2) return new Http2Connection(listener, keepBody, attachments, ssl != null).lanes();
    return new Lane[] {new HttpConnection(listener, keepBody, attachments[0], ssl != null)};
  }

  /** Connects the connection of {@code lanes} (from {@link #newConnection}) on {@code loop}. */
  public void connect(EventLoop loop, Lane[] lanes) {
    ChannelHandler handler = lanes[0] instanceof HttpConnection c ? c : ((Http2Stream) lanes[0]).owner();
    Bootstrap b = Transport.bootstrap(connectTimeoutMillis).group(loop);
    if (ssl == null) {
      b.handler(handler);
    } else {
      b.handler(new ChannelInitializer<Channel>() {
        @Override
        protected void initChannel(Channel ch) {
          ch.pipeline().addLast(ssl.newHandler(ch.alloc(), serverName, port), handler);
        }
      });
    }
    b.connect(address, port).addListener(r -> {
      if (r.isSuccess()) return;
      if (handler instanceof HttpConnection c) c.connectFailed(r.cause());
      else ((Http2Connection) handler).connectFailed(r.cause());
    });
  }
}
