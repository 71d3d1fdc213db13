package herald.http.server;

import herald.http.config.ServerConfig;
import herald.http.http1.Http1Decoder;
import herald.http.http2.AlpnSwitch;
import herald.http.http2.Http2Host;
import herald.http.http2.PrefaceDetector;
import herald.http.http2.UpgradeWatcher;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http2.Http2ConnectionEncoder;
import io.netty.handler.codec.http2.Http2Exception;
import io.netty.handler.stream.ChunkedWriteHandler;
import herald.http.http2.ResponseHeaders;

/**
 * Sets up each accepted channel (TCP or Unix domain socket): connection limit, TLS when configured, then HTTP/1.1 (herald's decoder with limits, the
 * HTTP connection handler) or, with {@code http2} on, whatever the client chose: ALPN on TLS, the h2c preface or
 * {@code Upgrade: h2c} on plaintext. It is also the {@link Http2Host} the HTTP/2 handlers build streams with: each
 * stream gets its own {@link HttpConnection}, so limits, handler modes and response rules are shared.
 */
final class ServerInitializer extends ChannelInitializer<Channel> implements Http2Host {
    static final String DECODER = "herald-http-decoder";
    static final String HANDLER = "herald-http";
    static final String TLS = "herald-tls";
    static final String CHUNKED = "herald-chunked";
    static final String UPGRADE = "herald-h2c-upgrade";

    private final ServerContext server;

    ServerInitializer(ServerContext server) {
        this.server = server;
    }

    @Override
    protected void initChannel(Channel ch) {
        if (server.draining) {
            ch.close();
            return;
        }
        int open = server.connections.incrementAndGet();
        if (open > server.config.maxConnections + server.config.reservedConnections) {
            server.connections.decrementAndGet();
            server.stats.error(503);
            if (server.config.sslContext != null) {
                ch.close(); // a plaintext 503 means nothing to a TLS client
            } else {
                ch.writeAndFlush(Unpooled.wrappedBuffer(ServerAnswers.standalone(server, Refusal.TOO_MANY_CONNECTIONS)))
                    .addListener(ChannelFutureListener.CLOSE);
            }
            return;
        }
        // a Unix domain socket peer has no address: the per-address limit does not apply to it
        java.net.InetAddress from = ch.remoteAddress() instanceof java.net.InetSocketAddress isa ? isa.getAddress() : null;
        if (from != null && !server.acquire(from)) {
            server.connections.decrementAndGet();
            server.stats.error(503);
            if (server.config.sslContext != null) {
                ch.close();
            } else {
                ch.writeAndFlush(Unpooled.wrappedBuffer(ServerAnswers.standalone(server, Refusal.TOO_MANY_FROM_ADDRESS)))
                    .addListener(ChannelFutureListener.CLOSE);
            }
            return;
        }
        ch.closeFuture().addListener(f -> {
            server.connections.decrementAndGet();
            if (from != null) {
                server.release(from);
            }
        });
        if (open > server.config.maxConnections) {
            ch.attr(HttpConnection.RESERVE).set(Boolean.TRUE); // answers health probes only
        }
        server.channels.add(ch);
        ChannelPipeline p = ch.pipeline();
        if (server.config.sslContext != null) {
            if (server.config.http2) {
                // the protocol is known once the handshake is done: AlpnSwitch then adds HTTP/2 or HTTP/1.1
                p.addLast(TLS, AlpnSwitch.tlsHandler(server.config.sslContext, ch.alloc()))
                    .addLast("herald-alpn", new AlpnSwitch(this));
                return;
            }
            p.addLast(TLS, server.config.sslContext.newHandler(ch.alloc()));
        } else if (server.config.http2) {
            p.addLast("herald-h2c-preface", new PrefaceDetector(this));
            return;
        }
        addHttp1(p, false);
    }

    @Override
    public ServerConfig config() {
        return server.config;
    }

    @Override
    public void addHttp1(ChannelPipeline p, boolean watchUpgrade) {
        if (p.get(TLS) != null) {
            p.addLast(CHUNKED, new ChunkedWriteHandler()); // File bodies: SslHandler cannot take a FileRegion
        }
        Http1Decoder decoder = new Http1Decoder(server.config);
        p.addLast(DECODER, decoder);
        if (watchUpgrade) {
            p.addLast(UPGRADE, new UpgradeWatcher(this, DECODER));
        }
        p.addLast(HANDLER, new HttpConnection(server, decoder));
    }

    @Override
    public void removeHttp1(ChannelPipeline p) {
        HttpConnection c = (HttpConnection) p.get(HANDLER);
        c.end.upgraded(null);
        p.remove(c);
    }

    @Override
    public Object connectionFacts(Channel parent) {
        return ConnectionInfo.of(parent, server.serverPort, server.config.proxy);
    }

    @Override
    public void writeRefusal(ChannelHandlerContext ctx, Http2ConnectionEncoder encoder, int streamId, Refusal why) {
        server.stats.error(why.status);
        ServerAnswers.Answer a = ServerAnswers.answer(server, why);
        boolean empty = a.body().length == 0;
        encoder.writeHeaders(ctx, streamId, ResponseHeaders.of(a.status(), a.lines().bytes, a.lines().size), 0, empty,
            ctx.newPromise());
        if (!empty) {
            encoder.writeData(ctx, streamId, Unpooled.wrappedBuffer(a.body()), 0, true, ctx.newPromise());
        }
        try {
            encoder.flowController().writePendingBytes(); // before the reset that follows, which would drop the body
        } catch (Http2Exception e) {
            // the stream ends with the reset; the status is out
        }
    }

    @Override
    public void addStreamHandler(ChannelPipeline stream, Object facts) {
        HttpConnection c = new HttpConnection(server, null);
        stream.addLast(HANDLER, c);
        c.info = (ConnectionInfo) facts; // the parent's addresses and TLS session, not the stream's
    }
}
