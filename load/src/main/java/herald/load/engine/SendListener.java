package herald.load.engine;

/** Told of every request a worker sends (for tests and tracing); called on the worker's event loop, so keep it cheap. */
public interface SendListener {
  /**
   * Request {@code request} (global index of the schedule; in max mode a per-worker count spread over workers)
   * was sent; {@code intendedNanos} and {@code sentNanos} are offsets from the run's first intended send.
   */
  void onSend(long request, long intendedNanos, long sentNanos);
}
