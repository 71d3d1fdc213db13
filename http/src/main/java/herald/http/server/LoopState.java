package herald.http.server;

import io.netty.util.concurrent.FastThreadLocal;

/**
 * Scratch state shared by all connections of one event loop: the head buffers, the last header scan, the last
 * fixed response's head and body bytes. With
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
    /** Where {@link HeaderScan} encodes a header map's lines. */
    final HeadBuffer scratch = new HeadBuffer();
    /** The last scan of a header map that cannot change (reused while the handler returns that same map). */
    HeaderScan lastScan;
    /** The last HTTP/1.1 head of a fixed-size response, and the last String body's bytes. */
    final FixedResponse fixed = new FixedResponse();

    private LoopState() {}

    /** The calling thread's state (the event loop's, for every caller in this package). */
    static LoopState get() {
        return STATE.get();
    }
}
