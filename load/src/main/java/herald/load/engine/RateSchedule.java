package herald.load.engine;

/**
 * An open-loop rate schedule as piecewise phases, each a constant rate or a linear ramp. The intended
 * time of request {@code k} (0-based, over all workers) is the time at which the cumulative count
 * {@code N(t) = integral of rate} reaches {@code k}; the run sends every request with {@code t_k < end}.
 * For one constant phase this is wrk2's {@code t_k = k / rate}; phases do not restart the count, so a
 * fractional share of a request carries over a phase boundary. Immutable and thread-safe.
 */
public final class RateSchedule {
  /** Counts within this of an integer are that integer (absorbs rate x duration rounding, e.g. 7.5 x 0.4). */
  static final double EPSILON = 1e-6;

  private final double[] from;
  private final double[] to;
  private final double[] seconds;
  private final double[] startSeconds;
  private final double[] countAtStart;
  private final long[] firstRequest;
  private final long[] startNanos;
  private final long total;
  private final long durationNanos;

  /**
   * Phase {@code i} runs {@code seconds[i]} seconds, its rate going linearly from {@code from[i]} to
   * {@code to[i]} requests/s (equal for a constant step).
   */
  public RateSchedule(double[] from, double[] to, double[] seconds) {
    int n = from.length;
    if (n == 0 || to.length != n || seconds.length != n) throw new IllegalArgumentException("phases: " + n);
    this.from = from.clone();
    this.to = to.clone();
    this.seconds = seconds.clone();
    this.startSeconds = new double[n + 1];
    this.countAtStart = new double[n + 1];
    this.firstRequest = new long[n + 1];
    this.startNanos = new long[n + 1];
    for (int i = 0; i < n; i++) {
      if (!(seconds[i] > 0) || !(from[i] >= 0) || !(to[i] >= 0) || !(from[i] + to[i] > 0) || Double.isInfinite(from[i] + to[i] + seconds[i])) {
        throw new IllegalArgumentException("phase " + i + ": rate " + from[i] + ".." + to[i] + " over " + seconds[i] + " s");
      }
      startSeconds[i + 1] = startSeconds[i] + seconds[i];
      countAtStart[i + 1] = countAtStart[i] + seconds[i] * (from[i] + to[i]) / 2.0;
      firstRequest[i + 1] = ceilCount(countAtStart[i + 1]);
      startNanos[i + 1] = Math.round(startSeconds[i + 1] * 1e9);
    }
    this.total = firstRequest[n];
    this.durationNanos = startNanos[n];
  }

  /** One constant phase of {@code rate} requests/s for {@code seconds}. */
  public static RateSchedule constant(double rate, double seconds) {
    return new RateSchedule(new double[] {rate}, new double[] {rate}, new double[] {seconds});
  }

  private static long ceilCount(double c) {
    return (long) Math.ceil(c - EPSILON);
  }

  /** Number of phases. */
  public int phases() {
    return from.length;
  }

  /** Requests the whole schedule intends: those with {@code t_k < end}. */
  public long total() {
    return total;
  }

  /** Length of the schedule in nanoseconds. */
  public long durationNanos() {
    return durationNanos;
  }

  /** Offset of phase {@code i}'s start from the schedule's start, in nanoseconds ({@code i = phases()}: the end). */
  public long phaseStartNanos(int i) {
    return startNanos[i];
  }

  /** The first request (global index) intended in phase {@code i}; {@code i = phases()} gives {@link #total()}. */
  public long firstRequest(int i) {
    return firstRequest[i];
  }

  /** The cumulative intended count {@code N(t)} at {@code t} seconds from the start (clamped to the schedule). */
  public double cumulative(double t) {
    if (t <= 0) return 0;
    int n = from.length;
    if (t >= startSeconds[n]) return countAtStart[n];
    int i = phaseAtSeconds(t);
    double x = t - startSeconds[i];
    double slope = (to[i] - from[i]) / seconds[i];
    return countAtStart[i] + from[i] * x + slope * x * x / 2.0;
  }

  private int phaseAtSeconds(double t) {
    int lo = 0, hi = from.length - 1;
    while (lo < hi) {
      int mid = (lo + hi + 1) >>> 1;
      if (startSeconds[mid] <= t) lo = mid; else hi = mid - 1;
    }
    return lo;
  }

  /** The phase whose time span holds {@code offsetNanos} from the start (the last phase after the end). */
  public int phaseAtNanos(long offsetNanos) {
    return lastAtMost(startNanos, offsetNanos);
  }

  /** The phase request {@code k} belongs to ({@code 0 <= k < total()}). */
  public int phaseOf(long k) {
    return lastAtMost(firstRequest, k);
  }

  /**
   * The last phase {@code i} with {@code starts[i] <= v} (phase 0 when none; {@code starts} non-decreasing):
   * a binary search whose steps add a sign bit instead of branching, so its compiled code has no branch that
   * a change of phase takes for the first time (the warm-up is phase 0, the recorded window phase 1: a branch
   * compiled during the warm-up as never taken was deoptimised when the window began).
   */
  private int lastAtMost(long[] starts, long v) {
    int lo = 0;
    for (int len = from.length; len > 1; ) {
      int half = len >>> 1;
      lo += half & (int) ((starts[lo + half] - v - 1) >> 63);
      len -= half;
    }
    return lo;
  }

  /** The intended time of request {@code k} in seconds from the start: the {@code t} where {@code N(t) = k}. */
  public double intendedSeconds(long k) {
    // Called for every request a worker sends: written without a branch that the window's first request takes
    // for the first time (it starts phase 1, at x = 0 when the warm-up's count is whole: Math.max(0.0, x)
    // then took a path of its own, and its deoptimisation fell inside the window). So the clamps below work on
    // the bits of non-negative doubles, whose order as longs is their order as numbers.
    int i = phaseOf(k);
    double x = atLeastZero(k - countAtStart[i]);
    double r0 = from[i];
    double slope = (to[i] - from[i]) / seconds[i];
    // r0 t + slope t^2 / 2 = x, in the form without cancellation for small slopes and without a branch per
    // case: for a constant phase (slope 0) it is x / r0 exactly (sqrt(r0 * r0) == r0 in IEEE arithmetic); the
    // denominator is 0 only for x = 0 at the start of a ramp from 0, where adding MIN_VALUE makes dt 0 (to any
    // other denominator it adds nothing)
    double dt = 2 * x / (r0 + Math.sqrt(atLeastZero(r0 * r0 + 2 * slope * x)) + Double.MIN_VALUE);
    return startSeconds[i] + smaller(dt, seconds[i]);
  }

  /** {@code max(0, v)} for a number that is not NaN (-0.0 gives +0.0), without a branch. */
  private static double atLeastZero(double v) {
    long bits = Double.doubleToRawLongBits(v);
    return Double.longBitsToDouble(bits & ~(bits >> 63));
  }

  /** {@code min(a, b)} of two non-negative numbers, without a branch. */
  private static double smaller(double a, double b) {
    long x = Double.doubleToRawLongBits(a), y = Double.doubleToRawLongBits(b), d = x - y;
    return Double.longBitsToDouble(y + (d & (d >> 63)));
  }

  /** The intended time of request {@code k} in nanoseconds from the start (rounded to the nearest). */
  public long intendedNanos(long k) {
    return Math.round(intendedSeconds(k) * 1e9);
  }
}
