package herald.http.server;

import io.netty.handler.codec.DefaultHeaders;

/**
 * Rejects request header values holding NUL or CR (RFC 9110 section 5.5: reject or replace them; LF cannot occur
 * inside a value because lines end at LF). Two vectorized {@code indexOf} scans instead of Netty's full
 * per-character validation, which costs more than the rest of a small request's parse.
 */
final class HeaderValueValidator implements DefaultHeaders.ValueValidator<CharSequence> {
    static final HeaderValueValidator INSTANCE = new HeaderValueValidator();

    private HeaderValueValidator() {}

    @Override
    public void validate(CharSequence value) {
        if (value instanceof String s) {
            if (s.indexOf('\0') >= 0 || s.indexOf('\r') >= 0) {
                throw new IllegalArgumentException("header value contains NUL or CR");
            }
            return;
        }
        for (int i = 0, n = value.length(); i < n; i++) {
            char c = value.charAt(i);
            if (c == '\0' || c == '\r') {
                throw new IllegalArgumentException("header value contains NUL or CR");
            }
        }
    }
}
