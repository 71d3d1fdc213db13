package herald.load.engine;

import java.lang.management.ManagementFactory;

/**
 * How busy one event loop thread was over a stretch of time: its CPU time over the wall time between {@link #open()}
 * and {@link #close()}, both called on that thread (it reads its own CPU time). Read from any thread after
 * {@link #close()}.
 */
final class LoopCpu {
  /** CPU time (ns) and System.nanoTime() at open and at close; -1 CPU time while not read. */
  private volatile long cpuFrom = -1, cpuTo = -1, wallFrom, wallTo;

  /** Starts the stretch (on the loop thread). */
  void open() {
    wallFrom = System.nanoTime();
    cpuFrom = threadCpuNanos();
  }

  /** Ends the stretch (on the loop thread); nothing when it never opened. */
  void close() {
    if (cpuFrom < 0) return;
    wallTo = System.nanoTime();
    cpuTo = threadCpuNanos();
  }

  /**
   * The thread's CPU time over the stretch's wall time, 0 to 1; NaN when the stretch did not open and close or the
   * JVM does not measure thread CPU time.
   */
  double share() {
    long wall = wallTo - wallFrom;
    return cpuFrom >= 0 && cpuTo >= 0 && wall > 0 ? Math.min(1.0, (double) (cpuTo - cpuFrom) / wall) : Double.NaN;
  }

  private static long threadCpuNanos() {
    return ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
  }
}
