package herald.http.server;

import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Collects Netty's "LEAK:" reports (sent to java.util.logging: no slf4j on the test classpath) so tests can assert
 * there were none; the surefire JVM runs the detector at PARANOID.
 */
public final class LeakWatcher {
    private static final Logger LOGGER = Logger.getLogger("io.netty.util.ResourceLeakDetector");
    private static final List<String> LEAKS = new CopyOnWriteArrayList<>();

    static {
        LOGGER.setLevel(Level.ALL);
        LOGGER.addHandler(new Handler() {
            @Override
            public void publish(LogRecord r) {
                String m = String.valueOf(r.getMessage());
                if (m.contains("LEAK:")) {
                    LEAKS.add(m);
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        });
    }

    private LeakWatcher() {}

    /** Installs the watcher (class initialisation does it). */
    public static void install() {}

    /** The leaks reported so far, without collecting garbage first. */
    public static List<String> reported() {
        return List.copyOf(LEAKS);
    }

    /** Runs the GC, pokes the allocators so the detector reports, and returns every leak reported so far. */
    public static List<String> leaks() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
            for (int j = 0; j < 64; j++) {
                PooledByteBufAllocator.DEFAULT.directBuffer(64).release();
                UnpooledByteBufAllocator.DEFAULT.buffer(64).release();
            }
        }
        return List.copyOf(LEAKS);
    }
}
