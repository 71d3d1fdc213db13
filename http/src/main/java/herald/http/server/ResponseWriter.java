package herald.http.server;

import static herald.http.server.RingKeys.*;

import clojure.lang.ILookup;
import clojure.lang.ISeq;
import clojure.lang.RT;
import herald.http.exception.InvalidResponseException;
import herald.http.websocket.WebSocketUpgrade;
import io.netty.buffer.ByteBuf;
import io.netty.channel.DefaultFileRegion;
import io.netty.handler.stream.ChunkedFile;
import io.netty.handler.codec.http.HttpVersion;
import java.io.File;
import java.io.InputStream;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/** Writes a Ring response: fixed bodies in one buffer, files zero-copy, streams chunked off the event loop. */
final class ResponseWriter {
    private static final byte[] CONTENT_LENGTH = ascii("Content-Length: ");
    private static final byte[] CHUNKED = ascii("Transfer-Encoding: chunked\r\n");
    private static final byte[] CLOSE = ascii("Connection: close\r\n");
    private static final byte[] KEEP_ALIVE = ascii("Connection: keep-alive\r\n");
    private static final byte[] TEXT_PLAIN = ascii("Content-Type: text/plain; charset=utf-8\r\n");
    private static final byte[] RETRY_AFTER = ascii("Retry-After: 1\r\n");

    private ResponseWriter() {}

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /** Writes the handler's answer (or a 500 when it failed or is not a valid response). */
    static void write(HttpConnection c, Exchange ex) {
        ServerContext server = c.server;
        Object resp = ex.response;
        if (ex.failure != null || !(resp instanceof ILookup || resp instanceof Map)) {
            Throwable t = ex.failure != null ? ex.failure
                : new InvalidResponseException("handler returned " + describe(resp) + ", not a Ring response map");
            server.logError(t, ex.ringRequest);
            writeError(c, ex, 500);
            return;
        }
        Object listener = RT.get(resp, WS_LISTENER);
        if (listener != null) {
            upgrade(c, ex, resp, listener);
            return;
        }
        ByteBuf buf = c.output.out();
        int mark = buf.writerIndex();
        try {
            encode(c, ex, resp, buf);
        } catch (Throwable t) {
            buf.writerIndex(mark);
            server.logError(t, ex.ringRequest);
            writeError(c, ex, 500);
        }
    }

    private static void upgrade(HttpConnection c, Exchange ex, Object resp, Object listener) {
        ServerContext server = c.server;
        c.output.flushNow();
        boolean ok;
        try {
            ok = WebSocketUpgrade.upgrade(c.ctx(), ex.request, resp, listener, server.hooks, server.config,
                server.blockingExecutor, server.channels);
        } catch (Throwable t) {
            server.logError(t, ex.ringRequest);
            writeError(c, ex, 500);
            return;
        }
        if (ok) {
            c.upgraded(ex);
        } else {
            writeError(c, ex, 400);
        }
    }

    private static String describe(Object o) {
        return o == null ? "nil" : o.getClass().getName();
    }

    private static void encode(HttpConnection c, Exchange ex, Object resp, ByteBuf buf) throws Exception {
        int status = status(RT.get(resp, STATUS));
        Object body = RT.get(resp, BODY);
        LoopState loop = LoopState.get();
        HeadBuffer h = loop.head.reset();
        h.put(StatusLines.of(status));
        HeaderScan scan = HeaderScan.write(h, RT.get(resp, HEADERS), loop.lastScan);
        loop.lastScan = scan;
        if (!scan.server && c.server.serverLine != null) {
            h.put(c.server.serverLine);
        }
        if (!scan.date) {
            h.put(HttpDate.line());
        }
        boolean bodiless = StatusLines.bodiless(status);
        boolean noBody = ex.head || bodiless;
        boolean http10 = ex.request.protocolVersion() == HttpVersion.HTTP_1_0;
        ex.keepAlive = ex.keepAlive && !scan.close;
        if (body instanceof String s) {
            byte[] b = s.getBytes(Charsets.of(scan.contentType));
            head(h, buf, ex, bodiless ? -1 : b.length, http10);
            if (!noBody) {
                buf.writeBytes(b);
            }
            c.finished(ex);
        } else if (body instanceof byte[] b) {
            head(h, buf, ex, bodiless ? -1 : b.length, http10);
            if (!noBody) {
                buf.writeBytes(b);
            }
            c.finished(ex);
        } else if (body == null) {
            if (scan.contentLength != null && (ex.head || status == 304)) {
                line(h, "Content-Length", scan.contentLength);
                head(h, buf, ex, -1, http10);
            } else {
                head(h, buf, ex, bodiless ? -1 : 0, http10);
            }
            c.finished(ex);
        } else if (body instanceof File f) {
            writeFile(c, ex, h, buf, f, bodiless, noBody, http10);
        } else if (body instanceof InputStream || body instanceof ISeq || c.server.hooks.bodyWriter != null
            && RT.booleanCast(c.server.hooks.bodyWriter.invoke(body))) {
            writeStream(c, ex, h, buf, resp, body, scan, noBody, http10);
        } else {
            throw new InvalidResponseException("unsupported response body type " + describe(body)
                + " (extend herald.http/StreamableResponseBody to it)");
        }
    }

