package herald.http.http1;

import herald.http.server.Refusal;
import io.netty.handler.codec.http.HttpMethod;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/** Byte-level pieces of {@link Http1Parser}: methods, versions, Content-Length values, the NUL/CR scan. */
final class Http1Bytes {
    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long ONES = 0x0101010101010101L;
    private static final long HIGHS = 0x8080808080808080L;
    private static final long CRS = 0x0D0D0D0D0D0D0D0DL;
    private static final int NONE = -1;

    private Http1Bytes() {}

    /**
     * Why the version {@code b[s, e)} (not HTTP/1.0 or HTTP/1.1) is refused: 505 for {@code HTTP/<digits>.<digits>}
     * of another major version than 1; a malformed request line when it holds a space (a space in the target, or
     * a part too many); else a bad version (400).
     */
    static Refusal versionRefusal(byte[] b, int s, int e) {
        for (int i = s; i < e; i++) {
            if (b[i] == ' ') {
                return Refusal.BAD_REQUEST_LINE;
            }
        }
        if (e - s < 8 || !asciiEquals(b, s, "HTTP/")) {
            return Refusal.BAD_VERSION;
        }
        int i = s + 5;
        int major = 0;
        int digits = 0;
        while (i < e && b[i] >= '0' && b[i] <= '9' && digits < 9) {
            major = major * 10 + (b[i++] - '0');
            digits++;
        }
        if (digits == 0 || i >= e || b[i++] != '.' || i == e) {
            return Refusal.BAD_VERSION;
        }
        while (i < e && b[i] >= '0' && b[i] <= '9') {
            i++;
        }
        return i != e || major == 1 ? Refusal.BAD_VERSION : Refusal.VERSION_NOT_SUPPORTED;
    }

    /**
     * Null when the request line ending with the LF at {@code lf} can start a valid head: {@code token SP target SP
     * HTTP/d+.d+ CRLF}, the target without control characters, spaces or non-ASCII bytes; else why it cannot.
     * Checked only while the rest of a head is awaited, so a line that can never be served is answered 400 at once
     * (the full parse of a complete head makes the same checks).
     */
    static Refusal requestLineRefusal(io.netty.buffer.ByteBuf in, int s, int lf) {
        int e = lf - 1;
        if (e < s || in.getByte(e) != '\r') {
            return Refusal.BARE_LINE_END;
        }
        int i = s;
        while (i < e && Http1Names.TCHAR[in.getByte(i) & 0xff]) {
            i++;
        }
        if (i == s || i >= e || in.getByte(i++) != ' ') {
            return Refusal.BAD_REQUEST_LINE;
        }
        int t = i;
        while (i < e) {
            int c = in.getByte(i) & 0xff;
            if (c <= 0x20 || c >= 0x7f) {
                break;
            }
            i++;
        }
        if (i < e && in.getByte(i) != ' ') {
            return (in.getByte(i) & 0xff) >= 0x80 ? Refusal.NON_ASCII_TARGET : Refusal.CONTROL_IN_TARGET;
        }
        if (i == t || i >= e || in.getByte(i++) != ' ') {
            return Refusal.BAD_REQUEST_LINE;
        }
        for (int k = i; k < e; k++) {
            if (in.getByte(k) == ' ') {
                return Refusal.BAD_REQUEST_LINE;
            }
        }
        if (e - i < 8) {
            return Refusal.BAD_VERSION;
        }
        for (int k = 0; k < 5; k++) {
            if (in.getByte(i + k) != "HTTP/".charAt(k)) {
                return Refusal.BAD_VERSION;
            }
        }
        i += 5;
        int d = i;
        while (i < e && Character.isDigit((char) in.getByte(i))) {
            i++;
        }
        if (i == d || i >= e || in.getByte(i++) != '.') {
            return Refusal.BAD_VERSION;
        }
        d = i;
        while (i < e && Character.isDigit((char) in.getByte(i))) {
            i++;
        }
        return i > d && i == e ? null : Refusal.BAD_VERSION;
    }

    /** The Content-Length value {@code b[s, e)}: 1*DIGIT, or a list of equal ones ("42, 42"); -1 when invalid. */
    static long lengthOf(byte[] b, int s, int e) {
        long v = NONE;
        int i = s;
        while (true) {
            int digits = 0;
            long x = 0;
            while (i < e && b[i] >= '0' && b[i] <= '9') {
                x = x * 10 + (b[i++] - '0');
                if (++digits > 18) {
                    return NONE;
                }
            }
            if (digits == 0 || v >= 0 && x != v) {
                return NONE;
            }
            v = x;
            while (i < e && (b[i] == ' ' || b[i] == '\t')) {
                i++;
            }
            if (i == e) {
                return v;
            }
            if (b[i++] != ',') {
                return NONE;
            }
            while (i < e && (b[i] == ' ' || b[i] == '\t')) {
                i++;
            }
        }
    }

    /** Whether {@code b[s, e)} holds neither NUL nor CR: eight bytes at a time. */
    static boolean clean(byte[] b, int s, int e) {
        int i = s;
        for (; i + 8 <= e; i += 8) {
            long x = (long) LONGS.get(b, i);
            long y = x ^ CRS;
            if (((((x - ONES) & ~x) | ((y - ONES) & ~y)) & HIGHS) != 0) {
                return false;
            }
        }
        for (; i < e; i++) {
            if (b[i] == 0 || b[i] == '\r') {
                return false;
            }
        }
        return true;
    }

    static HttpMethod method(byte[] b, int len) {
        switch (len) {
            case 3:
                if (b[0] == 'G' && b[1] == 'E' && b[2] == 'T') {
                    return HttpMethod.GET;
                }
                if (b[0] == 'P' && b[1] == 'U' && b[2] == 'T') {
                    return HttpMethod.PUT;
                }
                break;
            case 4:
                if (asciiEquals(b, 0, "POST")) {
                    return HttpMethod.POST;
                }
                if (asciiEquals(b, 0, "HEAD")) {
                    return HttpMethod.HEAD;
                }
                break;
            case 5:
                if (asciiEquals(b, 0, "PATCH")) {
                    return HttpMethod.PATCH;
                }
                if (asciiEquals(b, 0, "TRACE")) {
                    return HttpMethod.TRACE;
                }
                break;
            case 6:
                if (asciiEquals(b, 0, "DELETE")) {
                    return HttpMethod.DELETE;
                }
                break;
            case 7:
                if (asciiEquals(b, 0, "OPTIONS")) {
                    return HttpMethod.OPTIONS;
                }
                if (asciiEquals(b, 0, "CONNECT")) {
                    return HttpMethod.CONNECT;
                }
                break;
            default:
                break;
        }
        return HttpMethod.valueOf(new String(b, 0, len, StandardCharsets.ISO_8859_1));
    }

    static boolean asciiEquals(byte[] b, int s, String t) {
        for (int i = 0; i < t.length(); i++) {
            if (b[s + i] != t.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    static boolean asciiEqualsIgnoreCase(byte[] b, int s, String lower) {
        for (int i = 0; i < lower.length(); i++) {
            int c = b[s + i];
            if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != lower.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether {@code b[s, e)} holds exactly the bytes of {@code a}: a plain loop, cheaper than a vectorized
     * mismatch for the few bytes of a header name, a Host value or a path.
     */
    static boolean same(byte[] a, byte[] b, int s, int e) {
        if (a.length != e - s) {
            return false;
        }
        for (int i = 0; i < a.length; i++) {
            if (a[i] != b[s + i]) {
                return false;
            }
        }
        return true;
    }
}
