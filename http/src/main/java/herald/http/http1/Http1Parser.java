package herald.http.http1;

import static herald.http.http1.Http1Bytes.method;
import static herald.http.http1.Http1Bytes.versionRefusal;
import static herald.http.http1.Http1Names.TCHAR;

import herald.http.server.HeadChecks;
import herald.http.server.KeepAlive;
import herald.http.server.Refusal;
import herald.http.server.RequestHead;
import io.netty.handler.codec.http.HttpHeaderNames;
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
    private final HeaderLines fields = new HeaderLines();
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
     * {@code lines - 1} is the empty line that ends the head. Three steps: the request line (this class), the header
     * lines and the body's framing ({@link HeaderLines}); their results are fields (one parser per connection:
     * nothing is allocated for them).
     */
    RequestHead parse(byte[] b, int[] ends, int lines) {
        chunked = false;
        contentLength = NONE;
        why = null;
        Refusal bad = requestLine(b, ends[0] - 1);
        if (bad == null) {
            bad = fields.scan(b, ends, lines);
        }
        if (bad != null) {
            return RequestHead.refused(bad);
        }
        HeaderLines f = fields;
        Http1Headers hs = new Http1Headers(b, lines - 2, f.pos, f.names);
        String serverName = null;
        if (f.hostAt >= 0) {
            serverName = host(b, f.pos[2 * f.hostAt], f.pos[2 * f.hostAt + 1]);
            hs.preset(f.hostAt, serverName == null ? null : host);
        }
        if (status == 0) {
            status = checks(method, lower, version, f.hosts, f.hostAt >= 0 && serverName == null, b, ts, te, fragment);
        }
        if (status == 0) {
            Refusal r = f.framing(b, version, maxBodyBytes);
            if (r != null) {
                status = refuse(r);
            } else {
                chunked = f.chunked;
                contentLength = f.length;
                status = f.continueExpected ? 100 : 0;
            }
        }
        boolean proceed = status == 0 || status == 100;
        Refusal why = proceed ? null : this.why;
        boolean keepAlive = KeepAlive.of(version, f.connectionAt < 0 ? null : hs.value(f.connectionAt));
        boolean full = !proceed || !chunked && f.length <= 0;
        String path = null;
        if (proceed && b[ts] == '/') {
            path = path(b, ts, q >= 0 ? q : te);
        } else if (proceed && b[ts] != '*') {
            // absolute-form (http://h/p): Host is the target's authority, :uri the path after it (RFC 9112 3.2.2)
            int as = b[ts + 4] == ':' ? ts + 7 : ts + 8;
            int ae = as;
            while (ae < te && b[ae] != '/' && b[ae] != '?') {
                ae++;
            }
            String authority = new String(b, as, ae - as, StandardCharsets.ISO_8859_1);
            hs.set(HttpHeaderNames.HOST, authority);
            serverName = HeadChecks.hostName(authority);
            int pe = q >= 0 ? q : te;
            path = pe == ae ? "/" : new String(b, ae, pe - ae, StandardCharsets.ISO_8859_1);
        }
        RequestHead req = new RequestHead(method, version, hs, b, ts, te, q, path, serverName, why, status == 100,
            keepAlive, full);
        f.handedOver(); // the request owns the arrays now
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
        Refusal r = HeadChecks.targetRefusal(method, new String(b, ts, te - ts, StandardCharsets.ISO_8859_1));
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
        if (!HeadChecks.validAuthority(h, 0, h.length(), true)) {
            return null;
        }
        String name = HeadChecks.hostName(h);
        hostBytes = java.util.Arrays.copyOfRange(b, s, e);
        host = h;
        hostName = name;
        return name;
    }
}
