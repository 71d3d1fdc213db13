package herald.load.engine;

/** The validated settings of one engine run (built by herald.load from its option map). */
public final class EngineConfig {
  /** Open-loop constant rate, or closed-loop as fast as possible. */
  public enum Mode { RATE, MAX }

  public final Mode mode;
  public final String host;
  public final int port;
  public final int connections;
  public final int threads;
  /** Requests per second over all connections (RATE mode). */
  public final double rate;
  public final long warmupNanos;
  public final long durationNanos;
  public final long timeoutNanos;
  public final boolean newConnectionPerRequest;
  public final RequestSource source;

  public EngineConfig(Mode mode, String host, int port, int connections, int threads, double rate,
                      long warmupNanos, long durationNanos, long timeoutNanos, boolean newConnectionPerRequest,
                      RequestSource source) {
    if (connections < 1) throw new IllegalArgumentException("connections must be >= 1: " + connections);
    if (threads < 1) throw new IllegalArgumentException("threads must be >= 1: " + threads);
    if (mode == Mode.RATE && !(rate > 0)) throw new IllegalArgumentException("rate must be > 0: " + rate);
    if (durationNanos <= 0) throw new IllegalArgumentException("duration must be > 0");
    this.mode = mode;
    this.host = host;
    this.port = port;
    this.connections = connections;
    this.threads = Math.min(threads, connections);
    this.rate = rate;
    this.warmupNanos = Math.max(0, warmupNanos);
    this.durationNanos = durationNanos;
    this.timeoutNanos = timeoutNanos;
    this.newConnectionPerRequest = newConnectionPerRequest;
    this.source = source;
  }
}
