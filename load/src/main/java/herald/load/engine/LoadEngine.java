package herald.load.engine;

import herald.load.client.ConnectFailure;
import herald.load.client.ErrorKind;
import herald.load.client.Transport;
import io.netty.channel.EventLoopGroup;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;

/**
 * Runs one load test: spreads connections and rate over worker event loops, connects, starts every worker
 * on one shared schedule, and exposes interval histograms (microseconds) and counters while it runs.
 */
public final class LoadEngine implements AutoCloseable {
  private final EngineConfig cfg;
  private final EventLoopGroup group;
  private final Worker[] workers;
  private volatile long startNanos, measureFromNanos, endNanos;

  public LoadEngine(EngineConfig cfg) {
    this.cfg = cfg;
    this.group = Transport.group(cfg.threads);
    this.workers = new Worker[cfg.threads];
    int base = cfg.connections / cfg.threads, extra = cfg.connections % cfg.threads;
    for (int i = 0; i < cfg.threads; i++) {
      int conns = base + (i < extra ? 1 : 0);
      workers[i] = new Worker(i, cfg.threads, group.next(), cfg, conns);
    }
  }

  /**
   * Connects (waiting at most the request timeout), then starts the schedule. The returned future completes
   * when every worker has stopped issuing and drained (or timed out) its requests in flight.
   */
  public CompletableFuture<Void> start() {
    CompletableFuture<?>[] conns = new CompletableFuture<?>[workers.length];
    for (int i = 0; i < workers.length; i++) conns[i] = workers[i].connect();
    try {
      CompletableFuture.allOf(conns).get(Math.max(1, cfg.timeoutNanos / 1_000_000), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      // some connections still pending: start anyway, their requests queue and show as latency or errors
    }
    long now = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1);
    startNanos = now;
    measureFromNanos = now + cfg.warmupNanos;
    endNanos = measureFromNanos + cfg.durationNanos;
    for (Worker w : workers) w.begin(startNanos, measureFromNanos, endNanos);
    CompletableFuture<?>[] done = new CompletableFuture<?>[workers.length];
    for (int i = 0; i < workers.length; i++) done[i] = workers[i].done;
    return CompletableFuture.allOf(done);
  }

  /** Stops issuing requests now; the future from {@link #start()} completes once in-flight ones are done. */
  public void stop() {
    long now = System.nanoTime();
    if (now < endNanos) endNanos = Math.max(now, measureFromNanos);
    for (Worker w : workers) w.stop();
  }

  /** System.nanoTime() of the first intended send. */
  public long startNanos() { return startNanos; }

  /** System.nanoTime() from which requests are recorded (after warm-up). */
  public long measureFromNanos() { return measureFromNanos; }

  /** System.nanoTime() at which issuing stops (earlier after {@link #stop()}). */
  public long endNanos() { return endNanos; }

  /**
   * A snapshot of every step's figures so far (RATE mode; null in MAX mode), read on each worker's event
   * loop so it is consistent per worker. Waits at most 10 s per worker; call before {@link #close()}.
   */
  public StepStats steps() throws Exception {
    if (cfg.schedule == null) return null;
    StepStats into = new StepStats(cfg.schedule.phases());
    for (Worker w : workers) w.addSteps(into).get(10, TimeUnit.SECONDS);
    return into;
  }

  /** The schedule of a RATE run (warm-up phases first), null in MAX mode. */
  public RateSchedule schedule() { return cfg.schedule; }

  /** Adds every worker's latency and service-time histograms recorded since the previous call. */
  public void collect(Histogram latencyInto, Histogram serviceInto) {
    for (Worker w : workers) w.recorders.collect(Recorders.MEASURED, latencyInto, serviceInto);
  }

  /**
   * Like {@link #collect}, for the responses to requests intended outside the recorded window (the warm-up):
   * figures no result holds, which a caller may put through the same code as the measured ones so that the JIT
   * has compiled that code before the window starts.
   */
  public void collectUnmeasured(Histogram latencyInto, Histogram serviceInto) {
    for (Worker w : workers) w.recorders.collect(Recorders.UNMEASURED, latencyInto, serviceInto);
  }

  /**
   * How busy each worker's event loop thread was in the recorded window: its CPU time over the window's wall
   * time (0 to 1; NaN for a worker that did not reach the window or when the JVM does not measure thread CPU
   * time). A thread near 1 queues requests and responses itself, and that queueing is part of what it measures.
   * Read after the future from {@link #start()} completed.
   */
  public double[] ioBusy() {
    double[] busy = new double[workers.length];
    for (int i = 0; i < workers.length; i++) busy[i] = workers[i].windowCpu.share();
    return busy;
  }

  /** Responses recorded so far. */
  public long completed() {
    long n = 0;
    for (Worker w : workers) n += w.recorders.completed;
    return n;
  }

  /** Requests issued so far (including warm-up). */
  public long issued() {
    long n = 0;
    for (Worker w : workers) n += w.issued;
    return n;
  }

  /** Requests that were due by the end but never sent for want of a free connection. */
  public long backlog() {
    long n = 0;
    for (Worker w : workers) n += w.backlog;
    return n;
  }

  /** Failed connect attempts that carried no request (retries every 20 ms count each). */
  public long connectFailures() {
    long n = 0;
    for (Worker w : workers) n += w.connectFailures;
    return n;
  }

  /** Failed connect attempts (carrying a request or not) whose cause was of kind {@code why}. */
  public long connectFailures(ConnectFailure why) {
    long n = 0;
    for (Worker w : workers) n += w.connectCauses[why.ordinal()];
    return n;
  }

  /** The message of a connect failure of kind {@link ConnectFailure#OTHER}, or null when there was none. */
  public String otherConnectError() {
    for (Worker w : workers) if (w.otherConnectError != null) return w.otherConnectError;
    return null;
  }

  /** The TLS protocol and cipher suite negotiated ("TLSv1.3 TLS_AES_128_GCM_SHA256"), or null without TLS. */
  public String tlsSession() {
    for (Worker w : workers) if (w.tlsSession != null) return w.tlsSession;
    return null;
  }

  /** Errors of one kind so far. */
  public long errors(ErrorKind kind) {
    long n = 0;
    for (Worker w : workers) n += w.errors[kind.ordinal()];
    return n;
  }

  /** Response counts by status code (index = status), summed over workers. */
  public long[] statusCounts() {
    long[] all = new long[600];
    for (Worker w : workers) for (int i = 0; i < all.length; i++) all[i] += w.recorders.statusCounts[i];
    return all;
  }

  @Override
  public void close() {
    group.shutdownGracefully(0, 200, TimeUnit.MILLISECONDS).syncUninterruptibly();
  }
}
