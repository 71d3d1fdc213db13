package herald.http.http1;

import static herald.http.http1.Http1Bytes.asciiEqualsIgnoreCase;
import static herald.http.http1.Http1Bytes.clean;
import static herald.http.http1.Http1Bytes.lengthOf;
import static herald.http.http1.Http1Names.TCHAR;

import herald.http.server.Refusal;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;

/**
 * The header lines of one HTTP/1.1 request head and the body framing they declare (RFC 9112 5, 6), for
 * {@link Http1Parser}: each line {@code token ":" OWS value OWS CRLF}, names lower-cased in place and interned when
 * known, values left as bounds in the head's bytes; Host, Connection, Expect, Content-Length and Transfer-Encoding
 * noted on the way. One per parser (per connection), reused head after head.
 */
final class HeaderLines {
    private static final int NONE = -1;

    /** The framing found by {@link #framing}: chunked; a 100-continue is expected. */
    boolean chunked;
    boolean continueExpected;

    /** Header k's name (lower-cased, interned when known) and its value's bounds {@code pos[2k], pos[2k + 1]}. */
    String[] names;
    int[] pos;
    /** The line index of the first Host, Connection and Expect header, or NONE. */
    int hostAt;
    int hosts;
    int connectionAt;
    int expectAt;
    /** Content-Length: its value (NONE: absent), or bad (not a number, or two different values). */
    long length;
    private boolean badLength;
    /** Transfer-Encoding: the fields, the codings listed, how many are chunked, whether the last one is. */
    private int teFields;
    private int codings;
    private int chunkeds;
    private boolean lastChunked;
    private boolean badCoding;

    /**
     * Step 2: the header lines (lines 1 to {@code lines - 2}; the last is the empty line): a refusal for a line
     * that is not {@code token ":" OWS value OWS CRLF}, else null with names, values and the framing headers noted.
     */
    Refusal scan(byte[] b, int[] ends, int lines) {
        int n = lines - 2;
        int last = ends[lines - 1];
        if (last - ends[lines - 2] != 2 || b[last - 1] != '\r') {
            return Refusal.BARE_LINE_END; // the head ended with a bare LF
        }
        names = new String[n];
        pos = new int[2 * n];
        hostAt = NONE;
        hosts = 0;
        connectionAt = NONE;
        expectAt = NONE;
        length = NONE;
        badLength = false;
        teFields = 0;
        codings = 0;
        chunkeds = 0;
        lastChunked = false;
        badCoding = false;
        for (int k = 0; k < n; k++) {
            Refusal r = headerLine(b, k, ends[k] + 1, ends[k + 1] - 1);
            if (r != null) {
                return r;
            }
        }
        return null;
    }

    /** Header line k, {@code b[s, e)} (e is its CR). */
    private Refusal headerLine(byte[] b, int k, int s, int e) {
        if (e <= s || b[e] != '\r') {
            return Refusal.BARE_LINE_END;
        }
        int j = s;
        int h = 0;
        while (j < e) {
            int c = b[j] & 0xff;
            if (!TCHAR[c]) {
                break;
            }
            if (c <= 'Z' && c >= 'A') {
                c += 32;
                b[j] = (byte) c;
            }
            h = 31 * h + c;
            j++;
        }
        if (j == s || b[j] != ':') {
            return Refusal.BAD_HEADER_LINE; // obs-fold, space before ':', a non-token name
        }
        String name = Http1Names.known(b, s, j, h);
        if (name == null) {
            name = new String(b, s, j - s, StandardCharsets.ISO_8859_1);
        }
        int vs = j + 1;
        while (vs < e && (b[vs] == ' ' || b[vs] == '\t')) {
            vs++;
        }
        int ve = e;
        while (ve > vs && (b[ve - 1] == ' ' || b[ve - 1] == '\t')) {
            ve--;
        }
        if (!clean(b, vs, ve)) {
            return Refusal.BAD_HEADER_VALUE; // NUL or CR in a value (RFC 9110 5.5)
        }
        names[k] = name;
        pos[2 * k] = vs;
        pos[2 * k + 1] = ve;
        if (name == Http1Names.HOST) {
            hosts++;
            hostAt = hostAt < 0 ? k : hostAt;
        } else if (name == Http1Names.CONTENT_LENGTH) {
            long v = lengthOf(b, vs, ve);
            badLength |= v < 0 || length >= 0 && v != length;
            length = v;
            if (v >= 0) {
                int d = vs;
                while (d < ve && b[d] >= '0' && b[d] <= '9') {
                    d++;
                }
                pos[2 * k + 1] = d; // "5, 5" is read as "5" (RFC 9110 8.6), by herald and by the handler
            }
        } else if (name == Http1Names.TRANSFER_ENCODING) {
            teFields++;
            transferCodings(b, vs, ve);
        } else if (name == Http1Names.CONNECTION) {
            connectionAt = k;
        } else if (name == Http1Names.EXPECT) {
            expectAt = k;
        }
        return null;
    }

