package herald.http.server;

import herald.http.config.ServerConfig;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import java.io.IOException;

/**
 * Assembles the request being received on one connection (or HTTP/2 stream) into an {@link Exchange} (event loop
 * only). A body of at most {@link StreamedBody#BUFFERED_LIMIT} bytes is collected whole before the exchange is
 * queued, as the common small request needs; a larger one (declared, or chunked and grown past the limit) is
 * streamed: the exchange is queued at once with a {@link StreamedBody} that the handler reads as the data
 * arrives. {@code :max-body-bytes} is enforced on both, a declared length before any byte is collected.
 */
final class RequestReceiver {
    private final HttpConnection conn;
    private final ServerConfig config;
    private final Http1Decoder decoder;
    /** The head of the request being received; null between requests. */
    HttpRequest head;
    private boolean headKeepAlive;
    private BodyBuffer body;
    /** The body being streamed to a handler already queued ({@link #streamedEx}), or null. */
    private StreamedBody streamed;
    private Exchange streamedEx;

    RequestReceiver(HttpConnection conn, ServerConfig config, Http1Decoder decoder) {
        this.conn = conn;
        this.config = config;
        this.decoder = decoder;
    }

    void onHead(HttpRequest r) {
        Http1Request h1 = r instanceof Http1Request h ? h : null;
        int status = h1 != null ? h1.status : RequestDecoder.headStatus(r, config.maxBodyBytes);
        if (status > 100) {
            conn.reject(r, Refusal.of(r.decoderResult().cause(), status));
            return;
        } else if (status == 100) {
            conn.output.writeContinue();
        }
        if (h1 != null ? h1.absolute : r.uri().charAt(0) != '/') {
            RequestHead.useTargetHost(r);
        }
        if (conn.reserveOnly && !healthProbe(r)) {
            conn.reject(r, Refusal.TOO_MANY_CONNECTIONS);
            return;
        }
        head = r;
        headKeepAlive = (h1 != null ? h1.keepAlive
            : KeepAlive.of(r.protocolVersion(), r.headers().get(HttpHeaderNames.CONNECTION))) && !conn.reserveOnly;
        if (r instanceof io.netty.handler.codec.http.FullHttpRequest) {
            return; // no body follows (the common GET): no Content-Length lookup, which would build the headers
        }
        long length = HttpUtil.getContentLength(r, -1L);
        if (length > StreamedBody.BUFFERED_LIMIT && length <= config.maxBodyBytes) {
            stream(null); // the handler starts now and reads the body as it comes
        }
    }

    /** A request a reserve connection answers: GET or HEAD of one of {@code :health-paths}. */
    private boolean healthProbe(HttpRequest r) {
        String uri = r.uri();
        int q = uri.indexOf('?');
        String path = q < 0 ? uri : uri.substring(0, q);
        if (path.startsWith("http://") || path.startsWith("https://")) {
            int slash = path.indexOf('/', path.indexOf("//") + 2);
            path = slash < 0 ? "/" : path.substring(slash);
        }
        return (r.method() == io.netty.handler.codec.http.HttpMethod.GET
            || r.method() == io.netty.handler.codec.http.HttpMethod.HEAD) && config.healthPaths.contains(path);
    }

    /**
     * First body bytes ({@code first} of them) of a buffered request: check the declared length once, then collect
     * into a buffer of that length; a chunked body's starts at its first chunk's size and grows by doubling (a
     * fixed 1 KiB start was most of a small chunked request's allocation).
     */
    private boolean startBody(int first) {
        long length = HttpUtil.getContentLength(head, -1L);
        if (length > config.maxBodyBytes) {
            return false;
        }
        body = new BodyBuffer(length > 0 ? (int) length : first);
        return true;
    }

    void onContent(HttpContent c) {
        if (head == null) {
            return;
        }
        if (c.decoderResult().isFailure()) {
            Throwable cause = c.decoderResult().cause();
            refuse(Refusal.of(cause, RequestDecoder.statusOf(cause)));
            return;
        }
        int n = c.content().readableBytes();
        if (n > 0) {
            if (streamed != null) {
                if (streamed.received() + (long) n > config.maxBodyBytes) {
                    refuse(Refusal.BODY_TOO_LARGE);
                    return;
                }
                if (streamed.offer(c.content())) {
                    conn.pauseBodyReading();
                }
            } else {
                if (body == null && !startBody(n) || body.size() + (long) n > config.maxBodyBytes) {
                    refuse(Refusal.BODY_TOO_LARGE);
                    return;
                }
                body.append(c.content());
                if (body.size() > StreamedBody.BUFFERED_LIMIT && !(c instanceof LastHttpContent)) {
                    stream(body);
                }
            }
        }
        if (c instanceof LastHttpContent) {
            if (streamed != null) {
                streamed.end();
                done();
                return;
            }
            Exchange ex = new Exchange(conn, head, body == null ? null : body.toInputStream(), headKeepAlive, 0);
            done();
            conn.exchanges.enqueue(ex);
        }
    }

    private void stream(BodyBuffer start) {
        streamed = new StreamedBody(conn, start, config.requestTimeoutMs);
        streamedEx = new Exchange(conn, head, streamed, headKeepAlive, 0);
        streamedEx.streamed = streamed;
        body = null;
        conn.exchanges.enqueue(streamedEx);
    }

    private void done() {
        head = null;
        body = null;
        streamed = null;
        streamedEx = null;
        if (decoder != null) {
            decoder.partialSince = 0;
        }
    }

    /** The request cannot be received: answered {@code why} in order (a streamed one fails its body), then closed. */
    private void refuse(Refusal why) {
        if (streamed != null) {
            Exchange ex = streamedEx;
            streamed.fail(new IOException("request body refused: " + why.status + " " + why.message));
            done();
            conn.refuseStreamed(ex, why);
        } else {
            conn.reject(head, why);
        }
    }

    /** The input ended (FIN) or the connection closed: a request being received can never complete. */
    void abandon(String why) {
        if (streamed != null) {
            streamed.fail(new IOException(why));
        }
        done();
    }
}
