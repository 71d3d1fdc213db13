package herald.http.bench;

import io.netty.util.concurrent.EventExecutorGroup;
import java.nio.charset.StandardCharsets;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/** The {@code Date} header value as IMF-fixdate bytes, recomputed once a second, read lock-free. */
final class HttpDate {
  private static final DateTimeFormatter IMF_FIXDATE =
      DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US);
  private static volatile byte[] current = format();

  private HttpDate() {}

  /** The current value (29 ASCII bytes); never mutate the array. */
  static byte[] bytes() {
    return current;
  }

  /** Schedules the once-a-second refresh on one executor of {@code group}. */
  static void startRefresh(EventExecutorGroup group) {
    long delay = 1000 - System.currentTimeMillis() % 1000;
    group.next().scheduleAtFixedRate(() -> current = format(), delay, 1000, TimeUnit.MILLISECONDS);
  }

  private static byte[] format() {
    return IMF_FIXDATE.format(ZonedDateTime.now(ZoneOffset.UTC))
        .getBytes(StandardCharsets.US_ASCII);
  }
}