    /** The comma-separated codings of a Transfer-Encoding value {@code b[vs, ve)}. */
    private void transferCodings(byte[] b, int vs, int ve) {
        for (int a = vs; a <= ve; ) {
            int z = a;
            while (z < ve && b[z] != ',') {
                z++;
            }
            int x = a;
            int y = z;
            while (x < y && (b[x] == ' ' || b[x] == '\t')) {
                x++;
            }
            while (y > x && (b[y - 1] == ' ' || b[y - 1] == '\t')) {
                y--;
            }
            if (y > x) {
                int t = x;
                while (t < y && TCHAR[b[t] & 0xff]) {
                    t++;
                }
                badCoding |= t == x || t < y && b[t] != ';' && b[t] != ' ' && b[t] != '\t';
                codings++;
                lastChunked = y - x == 7 && asciiEqualsIgnoreCase(b, x, "chunked");
                chunkeds += lastChunked ? 1 : 0;
            }
            a = z + 1;
        }
    }

    /**
     * Step 3: the body's framing (RFC 9112 6.1-6.3) and Expect, for a head that passed the other checks: the refusal,
     * or null with {@link #chunked}, {@link #length} and {@link #continueExpected} set.
     */
    Refusal framing(byte[] b, HttpVersion version, long maxBodyBytes) {
        chunked = false;
        continueExpected = false;
        if (teFields > 0) {
            if (length != NONE || badLength || codings == 0 || badCoding || version == HttpVersion.HTTP_1_0) {
                return Refusal.AMBIGUOUS_FRAMING; // with Content-Length, empty, not a token, or on HTTP/1.0 (RFC 9112 6.1, 6.3)
            } else if (chunkeds == 0) {
                return Refusal.UNSUPPORTED_CODING; // a transfer coding herald does not decode (RFC 9112 6.1)
            } else if (chunkeds > 1 || !lastChunked) {
                return Refusal.AMBIGUOUS_FRAMING; // chunked not last or twice: no safe framing
            } else if (codings > 1) {
                return Refusal.UNSUPPORTED_CODING;
            }
            chunked = true;
        } else if (badLength) {
            return Refusal.BAD_CONTENT_LENGTH;
        }
        if (expectAt >= 0 && version == HttpVersion.HTTP_1_1) {
            int s = pos[2 * expectAt];
            int e = pos[2 * expectAt + 1];
            if (e - s != 12 || !asciiEqualsIgnoreCase(b, s, "100-continue")) {
                return Refusal.EXPECTATION_FAILED;
            }
            continueExpected = true;
        }
        return length > maxBodyBytes ? Refusal.BODY_TOO_LARGE : null;
    }

    /** The request took the arrays: the next head gets new ones. */
    void handedOver() {
        names = null;
        pos = null;
    }
}
