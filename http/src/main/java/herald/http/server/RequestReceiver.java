package herald.http.server;

import herald.http.config.ServerConfig;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
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
    private final HeadProgress decoder;
    /** The head of the request being received; null between requests. */
    RequestHead head;
    private boolean headKeepAlive;
    private BodyBuffer body;
    /** The body being streamed to a handler already queued ({@link #streamedEx}), or null. */
    private StreamedBody streamed;
    private Exchange streamedEx;

    RequestReceiver(HttpConnection conn, ServerConfig config, HeadProgress decoder) {
        this.conn = conn;
        this.config = config;
        this.decoder = decoder;
    }

    /** A head arrived: refused, or the request begins (a {@link RequestHead#full} one's end follows at once). */
    void onHead(RequestHead r) {
        if (r.refusal != null) {
            conn.reject(r, r.refusal);
            return;
        } else if (r.expectContinue) {
            conn.output.writeContinue();
        }
        if (conn.reserveOnly && !healthProbe(r)) {
            conn.reject(r, Refusal.TOO_MANY_CONNECTIONS);
            return;
        }
        head = r;
        headKeepAlive = r.keepAlive && !conn.reserveOnly;
        if (r.full) {
            return; // no body follows (the common GET): no Content-Length lookup, which would build the headers
        }
        long length = contentLength(r);
        if (length > StreamedBody.BUFFERED_LIMIT && length <= config.maxBodyBytes) {
            stream(null); // the handler starts now and reads the body as it comes
        }
    }

    /** A request a reserve connection answers: GET or HEAD of one of {@code :health-paths}. */
    private boolean healthProbe(RequestHead r) {
        return (r.method() == HttpMethod.GET || r.method() == HttpMethod.HEAD)
            && config.healthPaths.contains(r.path());
    }

    /** The declared Content-Length (checked by the codec), or -1. */
    private static long contentLength(RequestHead r) {
        String v = r.headers().get(HttpHeaderNames.CONTENT_LENGTH);
        return v == null ? -1L : Long.parseLong(v);
    }

    /** The status for a body's decoder failure: {@link RefusalException}'s own, 414, 431, else 400. */
    static int statusOf(Throwable cause) {
        if (cause instanceof RefusalException e) {
            return e.status;
        }
        if (cause instanceof TooLongHttpLineException) {
            return 414;
        }
        if (cause instanceof TooLongHttpHeaderException || cause instanceof TooLongFrameException) {
            return 431;
        }
        return 400;
    }

    /**
     * First body bytes ({@code first} of them) of a buffered request: check the declared length once, then collect
     * into a buffer of that length; a chunked body's starts at its first chunk's size and grows by doubling (a
     * fixed 1 KiB start was most of a small chunked request's allocation).
     */
    private boolean startBody(int first) {
        long length = contentLength(head);
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
            refuse(Refusal.of(cause, statusOf(cause)));
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
            decoder.requestDone();
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
