package herald.http.server;

import static herald.http.server.Http1Bytes.asciiEqualsIgnoreCase;
import static herald.http.server.Http1Bytes.clean;
import static herald.http.server.Http1Bytes.lengthOf;
import static herald.http.server.Http1Bytes.method;
import static herald.http.server.Http1Bytes.versionRefusal;
import static herald.http.server.Http1Names.TCHAR;

import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;

/**
 * Parses and checks one complete HTTP/1.1 request head in one pass over its bytes (RFC 9112): token methods and
 * header names, exactly one SP between the request line's parts, {@code HTTP/1.0} or {@code HTTP/1.1} (505 for
 * another major version), every line ending in CRLF, no whitespace before ':' or at a line's start (obs-fold), no
 * NUL or CR in values, one valid Host (required on HTTP/1.1), origin-form, absolute-form or OPTIONS {@code *}
 * targets without '#', Content-Length and Transfer-Encoding framing, and Expect. Header names are lower-cased in
 * place. One parser per connection: it remembers the last Host value, which clients repeat on every request.
 */
final class Http1Parser {
    private static final int NONE = -1;

    private final long maxBodyBytes;
    private byte[] hostBytes;
    private String host;
    private String hostName;
    private byte[] pathBytes;
    private String path;

    /** Why the last parsed head is refused; null when it is not. */
    private Refusal why;
    /** The framing of the last parsed head: chunked, else the Content-Length (-1: none). */
    boolean chunked;
    long contentLength;

    Http1Parser(long maxBodyBytes) {
        this.maxBodyBytes = maxBodyBytes;
    }

    /**
     * The request whose head is {@code b}: {@code ends[k]} is the index of the LF ending line k; line
     * {@code lines - 1} is the empty line that ends the head. Three steps: the request line, the header lines, the
     * body's framing; their results are this parser's fields (one parser per connection: nothing is allocated for
     * them).
     */
    Http1Request parse(byte[] b, int[] ends, int lines) {
        chunked = false;
        contentLength = NONE;
        why = null;
        Refusal bad = requestLine(b, ends[0] - 1);
        if (bad == null) {
            bad = headerLines(b, ends, lines);
        }
        if (bad != null) {
            return Http1Request.refused(bad);
        }
        Http1Headers hs = new Http1Headers(b, lines - 2, pos, names);
        String serverName = null;
        if (hostAt >= 0) {
            serverName = host(b, pos[2 * hostAt], pos[2 * hostAt + 1]);
            hs.preset(hostAt, serverName == null ? null : host);
        }
        if (status == 0) {
            status = checks(method, lower, version, hosts, hostAt >= 0 && serverName == null, b, ts, te, fragment);
        }
        if (status == 0) {
            status = framing(b);
        }
        Refusal why = this.why;
        boolean absolute = status == 0 && b[ts] != '/' && b[ts] != '*';
        boolean keepAlive = KeepAlive.of(version, connectionAt < 0 ? null : hs.value(connectionAt));
        Http1Request req = status != 0 && status != 100 || !chunked && length <= 0
            ? new Http1Request.Full(method, version, hs, b, ts, te, q, status, why, absolute, keepAlive, serverName)
            : new Http1Request(method, version, hs, b, ts, te, q, status, why, absolute, keepAlive, serverName);
        if ((status == 0 || status == 100) && b[ts] == '/') {
            req.path = path(b, ts, q >= 0 ? q : te);
        }
        names = null;
        pos = null; // the request owns them now
        return req;
    }

    // ---- the request line's results ----
    private HttpMethod method;
    /** The method has a lower-case letter. */
    private boolean lower;
    /** The target is {@code b[ts, te)}; {@code q}: its '?', or NONE. */
    private int ts;
    private int te;
    private int q;
    private boolean fragment;
    private HttpVersion version;
    /** The status the head is refused with (0: none so far; 100: Expect: 100-continue). */
    private int status;

    /**
     * Step 1: the request line {@code b[0, eol)} (method SP target SP version): a refusal that ends the parse
     * before the header lines, or null with the line's parts in the fields above.
     */
    private Refusal requestLine(byte[] b, int eol) {
        if (eol < 0 || b[eol] != '\r') {
            return Refusal.BARE_LINE_END;
        }
        int i = 0;
        lower = false;
        while (i < eol) {
            int c = b[i] & 0xff;
            if (!TCHAR[c]) {
                break;
            }
            lower |= c >= 'a' && c <= 'z';
            i++;
        }
        if (i == 0 || i == eol || b[i] != ' ') {
            return Refusal.BAD_REQUEST_LINE;
        }
        method = method(b, i);
        ts = ++i;
        q = NONE;
        fragment = false;
        while (i < eol) {
            int c = b[i] & 0xff;
            if (c <= 0x20 || c >= 0x7f) {
                break; // RFC 9112 3.2: a target is visible ASCII (non-ASCII must be percent-encoded): 400
            }
            if (c == '?') {
                q = q < 0 ? i : q;
            } else if (c == '#') {
                fragment = true;
            }
            i++;
        }
        te = i;
        if (te == ts || i == eol || b[i] != ' ') {
            int c = i == eol ? ' ' : b[i] & 0xff;
            return c >= 0x80 ? Refusal.NON_ASCII_TARGET
                : c < 0x20 || c == 0x7f ? Refusal.CONTROL_IN_TARGET : Refusal.BAD_REQUEST_LINE;
        }
        i++;
        version = HttpVersion.HTTP_1_1;
        status = 0;
        if (eol - i == 8 && b[i] == 'H' && b[i + 1] == 'T' && b[i + 2] == 'T' && b[i + 3] == 'P' && b[i + 4] == '/'
            && b[i + 5] == '1' && b[i + 6] == '.' && (b[i + 7] == '1' || b[i + 7] == '0')) {
            version = b[i + 7] == '1' ? HttpVersion.HTTP_1_1 : HttpVersion.HTTP_1_0;
        } else {
            Refusal v = versionRefusal(b, i, eol);
            if (v.status == 400) {
                // a malformed line is judged before the header lines, as at its CRLF when the head comes in
                // pieces (Http1Bytes.requestLineRefusal): the same bytes get the same answer however they arrive
                return v;
            }
            status = refuse(v);
        }
        return null;
    }

