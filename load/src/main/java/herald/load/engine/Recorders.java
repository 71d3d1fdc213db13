package herald.load.engine;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.SingleWriterRecorder;

/**
 * One worker's latency and service-time recorders and status counts, in two sets: requests intended inside the
 * recorded window ({@link #MEASURED}) and outside it ({@link #UNMEASURED}: the warm-up, or after the end). Every
 * response goes through the same code whichever set it lands in, so the JIT compiles one path during the warm-up
 * and nothing changes for it when the window starts (a branch never taken in the warm-up was compiled as a trap,
 * and its deoptimisation and recompilation fell inside the window). Written on the worker's event loop only;
 * {@link #collect} and the volatile count are read from other threads.
 */
final class Recorders {
  static final int MEASURED = 0, UNMEASURED = 1;
  private final SingleWriterRecorder[] latency = {new SingleWriterRecorder(3), new SingleWriterRecorder(3)};
  private final SingleWriterRecorder[] service = {new SingleWriterRecorder(3), new SingleWriterRecorder(3)};
  private final Histogram[] reuseLatency = new Histogram[2], reuseService = new Histogram[2];
  /** Response counts by status code (index = status) of measured requests. */
  final long[] statusCounts = new long[600];
  private final long[][] statusBy = {statusCounts, new long[600]};
  /** Responses to measured requests. */
  volatile long completed;
  private long measureFrom, end;

  /** The recorded window: requests intended in [measureFrom, end) (nanoTime) are measured. */
  void window(long measureFrom, long end) {
    this.measureFrom = measureFrom;
    this.end = end;
  }

  /** 1 when {@code intended} is outside the recorded window, else 0: the sign bit, no branch. */
  private int unmeasured(long intended) {
    return (int) (((intended - measureFrom) | (end - 1 - intended)) >>> 63);
  }

  /** Records one response: its latency from the intended time and its service time, in microseconds. */
  void record(long intended, long latencyMicros, long serviceMicros, int status) {
    int k = unmeasured(intended);
    latency[k].recordValue(latencyMicros);
    service[k].recordValue(serviceMicros);
    statusBy[k][Math.min(599, Math.max(0, status))]++;
    completed += k ^ 1;
  }

  /**
   * Adds the interval histograms (since the last call) of requests intended inside the window ({@code which} =
   * {@link #MEASURED}) or outside it ({@link #UNMEASURED}) to the given ones.
   */
  void collect(int which, Histogram latencyInto, Histogram serviceInto) {
    reuseLatency[which] = latency[which].getIntervalHistogram(reuseLatency[which]);
    reuseService[which] = service[which].getIntervalHistogram(reuseService[which]);
    latencyInto.add(reuseLatency[which]);
    serviceInto.add(reuseService[which]);
  }
}
