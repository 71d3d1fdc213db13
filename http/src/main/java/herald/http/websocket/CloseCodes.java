package herald.http.websocket;

import io.netty.buffer.ByteBufUtil;

/** Close codes (RFC 6455 7.4 and the IANA registry) and the size rules of close frames. */
final class CloseCodes {
    static final int NORMAL = 1000;
    static final int PROTOCOL_ERROR = 1002;
    static final int NO_STATUS = 1005;
    static final int ABNORMAL = 1006;
    static final int INVALID_DATA = 1007;
    static final int TOO_BIG = 1009;
    static final int INTERNAL_ERROR = 1011;
    /** A control frame carries at most 125 bytes (RFC 6455 5.5): 2 for the code, 123 for the reason. */
    static final int MAX_CONTROL_PAYLOAD = 125;
    static final int MAX_REASON_BYTES = MAX_CONTROL_PAYLOAD - 2;

    private CloseCodes() {}

    /**
     * True for a code a close frame may carry: 1000-1003, 1007-1014 (1012-1014 are registered with IANA) and
     * 3000-4999. 1004-1006 and 1015 are reserved or must never be sent; 0-999, 1016-2999 and 5000+ are undefined.
     */
    static boolean valid(int code) {
        return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
    }

    /** {@code reason} cut to at most 123 UTF-8 bytes, never inside a character. */
    static String fit(String reason) {
        if (reason == null) {
            return "";
        }
        if (ByteBufUtil.utf8Bytes(reason) <= MAX_REASON_BYTES) {
            return reason;
        }
        int end = reason.length();
        while (end > 0 && ByteBufUtil.utf8Bytes(reason, 0, end) > MAX_REASON_BYTES) {
            end--;
        }
        if (end > 0 && Character.isHighSurrogate(reason.charAt(end - 1))) {
            end--;
        }
        return reason.substring(0, end);
    }
}
