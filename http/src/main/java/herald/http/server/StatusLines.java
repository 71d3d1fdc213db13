package herald.http.server;

import io.netty.handler.codec.http.HttpResponseStatus;
import java.nio.charset.StandardCharsets;

/** Pre-encoded status lines ("HTTP/1.1 200 OK\r\n") for every status 100-599. */
final class StatusLines {
    private static final byte[][] LINES = new byte[600][];
    private static final byte[][] REASONS = new byte[600][];

    static {
        for (int code = 100; code < 600; code++) {
            String reason = HttpResponseStatus.valueOf(code).reasonPhrase();
            LINES[code] = ("HTTP/1.1 " + code + " " + reason + "\r\n").getBytes(StandardCharsets.US_ASCII);
            REASONS[code] = reason.getBytes(StandardCharsets.US_ASCII);
        }
    }

    private StatusLines() {}

    /** The status line of {@code code}; the caller has checked 100 <= code <= 599. */
    static byte[] of(int code) {
        return LINES[code];
    }

    /** The reason phrase of {@code code}. */
    static String reason(int code) {
        return HttpResponseStatus.valueOf(code).reasonPhrase();
    }

    /** The reason phrase of {@code code} as ASCII bytes (shared: never modify). */
    static byte[] reasonBytes(int code) {
        return REASONS[code];
    }

    /** True when a response with this status never carries a body (1xx, 204, 304). */
    static boolean bodiless(int code) {
        return code < 200 || code == 204 || code == 304;
    }
}
