package herald.http.server;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

/** One cached {@code Date: ...\r\n} header line per second, shared by every connection. */
final class HttpDate {
    private static final DateTimeFormatter FORMAT =
        DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);

    private static final class Line {
        final long second;
        final byte[] bytes;

        Line(long second, byte[] bytes) {
            this.second = second;
            this.bytes = bytes;
        }
    }

    private static volatile Line current = render(System.currentTimeMillis() / 1000);

    private HttpDate() {}

    /** The header line for the current second ("Date: ...\r\n"), re-rendered at most once a second. */
    static byte[] line() {
        long now = System.currentTimeMillis() / 1000;
        Line l = current;
        if (l.second != now) {
            l = render(now);
            current = l;
        }
        return l.bytes;
    }

    private static Line render(long second) {
        String s = "Date: " + FORMAT.format(Instant.ofEpochSecond(second)) + "\r\n";
        return new Line(second, s.getBytes(StandardCharsets.US_ASCII));
    }
}