    // ---- the header lines' results ----
    /** Header k's name (lower-cased, interned when known) and its value's bounds {@code pos[2k], pos[2k + 1]}. */
    private String[] names;
    private int[] pos;
    /** The line index of the first Host, Connection and Expect header, or NONE. */
    private int hostAt;
    private int hosts;
    private int connectionAt;
    private int expectAt;
    /** Content-Length: its value (NONE: absent), or bad (not a number, or two different values). */
    private long length;
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
    private Refusal headerLines(byte[] b, int[] ends, int lines) {
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
     * Step 3: the body's framing (RFC 9112 6.1-6.3) and Expect, for a head that passed the other checks: 0, 100
     * (a 100-continue to send), or the status to refuse with; sets {@link #chunked} and {@link #contentLength}.
     */
    private int framing(byte[] b) {
        if (teFields > 0) {
            if (length != NONE || badLength || codings == 0 || badCoding || version == HttpVersion.HTTP_1_0) {
                return refuse(Refusal.AMBIGUOUS_FRAMING); // with Content-Length, empty, not a token, or on HTTP/1.0 (RFC 9112 6.1, 6.3)
            } else if (chunkeds == 0) {
                return refuse(Refusal.UNSUPPORTED_CODING); // a transfer coding herald does not decode (RFC 9112 6.1)
            } else if (chunkeds > 1 || !lastChunked) {
                return refuse(Refusal.AMBIGUOUS_FRAMING); // chunked not last or twice: no safe framing
            } else if (codings > 1) {
                return refuse(Refusal.UNSUPPORTED_CODING);
            }
            chunked = true;
        } else if (badLength) {
            return refuse(Refusal.BAD_CONTENT_LENGTH);
        }
        contentLength = length;
        if (expectAt >= 0 && version == HttpVersion.HTTP_1_1) {
            int s = pos[2 * expectAt];
            int e = pos[2 * expectAt + 1];
            return e - s != 12 || !asciiEqualsIgnoreCase(b, s, "100-continue")
                ? refuse(Refusal.EXPECTATION_FAILED) : length > maxBodyBytes ? refuse(Refusal.BODY_TOO_LARGE) : 100;
        }
        return length > maxBodyBytes ? refuse(Refusal.BODY_TOO_LARGE) : 0;
    }

    /** The path {@code b[s, e)} as a String: the last one again when the bytes are the same (clients repeat paths). */
    private String path(byte[] b, int s, int e) {
        byte[] last = pathBytes;
        if (last != null && Http1Bytes.same(last, b, s, e)) {
            return path;
        }
        if (e - s > 256) {
            return new String(b, s, e - s, StandardCharsets.ISO_8859_1);
        }
        pathBytes = java.util.Arrays.copyOfRange(b, s, e);
        path = new String(b, s, e - s, StandardCharsets.ISO_8859_1);
        return path;
    }

    /** Records why the head being parsed is refused; returns the status to answer. */
    private int refuse(Refusal r) {
        why = r;
        return r.status;
    }

    /** The method, version, Host and target checks (RFC 9110 9.1, RFC 9112 3.2): 0, or the status to refuse with. */
    private int checks(HttpMethod method, boolean lower, HttpVersion version, int hosts, boolean badHost,
                       byte[] b, int ts, int te, boolean fragment) {
        if (lower) {
            return refuse(Refusal.LOWERCASE_METHOD); // methods are case-sensitive and Ring lower-cases them
        }
        if (method == HttpMethod.CONNECT) {
            return refuse(Refusal.CONNECT_METHOD); // herald is not a proxy
        }
        if (hosts > 1) {
            return refuse(Refusal.DUPLICATE_HOST);
        }
        if (badHost) {
            return refuse(Refusal.BAD_HOST);
        }
        if (hosts == 0 && version == HttpVersion.HTTP_1_1) {
            return refuse(Refusal.MISSING_HOST);
        }
        if (fragment) {
            return refuse(Refusal.FRAGMENT_IN_TARGET);
        }
        if (b[ts] == '/') {
            return 0;
        }
        Refusal r = RequestHead.targetRefusal(method, new String(b, ts, te - ts, StandardCharsets.ISO_8859_1));
        return r == null ? 0 : refuse(r);
    }

    /**
     * Ring's server name for the Host value {@code b[s, e)} (without its port), the Host String left in
     * {@link #host}; null when the value is not {@code uri-host [":" port]}. The last value is remembered.
     */
    private String host(byte[] b, int s, int e) {
        byte[] last = hostBytes;
        if (last != null && Http1Bytes.same(last, b, s, e)) {
            return hostName;
        }
        String h = new String(b, s, e - s, StandardCharsets.ISO_8859_1);
        if (!RequestHead.validAuthority(h, 0, h.length(), true)) {
            return null;
        }
        String name;
        if (h.isEmpty()) {
            name = "";
        } else if (h.charAt(0) == '[') {
            name = h.substring(0, h.indexOf(']') + 1);
        } else {
            int colon = h.lastIndexOf(':');
            name = colon >= 0 ? h.substring(0, colon) : h;
        }
        hostBytes = java.util.Arrays.copyOfRange(b, s, e);
        host = h;
        hostName = name;
        return name;
    }
}
