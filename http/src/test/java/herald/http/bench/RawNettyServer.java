package herald.http.bench;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpRequestDecoder;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;

/**
 * The ceiling of {@code bench/http.sh}: a TechEmpower-style server on raw Netty 4.2, written the fastest way we
 * know while still speaking correct HTTP/1.1.
 *
 * <ul>
 *   <li>{@code GET /plaintext} answers {@code Hello, World!} as {@code text/plain};
 *       {@code GET /json} answers {@code {"message":"Hello, World!"}} serialised per request with jackson-core.
 *   <li>Requests are parsed by Netty's {@link HttpRequestDecoder} (header validation off, as in TechEmpower's
 *       Netty entry); responses are encoded by hand into one pooled buffer per read batch, with a cached
 *       {@code Date} (refreshed every second) and a {@code Server} header, and flushed once per read batch, so
 *       16-deep pipelining costs one write.
 *   <li>Keep-alive (HTTP/1.1 by default, HTTP/1.0 with {@code Connection: keep-alive}); 404 for other paths,
 *       405 for other methods, 400 and close on a malformed request.
 *   <li>Native epoll when available, NIO otherwise.
 * </ul>
 *
 * <p>Command line (stable: other tools start this class as their reference target):
 * {@code --port N} (default 8080; 0 picks a free port), {@code --host H} (default 127.0.0.1),
 * {@code --threads N} (event-loop threads, default: available processors),
 * {@code --transport auto|epoll|nio} (default auto), {@code --validate-headers true|false} (default false: Netty's
 * request header validation off, the fastest way; true measures the ceiling with it on, as herald runs).
 * Prints {@code READY <port>} on stdout once bound.
 */
public final class RawNettyServer implements AutoCloseable {
  private final EventLoopGroup group;
  private final Channel channel;

  private RawNettyServer(EventLoopGroup group, Channel channel) {
    this.group = group;
    this.channel = channel;
  }

  /** Binds a server on {@code host:port} with {@code threads} event loops; {@code transport} is auto, epoll or nio. */
  public static RawNettyServer start(String host, int port, int threads, String transport)
      throws InterruptedException {
    return start(host, port, threads, transport, false);
  }

  /** As {@link #start(String, int, int, String)}, with Netty's request header validation on or off. */
  public static RawNettyServer start(String host, int port, int threads, String transport,
      boolean validateHeaders) throws InterruptedException {
    boolean epoll = switch (transport) {
      case "epoll" -> {
        Epoll.ensureAvailability();
        yield true;
      }
      case "nio" -> false;
      case "auto" -> Epoll.isAvailable();
      default -> throw new IllegalArgumentException("--transport must be auto, epoll or nio, not " + transport);
    };
    IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
    Class<? extends ServerChannel> channelClass =
        epoll ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(threads, io);
    HttpDate.startRefresh(group);
    HttpDecoderConfig decoder = new HttpDecoderConfig()
        .setMaxInitialLineLength(4096)
        .setMaxHeaderSize(8192)
        .setHeadersFactory(DefaultHttpHeadersFactory.headersFactory().withValidation(validateHeaders));
    try {
      Channel ch = new ServerBootstrap()
          .group(group)
          .channel(channelClass)
          .option(ChannelOption.SO_BACKLOG, 8192)
          .option(ChannelOption.SO_REUSEADDR, true)
          .childOption(ChannelOption.TCP_NODELAY, true)
          .childHandler(new ChannelInitializer<SocketChannel>() {
            @Override
            protected void initChannel(SocketChannel c) {
              c.pipeline().addLast(new HttpRequestDecoder(decoder), new HelloHandler());
            }
          })
          .bind(new InetSocketAddress(host, port)).sync().channel();
      return new RawNettyServer(group, ch);
    } catch (RuntimeException | InterruptedException e) {
      group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS);
      throw e;
    }
  }

  /** The bound port. */
  public int port() {
    return ((InetSocketAddress) channel.localAddress()).getPort();
  }

  @Override
  public void close() {
    channel.close().awaitUninterruptibly();
    group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
  }

  /** Runs the server until the JVM is stopped; see the class comment for the arguments. */
  public static void main(String[] args) throws Exception {
    int port = 8080;
    String host = "127.0.0.1";
    int threads = Runtime.getRuntime().availableProcessors();
    String transport = "auto";
    boolean validateHeaders = false;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException("missing value after " + a);
      }
      String v = args[++i];
      switch (a) {
        case "--port" -> port = Integer.parseInt(v);
        case "--host" -> host = v;
        case "--threads" -> threads = Integer.parseInt(v);
        case "--transport" -> transport = v;
        case "--validate-headers" -> validateHeaders = Boolean.parseBoolean(v);
        default -> throw new IllegalArgumentException("unknown argument " + a
            + " (expected --port N, --host H, --threads N, --transport auto|epoll|nio, --validate-headers B)");
      }
    }
    RawNettyServer server = start(host, port, threads, transport, validateHeaders);
    Runtime.getRuntime().addShutdownHook(new Thread(server::close, "raw-netty-shutdown"));
    System.out.println("READY " + server.port());
    System.out.flush();
    server.channel.closeFuture().sync();
  }
}
