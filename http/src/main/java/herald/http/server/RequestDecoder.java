package herald.http.server;

import herald.http.http2.Http2Request;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;

/**
 * The checks of a request head that did not come through {@link Http1Decoder} (an HTTP/2 stream's, converted to
 * an {@code HttpRequest}): HTTP/1.1 heads are checked while they are parsed ({@link Http1Parser}).
 */
final class RequestDecoder {
    private RequestDecoder() {}

    /** The status for a decoder failure: {@link Http1Exception}'s own, 414 (request line), 431 (headers), else 400. */
    static int statusOf(Throwable cause) {
        if (cause instanceof Http1Exception e) {
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
     * What to do with a decoded head: 0 to proceed, 100 to proceed after sending "100 Continue", else the status
     * to refuse it with (the decoder's failure, {@link #protocolRefusal}, {@link #expectStatus}); a refusal found
     * here is left in the head's decoder result, as an {@link Http1Exception}, for the answer.
     */
    static int headStatus(HttpRequest r, long maxBodyBytes) {
        if (r.decoderResult().isFailure()) {
            return statusOf(r.decoderResult().cause());
        }
        Refusal why = protocolRefusal(r);
        if (why == null) {
            int s = expectStatus(r, maxBodyBytes);
            if (s == 0 || s == 100) {
                return s;
            }
            why = s == 417 ? Refusal.EXPECTATION_FAILED : Refusal.BODY_TOO_LARGE;
        }
        r.setDecoderResult(DecoderResult.failure(new Http1Exception(why)));
        return why.status;
    }

    /**
     * Null when a decoded head may proceed, checked once per head: 505 for a version other than HTTP/1.x (RFC 9110
     * 15.6.6: an HTTP/2 preface or HTTP/9.9 never reaches the handler) and 400 for any other than exactly
     * {@code HTTP/1.0} or {@code HTTP/1.1} (or an HTTP/2 stream's; {@code http/1.1}: the HTTP-name is case-sensitive, RFC 9112 2.3);
     * 501 for CONNECT and for a method with a lower-case letter (methods are case-sensitive, RFC 9110 9.1, and Ring
     * lower-cases them); 400 for HTTP/1.1 without Host, for several Host fields or an invalid Host value (RFC 9112
     * 3.2); 400 for a request-target that is not origin-form, absolute-form ({@code http(s)://authority...}) or
     * {@code *} with OPTIONS, or that holds {@code #} (RFC 9112 3.2); 501 for a transfer coding other than chunked
     * (RFC 9112 6.1).
     */
    static Refusal protocolRefusal(HttpRequest r) {
        HttpVersion v = r.protocolVersion();
        if (v != HttpVersion.HTTP_1_1 && v != HttpVersion.HTTP_1_0 && v != Http2Request.VERSION) {
            return v.majorVersion() != 1 ? Refusal.VERSION_NOT_SUPPORTED : Refusal.BAD_VERSION;
        }
        Refusal refused = RequestHead.methodRefusal(r.method());
        if (refused == null) {
            refused = RequestHead.hostRefusal(r.headers(), v == HttpVersion.HTTP_1_1);
        }
        if (refused == null) {
            refused = RequestHead.targetRefusal(r.method(), r.uri());
        }
        return refused != null ? refused : RequestHead.codingRefusal(r.headers().get(HttpHeaderNames.TRANSFER_ENCODING));
    }

    /**
     * For {@code Expect} on HTTP/1.1: 100 to send "100 Continue" now, 417 for an expectation other than
     * 100-continue, 413 when the declared body is over {@code maxBodyBytes}; 0 without {@code Expect}.
     */
    static int expectStatus(HttpRequest r, long maxBodyBytes) {
        String expect = r.headers().get(HttpHeaderNames.EXPECT);
        if (expect == null || r.protocolVersion() != HttpVersion.HTTP_1_1) {
            return 0;
        }
        if (!expect.equalsIgnoreCase("100-continue")) {
            return 417;
        }
        return HttpUtil.getContentLength(r, -1L) > maxBodyBytes ? 413 : 100;
    }
}
