package herald.http.fuzz;

import herald.http.server.LeakWatcher;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.ResourceLeakDetector;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What every fuzz target checks after each input: the input buffers it wrote were all released (refCnt 0), no
 * exception reached the end of the pipeline, and Netty's leak detector (PARANOID) reported nothing so far. The
 * detector reports a leak when the leaked buffer is collected, so a leak may surface a few inputs after the one that
 * made it; {@link #assertNoLeaks()} (after the corpus) forces a collection.
 */
final class FuzzChecks {
    static {
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID);
        clojure.lang.RT.count(null); // loads clojure.core now, not inside the first input (seconds on a busy machine)
        LeakWatcher.install();
    }

    /** Time a close may take (the server's timers: the HTTP/2 graceful close waits the shutdown timeout, 10 s). */
    static final long CLOSE_WITHIN_MS = 60_000;
    private final List<ByteBuf> written = new ArrayList<>();

    /** Loads what every input needs (Clojure, the leak watcher) before the first one. */
    static void warmUp() {}

    /** Writes {@code data[from, to)} into {@code ch} as one read, in a buffer this check follows. */
    void write(EmbeddedChannel ch, byte[] data, int from, int to) {
        if (!ch.isOpen()) {
            return;
        }
        ByteBuf b = Unpooled.buffer(Math.max(1, to - from)).writeBytes(data, from, to - from);
        written.add(b);
        ch.writeInbound(b); // rethrows what reached the pipeline's tail: an escaped exception fails the input
        ch.runPendingTasks();
    }

    /** Everything the server wrote so far, as bytes (ByteBufs only; other messages are named and dropped). */
    static byte[] output(EmbeddedChannel ch, List<String> others) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (Object m; (m = ch.readOutbound()) != null; ) {
            if (m instanceof ByteBuf b) {
                byte[] bytes = new byte[b.readableBytes()];
                b.readBytes(bytes);
                out.writeBytes(bytes);
            } else {
                others.add(m.getClass().getSimpleName());
            }
            io.netty.util.ReferenceCountUtil.release(m);
        }
        return out.toByteArray();
    }

    /**
     * Closes {@code ch} as the server would (releasing what is left in it) and checks that every buffer written was
     * released. The close goes through the pipeline and time is then moved past every timer: an HTTP/2 close is
     * graceful (GOAWAY, then the close waits for the open streams, at most the shutdown timeout), and
     * {@code EmbeddedChannel.close()} would cancel the codec's timer with every other scheduled task, leaving the
     * connection open with a partial frame in the codec's buffer (finding 4).
     */
    void finish(EmbeddedChannel ch) {
        ch.runPendingTasks();
        ch.pipeline().close();
        ch.runPendingTasks();
        if (ch.isOpen()) {
            ch.advanceTimeBy(CLOSE_WITHIN_MS, TimeUnit.MILLISECONDS);
            ch.runScheduledPendingTasks();
            ch.runPendingTasks();
        }
        if (ch.isOpen()) {
            ch.finishAndReleaseAll();
            throw new AssertionError("the connection was still open " + CLOSE_WITHIN_MS + " ms after its close");
        }
        ch.finishAndReleaseAll();
        for (ByteBuf b : written) {
            if (b.refCnt() != 0) {
                throw new AssertionError("an input buffer was not released (refCnt " + b.refCnt() + ")");
            }
        }
        written.clear();
        List<String> leaks = LeakWatcher.reported();
        if (!leaks.isEmpty()) {
            throw new AssertionError("Netty reported a leak: " + leaks.get(0));
        }
    }

    /** Collects garbage and fails when Netty reported any leak. */
    static void assertNoLeaks() throws InterruptedException {
        List<String> leaks = LeakWatcher.leaks();
        if (!leaks.isEmpty()) {
            throw new AssertionError("Netty reported " + leaks.size() + " leak(s): " + leaks.get(0));
        }
    }
}
