package herald.http.http2;

import herald.http.config.ServerConfig;
import herald.http.server.Refusal;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.handler.codec.http2.Http2ConnectionEncoder;

/** What the HTTP/2 pipeline needs from the server that owns the channel (implemented by the server package). */
public interface Http2Host {
    /** The server's configuration. */
    ServerConfig config();

    /** Adds the HTTP/1.1 handlers at the end of {@code p}; with {@code watchUpgrade}, also the h2c upgrade watcher. */
    void addHttp1(ChannelPipeline p, boolean watchUpgrade);

    /** Stops and removes the HTTP/1.1 exchange handler of {@code p} (an h2c upgrade replaces it). */
    void removeHttp1(ChannelPipeline p);

    /** The per-connection facts (addresses, TLS session) of an HTTP/2 connection, shared by its streams. */
    Object connectionFacts(Channel parent);

    /** Adds the exchange handler to a new stream's pipeline, after its {@link StreamAdapter}. */
    void addStreamHandler(ChannelPipeline stream, Object facts);

    /**
     * Writes the server's own answer for {@code why} on stream {@code streamId}, refused before it had an exchange
     * handler (a header list over the limit): HEADERS and the body as DATA, through the {@code :error-response}
     * function when there is one; counted in the server's stats.
     */
    void writeRefusal(ChannelHandlerContext ctx, Http2ConnectionEncoder encoder, int streamId, Refusal why);
}
