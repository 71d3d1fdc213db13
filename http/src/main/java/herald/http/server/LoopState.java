package herald.http.server;

import io.netty.util.concurrent.FastThreadLocal;

/**
 * Scratch state shared by all connections of one event loop: the head buffer and the last header scan. With
 * many connections each sending one request at a time, per-connection copies would be cold in the CPU cache
 * when touched; one per loop stays hot. Only the event loop's thread touches its instance.
 */
final class LoopState {
    private static final FastThreadLocal<LoopState> STATE = new FastThreadLocal<>() {
        @Override
        protected LoopState initialValue() {
            return new LoopState();
        }
    };

    final HeadBuffer head = new HeadBuffer();
    HeaderScan lastScan;

    private LoopState() {}

    /** The calling thread's state (the event loop's, for every caller in this package). */
    static LoopState get() {
        return STATE.get();
    }
}