    private static void writeFile(HttpConnection c, Exchange ex, HeadBuffer h, ByteBuf buf, File f,
                                  boolean bodiless, boolean noBody, boolean http10) {
        if (!f.isFile() || !f.canRead()) {
            throw new InvalidResponseException("response body file is not a readable file: " + f);
        }
        long len = f.length();
        head(h, buf, ex, bodiless ? -1 : len, http10);
        if (!noBody && len > 0) {
            c.output.write(c.info.tls != null ? chunkedFile(f, len) : new DefaultFileRegion(f, 0, len));
        }
        c.finished(ex);
    }

    /** A File body for a TLS connection (no zero-copy through the SslHandler): read in 16 KiB chunks. */
    private static ChunkedFile chunkedFile(File f, long len) {
        try {
            return new ChunkedFile(new java.io.RandomAccessFile(f, "r"), 0, len, 16384);
        } catch (java.io.IOException e) {
            throw new InvalidResponseException("response body file cannot be opened: " + f + ": " + e.getMessage());
        }
    }

    private static void writeStream(HttpConnection c, Exchange ex, HeadBuffer h, ByteBuf buf, Object resp,
                                    Object body, HeaderScan scan, boolean noBody, boolean http10) {
        if (noBody) {
            if (scan.contentLength != null) {
                line(h, "Content-Length", scan.contentLength);
            }
            head(h, buf, ex, -1, http10);
            discard(body);
            c.finished(ex);
            return;
        }
        boolean chunked = false;
        if (scan.contentLength != null) {
            line(h, "Content-Length", scan.contentLength);
        } else if (http10) {
            ex.keepAlive = false;
        } else {
            chunked = true;
            h.put(CHUNKED);
        }
        head(h, buf, ex, -1, http10);
        c.output.flushNow();
        Charset cs = Charsets.of(scan.contentType);
        c.server.blockingExecutor.execute(new BodyStreamer(c, ex, resp, body, chunked, cs));
    }

    /** Content-Length (when {@code length >= 0}), Connection, the blank line; then the head into {@code buf}. */
    private static void head(HeadBuffer h, ByteBuf buf, Exchange ex, long length, boolean http10) {
        if (length >= 0) {
            h.put(CONTENT_LENGTH);
            h.putLong(length);
            h.crlf();
        }
        if (!ex.keepAlive) {
            h.put(CLOSE);
        } else if (http10) {
            h.put(KEEP_ALIVE);
        }
        h.crlf();
        buf.writeBytes(h.bytes, 0, h.size);
    }

    static int status(Object s) {
        if (s == null) {
            return 200;
        }
        if (s instanceof Number n) {
            long v = n.longValue();
            if (v >= 100 && v <= 599 && v == n.doubleValue()) {
                return (int) v;
            }
        }
        throw new InvalidResponseException("response :status must be an integer 100-599, got " + s);
    }

    static void line(HeadBuffer h, String name, String value) {
        h.putAscii(name);
        h.putAscii(": ");
        h.putAscii(value);
        h.crlf();
    }

    /** A short plain-text error response; rejected requests close the connection. */
    static void writeError(HttpConnection c, Exchange ex, int status) {
        byte[] body = ascii(StatusLines.reason(status));
        if (ex.reject != 0) {
            ex.keepAlive = false;
        }
        ByteBuf buf = c.output.out();
        HeadBuffer h = LoopState.get().head.reset();
        h.put(StatusLines.of(status));
        if (c.server.serverLine != null) {
            h.put(c.server.serverLine);
        }
        h.put(HttpDate.line());
        h.put(TEXT_PLAIN);
        if (status == 503) {
            h.put(RETRY_AFTER);
        }
        boolean http10 = ex.request != null && ex.request.protocolVersion() == HttpVersion.HTTP_1_0;
        head(h, buf, ex, body.length, http10);
        if (!ex.head) {
            buf.writeBytes(body);
        }
        c.finished(ex);
    }

    /** Releases what an unwritten response holds (closes an InputStream body). */
    static void discard(Object response) {
        Object body = response instanceof ILookup || response instanceof Map ? RT.get(response, BODY) : response;
        if (body instanceof InputStream in) {
            try {
                in.close();
            } catch (Exception ignored) {
                // nothing to do: the client is gone
            }
        }
    }
}
