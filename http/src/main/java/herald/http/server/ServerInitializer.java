package herald.http.server;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.stream.ChunkedWriteHandler;
import java.nio.charset.StandardCharsets;

/** Sets up each accepted channel: connection limit, TLS when configured, decoder with limits, the HTTP connection handler. */
final class ServerInitializer extends ChannelInitializer<SocketChannel> {
    static final String DECODER = "herald-http-decoder";
    static final String HANDLER = "herald-http";
    static final String TLS = "herald-tls";
    static final String CHUNKED = "herald-chunked";
    private static final byte[] BUSY = ("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
        + "Content-Length: 19\r\nRetry-After: 1\r\nConnection: close\r\n\r\nService Unavailable")
        .getBytes(StandardCharsets.US_ASCII);

    private final ServerContext server;
    private final HttpDecoderConfig decoderConfig;

    ServerInitializer(ServerContext server) {
        this.server = server;
        this.decoderConfig = new HttpDecoderConfig()
            .setMaxInitialLineLength(server.config.maxRequestLineBytes)
            .setMaxHeaderSize(server.config.maxHeaderBytes)
            .setMaxChunkSize(65536)
            // names fully validated; values only for NUL and CR (RFC 9110 5.5), which is far cheaper than a
            // per-character check and leaves the other control characters as sent
            .setHeadersFactory(DefaultHttpHeadersFactory.headersFactory()
                .withValueValidator(HeaderValueValidator.INSTANCE));
    }

    @Override
    protected void initChannel(SocketChannel ch) {
        if (server.draining) {
            ch.close();
            return;
        }
        if (server.connections.incrementAndGet() > server.config.maxConnections) {
            server.connections.decrementAndGet();
            if (server.config.sslContext != null) {
                ch.close(); // a plaintext 503 means nothing to a TLS client
            } else {
                ch.writeAndFlush(Unpooled.wrappedBuffer(BUSY)).addListener(ChannelFutureListener.CLOSE);
            }
            return;
        }
        ch.closeFuture().addListener(f -> server.connections.decrementAndGet());
        server.channels.add(ch);
        if (server.config.sslContext != null) {
            // TLS first; ChunkedWriteHandler streams File bodies (SslHandler cannot take a FileRegion)
            ch.pipeline().addLast(TLS, server.config.sslContext.newHandler(ch.alloc()))
                .addLast(CHUNKED, new ChunkedWriteHandler());
        }
        RequestDecoder decoder = new RequestDecoder(decoderConfig);
        ch.pipeline().addLast(DECODER, decoder).addLast(HANDLER, new HttpConnection(server, decoder));
    }
}
