package herald.http.server;

import io.netty.buffer.ByteBuf;
import io.netty.handler.stream.ChunkedStream;
import java.io.ByteArrayInputStream;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;

/**
 * HTTP/1.1 responses whose body size is known up front (a String, a byte[] or nil), written straight into the
 * read batch's buffer. One per event loop ({@link LoopState}), so what it keeps stays hot in the CPU cache:
 * <ul>
 *   <li>the head of the last such response: while the status, the header scan (a constant header map, see
 *       {@link HeaderScan}), the Date line (one per second) and the Server line are the same objects, the next
 *       head is one copy, with Content-Length and Connection rendered again only when they change (and a kept
 *       String body, below, is kept after it: the same response again is one copy);</li>
 *   <li>the bytes of the last String body, by identity, once the same String came twice in a row (a handler's
 *       constant body); other Strings of up to {@link #SMALL} chars, when every char is in the charset's
 *       single-byte range (ASCII for UTF-8 and US-ASCII, Latin-1 for ISO-8859-1), are copied char by char into
 *       a scratch array, without allocating; any other String goes through {@link String#getBytes(Charset)}.</li>
 * </ul>
 * Every key is compared by identity to immutable objects, so nothing stale can be written: Strings and header
 * scans never change, a new second has a new Date line.
 */
final class FixedResponse {
    /** Strings up to this many chars are encoded without allocating, and may have their bytes kept. */
    static final int SMALL = 4096;
    private static final int NO_CONNECTION_LINE = 0;
    private static final int CLOSE = 1;
    private static final int KEEP_ALIVE = 2;

    // ---- the last head ----
    private final HeadBuffer head = new HeadBuffer();
    private HeaderScan scan;
    private int status;
    private byte[] date;
    private byte[] server;
    /** Where Content-Length starts in {@code head}. */
    private int prefix;
    private long length = Long.MIN_VALUE;
    private int connection = -1;
    /** Where the head ends in {@code head}, and the body bytes that follow it there (or null). */
    private int headEnd;
    private byte[] tail;

    // ---- the last String body ----
    private String seen;
    private String bodyString;
    private Charset bodyCharset;
    private byte[] bodyBytes;
    private final byte[] text = new byte[SMALL];

    /**
     * Writes the whole response: the head, then the body unless {@code noBody}. {@code body} is a String, a
     * byte[] or null; Content-Length is its encoded length (none when {@code bodiless}).
     */
    void write(HttpConnection c, Exchange ex, HeaderScan scan, int status, Object body, boolean bodiless,
               boolean noBody, boolean http10) {
        byte[] b;
        int n;
        if (body == null) {
            b = null;
            n = 0;
        } else if (body instanceof byte[] a) {
            b = a;
            n = a.length;
        } else {
            String s = (String) body;
            Charset cs = scan.charset;
            if (s == bodyString && cs == bodyCharset) {
                b = bodyBytes;
                n = b.length;
            } else if (s == seen) {
                b = s.getBytes(cs); // the same String twice in a row: keep its bytes
                n = b.length;
                bodyString = s;
                bodyCharset = cs;
                bodyBytes = b;
            } else {
                seen = s.length() <= SMALL ? s : null;
                n = singleBytes(s, cs, text);
                if (n >= 0) {
                    b = text;
                } else {
                    b = s.getBytes(cs);
                    n = b.length;
                }
            }
        }
        ex.bytes = noBody ? 0 : n;
        boolean kept = !noBody && b == bodyBytes && b != null;
        writeHead(c, ex, scan, status, bodiless ? -1 : n, http10, kept ? b : null);
        if (!kept && !noBody && n > 0) {
            if (n > ResponseWriter.LARGE_BODY) {
                // a whole copy into direct memory per queued response let slow readers exhaust it (QA Q23):
                // large bodies go out a chunk at a time, as the connection drains
                ResponseWriter.paced(c).write(new ChunkedStream(new ByteArrayInputStream(b, 0, n),
                    ResponseWriter.CHUNK));
            } else {
                c.output.out().writeBytes(b, 0, n);
            }
        }
    }

    /**
     * Copies {@code s} into {@code dst} a char per byte when every char is below the charset's single-byte limit
     * (then the bytes are exactly what {@code s.getBytes(cs)} gives); returns the length, or -1 when it does not
     * fit (too long, a char beyond the limit, or another charset).
     */
    static int singleBytes(String s, Charset cs, byte[] dst) {
        int n = s.length();
        int limit = cs == StandardCharsets.UTF_8 || cs == StandardCharsets.US_ASCII ? 0x80
            : cs == StandardCharsets.ISO_8859_1 ? 0x100 : 0;
        if (n > dst.length || limit == 0) {
            return -1;
        }
        for (int i = 0; i < n; i++) {
            char ch = s.charAt(i);
            if (ch >= limit) {
                return -1;
            }
            dst[i] = (byte) ch;
        }
        return n;
    }

    /**
     * The status line, the header lines, Server, Date, Content-Length (when {@code len >= 0}), Connection; then
     * {@code body} unless null (a kept String body's bytes, which never change: kept after the head too, so the
     * same response is one copy).
     */
    private void writeHead(HttpConnection c, Exchange ex, HeaderScan scan, int status, long len, boolean http10,
                           byte[] body) {
        byte[] d = scan.date ? null : HttpDate.line();
        byte[] sv = scan.server ? null : c.server.serverLine;
        HeadBuffer h = head;
        if (scan != this.scan || status != this.status || d != date || sv != server) {
            h.reset();
            h.put(StatusLines.of(status));
            h.put(scan.bytes, 0, scan.size);
            if (sv != null) {
                h.put(sv);
            }
            if (d != null) {
                h.put(d);
            }
            this.scan = scan;
            this.status = status;
            this.date = d;
            this.server = sv;
            prefix = h.size;
            length = Long.MIN_VALUE;
        }
        int conn = !ex.keepAlive ? CLOSE : http10 ? KEEP_ALIVE : NO_CONNECTION_LINE;
        if (len != length || conn != connection) {
            h.size = prefix;
            if (len >= 0) {
                h.put(ResponseWriter.CONTENT_LENGTH);
                h.putLong(len);
                h.crlf();
            }
            if (conn == CLOSE) {
                h.put(ResponseWriter.CLOSE);
            } else if (conn == KEEP_ALIVE) {
                h.put(ResponseWriter.KEEP_ALIVE);
            }
            h.crlf();
            length = len;
            connection = conn;
            headEnd = h.size;
            tail = null;
        }
        if (body != tail) {
            h.size = headEnd;
            if (body != null) {
                h.put(body);
            }
            tail = body;
        }
        c.output.out().writeBytes(h.bytes, 0, h.size);
    }
}
