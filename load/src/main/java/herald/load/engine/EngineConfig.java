package herald.load.engine;

import herald.load.client.Target;

/** The validated settings of one engine run (built by herald.load from its option map). */
public final class EngineConfig {
  /** Open-loop rate schedule, or closed-loop as fast as possible. */
  public enum Mode { RATE, MAX }

  public final Mode mode;
  /** Where and how to connect (address, TLS, HTTP/1.1 or HTTP/2 and its streams per connection). */
  public final Target target;
  /** Connections; over HTTP/2 each carries {@code target.lanesPerConnection()} requests at once. */
  public final int connections;
  public final int threads;
  /** The intended sends (RATE mode), warm-up phases first; null in MAX mode. */
  public final RateSchedule schedule;
  /** Leading phases of {@link #schedule} that are warm-up (sent, not recorded). */
  public final int warmupPhases;
  public final long warmupNanos;
  public final long durationNanos;
  public final long timeoutNanos;
  public final boolean newConnectionPerRequest;
  public final RequestSource source;
  /** Optional, may be null. */
  public final SendListener sendListener;

  /** A RATE run: warm-up and measured time come from the schedule's phases. */
  public static EngineConfig rate(Target target, int connections, int threads, RateSchedule schedule,
                                  int warmupPhases, long timeoutNanos, boolean newConnectionPerRequest,
                                  RequestSource source, SendListener sendListener) {
    if (schedule == null) throw new IllegalArgumentException("a rate run needs a schedule");
    if (warmupPhases < 0 || warmupPhases >= schedule.phases()) {
      throw new IllegalArgumentException("warm-up phases " + warmupPhases + " of " + schedule.phases());
    }
    long warmup = schedule.phaseStartNanos(warmupPhases);
    return new EngineConfig(Mode.RATE, target, connections, threads, schedule, warmupPhases, warmup,
        schedule.durationNanos() - warmup, timeoutNanos, newConnectionPerRequest, source, sendListener);
  }

  /** A MAX run (closed loop) of {@code durationNanos} after {@code warmupNanos}. */
  public static EngineConfig max(Target target, int connections, int threads, long warmupNanos,
                                 long durationNanos, long timeoutNanos, boolean newConnectionPerRequest,
                                 RequestSource source, SendListener sendListener) {
    return new EngineConfig(Mode.MAX, target, connections, threads, null, 0, warmupNanos, durationNanos,
        timeoutNanos, newConnectionPerRequest, source, sendListener);
  }

  private EngineConfig(Mode mode, Target target, int connections, int threads, RateSchedule schedule,
                       int warmupPhases, long warmupNanos, long durationNanos, long timeoutNanos,
                       boolean newConnectionPerRequest, RequestSource source, SendListener sendListener) {
    if (connections < 1) throw new IllegalArgumentException("connections must be >= 1: " + connections);
    if (threads < 1) throw new IllegalArgumentException("threads must be >= 1: " + threads);
    if (durationNanos <= 0) throw new IllegalArgumentException("duration must be > 0");
    this.mode = mode;
    if (target == null) throw new IllegalArgumentException("a run needs a target");
    this.target = target;
    this.connections = connections;
    this.threads = Math.min(threads, connections);
    this.schedule = schedule;
    this.warmupPhases = warmupPhases;
    this.warmupNanos = Math.max(0, warmupNanos);
    this.durationNanos = durationNanos;
    this.timeoutNanos = timeoutNanos;
    this.newConnectionPerRequest = newConnectionPerRequest;
    this.source = source;
    this.sendListener = sendListener;
  }
}
