package herald.load.engine;

/** Supplies the bytes of each request a worker sends; called on the worker's event loop. */
public interface RequestSource {
  /** The encoded request number {@code seq} of worker {@code worker}. */
  byte[] request(int worker, long seq);

  /** True when request {@code seq} is a HEAD request (its response has no body). */
  default boolean head(int worker, long seq) {
    return false;
  }

  /** True when every call returns the same bytes, so the engine may encode once and share a buffer. */
  default boolean constant() {
    return false;
  }
}
