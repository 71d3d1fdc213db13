package herald.http.bench;

/**
 * How long the machine itself keeps a running thread off its core: one thread spins reading the clock for a
 * while and counts the gaps between two readings (a gap is time the thread did not run: the hypervisor or the
 * kernel took the core). No server and no network are involved, so what it finds is the floor under any
 * latency measured on that core: a server that is stalled this long, at a rate its event loop serves at load
 * {@code u}, needs about {@code gap * u / (1 - u)} more to catch up.
 *
 * <p>Command line: {@code SECONDS [LABEL]}; spins one second unrecorded (the loop gets compiled), then
 * {@code SECONDS}, and prints one line: {@code jitter label=<label> seconds=<s> gaps_over_0.1ms=<n>
 * gaps_over_1ms=<n> gaps_over_5ms=<n> gaps_over_10ms=<n> max_ms=<x> stalled_pct=<x>}, where stalled_pct is the
 * share of the time lost in gaps over 0.1 ms. Pin it with taskset to the core to be measured.
 */
public final class MachineJitter {
  private static final long SMALL = 100_000L;
  private static final long MS = 1_000_000L;

  private MachineJitter() {}

  /** Gap counts over 0.1, 1, 5 and 10 ms, the longest gap and the time lost in gaps over 0.1 ms, in ns. */
  static final class Gaps {
    long over01;
    long over1;
    long over5;
    long over10;
    long maxNanos;
    long lostNanos;

    /** Counts one gap of {@code gap} ns (gaps under 0.1 ms are the loop's own pace: not counted). */
    void add(long gap) {
      if (gap < SMALL) {
        return;
      }
      over01++;
      lostNanos += gap;
      over1 += gap >= MS ? 1 : 0;
      over5 += gap >= 5 * MS ? 1 : 0;
      over10 += gap >= 10 * MS ? 1 : 0;
      maxNanos = Math.max(maxNanos, gap);
    }
  }

  /** Spins for {@code nanos} and counts the gaps between consecutive clock readings. */
  static Gaps measure(long nanos) {
    Gaps g = new Gaps();
    long prev = System.nanoTime();
    long end = prev + nanos;
    while (true) {
      long t = System.nanoTime();
      long gap = t - prev;
      prev = t;
      if (gap >= SMALL) {
        g.add(gap);
      }
      if (t >= end) {
        return g;
      }
    }
  }

  /** Runs the measurement; see the class comment for the arguments and the output. */
  public static void main(String[] args) {
    if (args.length < 1 || args.length > 2) {
      throw new IllegalArgumentException("usage: MachineJitter SECONDS [LABEL]");
    }
    double seconds = Double.parseDouble(args[0]);
    if (!(seconds > 0)) {
      throw new IllegalArgumentException("SECONDS must be positive, not " + args[0]);
    }
    String label = args.length > 1 ? args[1] : "-";
    measure(1_000_000_000L); // compiles the loop; not recorded
    long nanos = (long) (seconds * 1e9);
    Gaps g = measure(nanos);
    System.out.printf(java.util.Locale.ROOT,
        "jitter label=%s seconds=%s gaps_over_0.1ms=%d gaps_over_1ms=%d gaps_over_5ms=%d gaps_over_10ms=%d"
            + " max_ms=%.2f stalled_pct=%.2f%n",
        label, args[0], g.over01, g.over1, g.over5, g.over10, g.maxNanos / 1e6, 100.0 * g.lostNanos / nanos);
  }
}
