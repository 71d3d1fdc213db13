package herald.http.server;

import static herald.http.server.RingKeys.*;

import clojure.lang.ILookup;
import clojure.lang.RT;
import herald.http.exception.InvalidResponseException;
import io.netty.handler.codec.http.HttpVersion;
import java.util.Arrays;
import java.util.Map;

/**
 * The answers the server makes itself ({@link Refusal}): a request refused before its handler, a 503, a 500 for a
 * failed handler. Each is counted in the server's stats and written as the {@code :error-response} function's
 * response when there is one (and it gives a valid one), else as a short plain-text body naming the reason.
 */
final class ServerAnswers {
    private static final byte[] TEXT_PLAIN = ResponseWriter.ascii("Content-Type: text/plain; charset=utf-8\r\n");
    private static final byte[] RETRY_AFTER = ResponseWriter.ascii("Retry-After: 1\r\n");
    private static final byte[] WS_VERSION = ResponseWriter.ascii("Sec-WebSocket-Version: 13\r\n");

    private ServerAnswers() {}

    /**
     * An answer the server makes itself (counted in {@link HandlerStats#errors}): the {@code :error-response}
     * function's response when there is one and it gives a valid one, else a short plain-text body naming the
     * reason ({@link Refusal#body}). Rejected requests close the connection.
     */
    static void write(HttpConnection c, Exchange ex, Refusal why) {
        ServerContext server = c.server;
        server.stats.error(why.status);
        if (ex.reject != 0) {
            ex.keepAlive = false;
        }
        if (server.hooks.errorResponse != null && writeCustom(c, ex, why)) {
            return;
        }
        int status = why.status;
        ex.status = status;
        ex.bytes = ex.head ? 0 : why.body.length;
        ResponseSink sink = ResponseWriter.sink(ex);
        HeadBuffer h = c.output.loop().head.reset();
        sink.start(h, status);
        if (server.serverLine != null) {
            h.put(server.serverLine);
        }
        h.put(HttpDate.line());
        h.put(TEXT_PLAIN);
        if (status == 503) {
            h.put(RETRY_AFTER);
        } else if (status == 426) {
            h.put(WS_VERSION); // the only 426 herald writes: a WebSocket version it does not speak
        }
        boolean http10 = ex.request != null && ex.request.version() == HttpVersion.HTTP_1_0;
        sink.fixed(c, ex, h, status, why.body.length, ex.head ? null : why.body, http10);
        c.exchanges.finished(ex);
    }

    /** Writes the {@code :error-response} function's answer for {@code why}; false (nothing written) when it has none. */
    private static boolean writeCustom(HttpConnection c, Exchange ex, Refusal why) {
        Object resp = customResponse(c.server, why, ex.ringRequest);
        if (resp == null) {
            return false;
        }
        ResponseSink sink = ResponseWriter.sink(ex);
        int mark = sink.mark(c);
        try {
            ResponseWriter.encode(c, ex, resp, sink);
            return true;
        } catch (Throwable t) {
            sink.rollback(c, mark);
            c.server.logError(t, ex.ringRequest);
            return false;
        }
    }

    /**
     * The {@code :error-response} function's Ring response for {@code why}, or null (the default answer then)
     * when it throws or returns something that is not a response map (a WebSocket listener included); those
     * failures go to the error logger.
     */
    static Object customResponse(ServerContext server, Refusal why, Object ringRequest) {
        Object resp;
        try {
            resp = server.hooks.errorResponse.invoke(why.code, why.info);
        } catch (Throwable t) {
            server.logError(t, ringRequest);
            return null;
        }
        if (!(resp instanceof ILookup || resp instanceof Map) || RT.get(resp, WS_LISTENER) != null) {
            server.logError(new InvalidResponseException(":error-response returned " + ResponseWriter.describe(resp)
                + " for " + why.status + ", not a Ring response map"), ringRequest);
            return null;
        }
        return resp;
    }

    /** A server-made answer outside any exchange: status, header lines (no Content-Length, no Connection), body. */
    record Answer(int status, HeadBuffer lines, byte[] body) {}

    /**
     * The answer for {@code why} where there is no exchange to write it with (a connection refused at accept, an
     * HTTP/2 stream refused before its handler): the {@code :error-response} function's response when it has a
     * String, byte[] or nil body, else the default (event loop).
     */
    static Answer answer(ServerContext server, Refusal why) {
        int status = why.status;
        byte[] body = why.body;
        HeaderScan scan = null;
        Object resp = server.hooks.errorResponse == null ? null : customResponse(server, why, null);
        if (resp != null) {
            try {
                Object b = RT.get(resp, BODY);
                int s = ResponseWriter.status(RT.get(resp, STATUS));
                HeaderScan hs = HeaderScan.of(RT.get(resp, HEADERS), LoopState.get());
                if (!(b == null || b instanceof String || b instanceof byte[])) {
                    throw new InvalidResponseException(":error-response body for " + why.status + " here must be a "
                        + "String, byte[] or nil, got " + ResponseWriter.describe(b));
                }
                body = b instanceof String str ? str.getBytes(hs.charset) : b == null ? new byte[0] : (byte[]) b;
                status = s;
                scan = hs;
            } catch (Throwable t) {
                server.logError(t, null);
            }
        }
        HeadBuffer h = new HeadBuffer();
        if (scan != null) {
            h.put(scan.bytes, 0, scan.size);
        } else {
            h.put(TEXT_PLAIN);
            if (status == 503) {
                h.put(RETRY_AFTER);
            }
        }
        if (server.serverLine != null && (scan == null || !scan.server)) {
            h.put(server.serverLine);
        }
        if (scan == null || !scan.date) {
            h.put(HttpDate.line());
        }
        if (!StatusLines.bodiless(status)) {
            h.put(ResponseWriter.CONTENT_LENGTH);
            h.putLong(body.length);
            h.crlf();
        } else {
            body = new byte[0];
        }
        return new Answer(status, h, body);
    }

    /** The whole HTTP/1.1 answer for {@code why}, then {@code Connection: close} (see {@link #answer}). */
    static byte[] standalone(ServerContext server, Refusal why) {
        Answer a = answer(server, why);
        HeadBuffer h = new HeadBuffer();
        h.put(StatusLines.of(a.status()));
        h.put(a.lines().bytes, 0, a.lines().size);
        h.put(ResponseWriter.CLOSE);
        h.crlf();
        h.put(a.body());
        return Arrays.copyOf(h.bytes, h.size);
    }
}
