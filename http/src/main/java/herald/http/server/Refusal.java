package herald.http.server;

import clojure.lang.IPersistentMap;
import clojure.lang.Keyword;
import clojure.lang.PersistentArrayMap;
import java.nio.charset.StandardCharsets;

/**
 * Why the server answered a request itself instead of its handler: the status and a short reason, as a keyword
 * (the {@code :reason} of the info map an {@code :error-response} function gets) and as a sentence (its
 * {@code :message}, and the default answer's body after the reason phrase: {@code "Bad Request: the
 * request-target holds a raw non-ASCII byte ..."}). The info map and the default body are built once per
 * constant: an error answer allocates nothing for them.
 */
public enum Refusal {
    // ---- 400: a malformed request ----
    BAD_REQUEST(400, "bad-request", "the request is malformed"),
    BAD_REQUEST_LINE(400, "bad-request-line",
        "the request line is not METHOD SP request-target SP HTTP-version CRLF, with one space between parts"),
    NON_ASCII_TARGET(400, "non-ascii-target",
        "the request-target holds a raw non-ASCII byte: percent-encode it as UTF-8 (/caf%C3%A9, not /caf\u00e9)"),
    CONTROL_IN_TARGET(400, "control-in-target", "the request-target holds a control character"),
    FRAGMENT_IN_TARGET(400, "fragment-in-target", "the request-target holds '#' (a fragment is never sent)"),
    BAD_TARGET_FORM(400, "bad-target-form",
        "the request-target is not /path, http(s)://host/path, or * with OPTIONS"),
    BAD_VERSION(400, "bad-version", "the version is not HTTP/1.0 or HTTP/1.1 (upper case)"),
    BARE_LINE_END(400, "bare-line-end", "a line of the request head does not end with CRLF"),
    BAD_HEADER_LINE(400, "bad-header-line",
        "a header line is not name: value (a token name, no whitespace before ':', no folded lines)"),
    BAD_HEADER_VALUE(400, "bad-header-value", "a header value holds NUL or CR"),
    MISSING_HOST(400, "missing-host", "an HTTP/1.1 request needs a Host header"),
    DUPLICATE_HOST(400, "duplicate-host", "the request has more than one Host header"),
    BAD_HOST(400, "bad-host", "the Host header is not host[:port]"),
    BAD_CONTENT_LENGTH(400, "bad-content-length", "Content-Length is not a number, or its values differ"),
    AMBIGUOUS_FRAMING(400, "ambiguous-framing",
        "Transfer-Encoding with Content-Length, on HTTP/1.0, empty or not a token, or with chunked not last or "
            + "twice: the body cannot be framed safely"),
    BAD_CHUNK(400, "bad-chunk", "the chunked body is malformed (a chunk-size line, or no CRLF after chunk data)"),
    BAD_TRAILER(400, "bad-trailer", "a trailer field of the chunked body is malformed"),
    WEBSOCKET_NOT_UPGRADE(400, "websocket-not-upgrade", "the request is not a valid WebSocket upgrade"),
    WEBSOCKET_OVER_HTTP2(400, "websocket-over-http2", "WebSockets are not offered over HTTP/2"),
    // ---- other 4xx ----
    REQUEST_TIMEOUT(408, "request-timeout", "the request was not received in time"),
    BODY_TOO_LARGE(413, "body-too-large", "the request body is larger than the server accepts"),
    REQUEST_LINE_TOO_LONG(414, "request-line-too-long", "the request line is longer than the server accepts"),
    EXPECTATION_FAILED(417, "unsupported-expectation", "the only expectation supported is 100-continue"),
    WEBSOCKET_VERSION(426, "websocket-version", "the only WebSocket version spoken is 13"),
    HEADERS_TOO_LARGE(431, "headers-too-large", "the request's header fields are larger than the server accepts"),
    TRAILERS_TOO_LARGE(431, "trailers-too-large", "the chunked body's trailer fields are larger than the server accepts"),
    // ---- 5xx ----
    HANDLER_FAILED(500, "handler-failed", "the handler failed"),
    INVALID_RESPONSE(500, "invalid-response", "the handler's response could not be written"),
    NOT_IMPLEMENTED(501, "not-implemented", "the request uses a feature the server does not implement"),
    LOWERCASE_METHOD(501, "lowercase-method", "methods are case-sensitive: GET, not get"),
    CONNECT_METHOD(501, "connect-method", "CONNECT is not served (this is not a proxy)"),
    UNSUPPORTED_CODING(501, "unsupported-transfer-coding", "the only transfer coding accepted is chunked"),
    TOO_MANY_PENDING(503, "too-many-pending", "too many requests in progress; retry"),
    TOO_MANY_CONNECTIONS(503, "too-many-connections", "too many connections; retry"),
    TOO_MANY_FROM_ADDRESS(503, "too-many-connections-from-address", "too many connections from your address; retry"),
    STOPPING(503, "stopping", "the server is stopping"),
    VERSION_NOT_SUPPORTED(505, "version-not-supported", "the server speaks HTTP/1.0, HTTP/1.1 and HTTP/2 only");

    /** The status answered. */
    public final int status;
    /** The status as a Long: the first argument of an {@code :error-response} function. */
    final Object code;
    /** The reason as a keyword, e.g. {@code :non-ascii-target}. */
    public final Keyword reason;
    /** The reason as a short sentence for people. */
    public final String message;
    /** {@code {:reason ... :message ...}}: the second argument of an {@code :error-response} function. */
    public final IPersistentMap info;
    /** The default answer's body: the reason phrase, ": ", the message (UTF-8; shared, never modify). */
    final byte[] body;

    Refusal(int status, String reason, String message) {
        this.status = status;
        this.code = Long.valueOf(status);
        this.reason = Keyword.intern(reason);
        this.message = message;
        this.info = PersistentArrayMap.createAsIfByAssoc(
            new Object[] {Keyword.intern("reason"), this.reason, Keyword.intern("message"), message});
        this.body = (StatusLines.reason(status) + ": " + message).getBytes(StandardCharsets.UTF_8);
    }

    /** The generic refusal for {@code status} (a decoder failure that named no reason). */
    static Refusal of(int status) {
        return switch (status) {
            case 408 -> REQUEST_TIMEOUT;
            case 413 -> BODY_TOO_LARGE;
            case 414 -> REQUEST_LINE_TOO_LONG;
            case 417 -> EXPECTATION_FAILED;
            case 431 -> HEADERS_TOO_LARGE;
            case 501 -> NOT_IMPLEMENTED;
            case 503 -> TOO_MANY_PENDING;
            case 505 -> VERSION_NOT_SUPPORTED;
            default -> BAD_REQUEST;
        };
    }

    /** The refusal a decoder failure carries ({@link RefusalException}), else the generic one of {@code status}. */
    static Refusal of(Throwable cause, int status) {
        return cause instanceof RefusalException e && e.refusal != null ? e.refusal : of(status);
    }
}
