package herald.http.server;

import clojure.lang.IFn;
import io.netty.handler.codec.http.HttpHeaderNames;
import java.io.BufferedWriter;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Locale;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The access log ({@code :access-log}): one line per answered request, in common or combined log format or as a
 * JSON object. The event loop only captures the facts of the exchange into an {@link Entry} and offers it to a
 * bounded queue; one background thread formats the lines and hands them to the sink (a file, an SLF4J logger or a
 * function), so a slow disk or logger never holds up a connection. When the queue is full the entry is dropped
 * and counted ({@link #dropped}). With no access log the server holds null and pays one null check per answer.
 */
public final class AccessLog {
    /** The line formats. */
    public enum Format { COMMON, COMBINED, JSON }

    /** Where the lines go, called from the writer thread only. */
    public interface Sink {
        void write(String line) throws IOException;

        /** The queue is empty for now: push out what is buffered. */
        default void flush() throws IOException {}

        default void close() throws IOException {}
    }

    /** The facts of one answered exchange, captured on the event loop. */
    record Entry(String remoteAddr, long epochMillis, String method, String target, String protocol, int status,
                 long bytes, long micros, String referer, String userAgent) {}

    private static final DateTimeFormatter CLF_TIME =
        DateTimeFormatter.ofPattern("dd/MMM/yyyy:HH:mm:ss Z", Locale.ROOT).withZone(ZoneOffset.UTC);
    private static final Entry STOP = new Entry(null, 0, null, null, null, 0, 0, 0, null, null);

    private final Format format;
    private final Sink sink;
    private final ArrayBlockingQueue<Entry> queue;
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong written = new AtomicLong();
    private final Thread writer;

    public AccessLog(Format format, Sink sink, int queueSize) {
        this.format = format;
        this.sink = sink;
        this.queue = new ArrayBlockingQueue<>(queueSize);
        this.writer = new Thread(this::run, "herald-http-access-log");
        writer.setDaemon(true);
        writer.start();
    }

    /** A sink appending to {@code file} (created when missing), UTF-8, buffered, flushed whenever the queue empties. */
    public static Sink fileSink(File file) throws IOException {
        Writer w = new BufferedWriter(new OutputStreamWriter(new FileOutputStream(file, true), StandardCharsets.UTF_8),
            65536);
        return new Sink() {
            @Override
            public void write(String line) throws IOException {
                w.write(line);
                w.write('\n');
            }

            @Override
            public void flush() throws IOException {
                w.flush();
            }

            @Override
            public void close() throws IOException {
                w.close();
            }
        };
    }

    /** A sink calling {@code (f line)}. */
    public static Sink fnSink(IFn f) {
        return f::invoke;
    }

    /** Entries dropped because the writer fell behind by a whole queue. */
    public long dropped() {
        return dropped.get();
    }

    /** Lines handed to the sink. */
    public long written() {
        return written.get();
    }

    /** Captures {@code ex} (answered with {@code ex.status}, {@code ex.bytes} body bytes) for the writer (event loop). */
    void record(Exchange ex, ConnectionInfo info) {
        RequestHead r = ex.request;
        String method = "-";
        String target = "-";
        String protocol = "-";
        String referer = null;
        String agent = null;
        String uri = r == null ? null : r.uri();
        if (uri != null && !uri.isEmpty()) {
            method = r.method().name();
            target = uri;
            protocol = r.version().text();
            if (format != Format.COMMON) {
                referer = r.headers().get(HttpHeaderNames.REFERER);
                agent = r.headers().get(HttpHeaderNames.USER_AGENT);
            }
        }
        long micros = ex.startNanos == 0 ? 0 : (System.nanoTime() - ex.startNanos) / 1000;
        Entry e = new Entry(info.remoteAddr, System.currentTimeMillis(), method, target, protocol, ex.status, ex.bytes,
            micros, referer, agent);
        if (!queue.offer(e)) {
            dropped.incrementAndGet();
        }
    }

    /** Writes what is queued, then stops the writer and closes the sink (server stop; idempotent). */
    public void close() {
        if (!writer.isAlive()) {
            return;
        }
        try {
            queue.put(STOP);
            writer.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        ArrayList<Entry> batch = new ArrayList<>(256);
        StringBuilder sb = new StringBuilder(256);
        try {
            while (true) {
                Entry first = queue.poll(1, TimeUnit.SECONDS);
                if (first == null) {
                    continue;
                }
                batch.add(first);
                queue.drainTo(batch, 4095);
                for (Entry e : batch) {
                    if (e == STOP) {
                        sink.flush();
                        sink.close();
                        return;
                    }
                    sb.setLength(0);
                    format(e, sb);
                    try {
                        sink.write(sb.toString());
                        written.incrementAndGet();
                    } catch (Exception failed) {
                        dropped.incrementAndGet();
                    }
                }
                batch.clear();
                if (queue.isEmpty()) {
                    sink.flush();
                }
            }
        } catch (InterruptedException stop) {
            // the JVM is going away
        } catch (Exception failed) {
            System.err.println("herald.http: access log writer stopped: " + failed);
        }
    }

    /** Appends the line for {@code e} in this log's format. */
    void format(Entry e, StringBuilder sb) {
        if (format == Format.JSON) {
            sb.append("{\"time\":\"").append(Instant.ofEpochMilli(e.epochMillis())).append('"');
            field(sb, "remote_addr", e.remoteAddr());
            field(sb, "method", e.method());
            field(sb, "uri", e.target());
            field(sb, "protocol", e.protocol());
            sb.append(",\"status\":").append(e.status());
            sb.append(",\"bytes\":").append(e.bytes() < 0 ? "null" : Long.toString(e.bytes()));
            sb.append(",\"duration_ms\":").append(e.micros() / 1000.0);
            if (e.referer() != null) {
                field(sb, "referer", e.referer());
            }
            if (e.userAgent() != null) {
                field(sb, "user_agent", e.userAgent());
            }
            sb.append('}');
            return;
        }
        sb.append(e.remoteAddr()).append(" - - [").append(CLF_TIME.format(Instant.ofEpochMilli(e.epochMillis())))
            .append("] \"");
        clf(sb, e.method()).append(' ');
        clf(sb, e.target()).append(' ');
        clf(sb, e.protocol()).append("\" ").append(e.status()).append(' ');
        sb.append(e.bytes() <= 0 ? "-" : Long.toString(e.bytes()));
        if (format == Format.COMBINED) {
            sb.append(" \"");
            clf(sb, e.referer() == null ? "-" : e.referer()).append("\" \"");
            clf(sb, e.userAgent() == null ? "-" : e.userAgent()).append('"');
        }
    }

    /** {@code s} with quotes, backslashes and control characters escaped (no log line forging). */
    private static StringBuilder clf(StringBuilder sb, String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20 || c == 0x7f) {
                sb.append(String.format("\\x%02x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb;
    }

    private static void field(StringBuilder sb, String name, String value) {
        sb.append(",\"").append(name).append("\":\"");
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20 || c == 0x7f) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }
}
