package herald.http.server;

import io.netty.channel.EventLoopGroup;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One cached {@code Date: ...\r\n} header line per second, shared by every connection. While a server runs, a
 * task on its event loops re-renders it every 100 ms, so responses never read the clock; without a running
 * server (unit tests) the line is checked against the clock on use.
 */
final class HttpDate {
    private static final DateTimeFormatter FORMAT =
        DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);
    private static final AtomicInteger REFRESHERS = new AtomicInteger();

    private record Line(long second, byte[] bytes) {}

    private static volatile Line current = render(System.currentTimeMillis() / 1000);

    private HttpDate() {}

    /** The header line for the current second ("Date: ...\r\n"). */
    static byte[] line() {
        Line l = current;
        if (REFRESHERS.get() == 0) {
            l = refresh();
        }
        return l.bytes;
    }

    private static Line refresh() {
        long now = System.currentTimeMillis() / 1000;
        Line l = current;
        if (l.second != now) {
            l = render(now);
            current = l;
        }
        return l;
    }

    /** Keeps the line fresh from {@code group} until the returned task is passed to {@link #stop}. */
    static ScheduledFuture<?> start(EventLoopGroup group) {
        refresh();
        REFRESHERS.incrementAndGet();
        return group.next().scheduleAtFixedRate(HttpDate::refresh, 100, 100, TimeUnit.MILLISECONDS);
    }

    static void stop(ScheduledFuture<?> task) {
        if (task.cancel(false)) {
            REFRESHERS.decrementAndGet();
        }
    }

    private static Line render(long second) {
        String s = "Date: " + FORMAT.format(Instant.ofEpochSecond(second)) + "\r\n";
        return new Line(second, s.getBytes(StandardCharsets.US_ASCII));
    }
}
