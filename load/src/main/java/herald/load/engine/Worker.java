package herald.load.engine;

import herald.load.client.ConnectFailure;
import herald.load.client.ConnectionListener;
import herald.load.client.ErrorKind;
import herald.load.client.Lane;
import herald.load.client.PreparedRequest;
import herald.load.engine.Slots.Slot;
import io.netty.buffer.ByteBuf;
import io.netty.channel.EventLoop;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * One event loop's share of a run: its request slots (one per connection over HTTP/1.1, one per stream of
 * each connection over HTTP/2), its part of the rate and its recorders. All state is touched on the loop
 * only, except the recorders' interval reads and the volatile counters.
 */
final class Worker implements ConnectionListener {
  private static final long RECONNECT_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
  private static final long BACKLOG_RECHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
  /** A request sent by a freed connection this late after its intended time waited for that connection. */
  private static final long CONNECTION_WAIT_NANOS = TimeUnit.MICROSECONDS.toNanos(100);
  /** A request sent this late after its intended time while a connection was free was late because the generator was. */
  private static final long LATE_SEND_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

  final int index;
  private final EventLoop loop;
  private final EngineConfig cfg;
  private final Slots slotSet;
  private final Slot[] slots;
  private final java.util.function.BooleanSupplier stopped = () -> this.stopping;
  private final ArrayDeque<Slot> idle = new ArrayDeque<>();
  private final RateSchedule schedule;
  private final StepStats steps;
  private final SendListener sendListener;
  private final int stride;
  private PreparedRequest shared;
  /** Where responses are recorded: by whether their request's intended time fell inside the window. */
  final Recorders recorders = new Recorders();
  private final Runnable tickTask = this::tick;
  final long[] errors = new long[ErrorKind.values().length];
  /** Failed connect attempts (each retry counts) that carried no request: shown apart from request errors. */
  long connectFailures;
  /** Failed connect attempts (with or without a request) by {@link ConnectFailure} ordinal. */
  final long[] connectCauses = new long[ConnectFailure.values().length];
  /** The TLS protocol and cipher of the first connection made over TLS, or null. */
  volatile String tlsSession;
  /** The message of the last connect failure of kind OTHER, TLS or PROTOCOL, or null. */
  volatile String otherConnectError;
  volatile long issued;
  volatile long backlog;
  /** How busy this worker's event loop thread was from the recorded window's start until issuing stopped. */
  final LoopCpu windowCpu = new LoopCpu();
  private long start, measureFrom, end, planned, nextIntended;
  private boolean stopping;
  private int connectsPending;
  private final CompletableFuture<Void> connected = new CompletableFuture<>();
  final CompletableFuture<Void> done = new CompletableFuture<>();

  /**
   * Worker {@code index} of {@code stride} takes the global schedule's requests index, index + stride, ...
   * so that the total over workers is exactly the schedule's whatever the thread count.
   */
  Worker(int index, int stride, EventLoop loop, EngineConfig cfg, int connections) {
    this.stride = stride;
    this.index = index;
    this.loop = loop;
    this.cfg = cfg;
    int lanes = cfg.newConnectionPerRequest ? 1 : cfg.target.lanesPerConnection();
    this.slotSet = new Slots(loop, cfg.target, this, connections, lanes);
    this.slots = slotSet.all;
    this.schedule = cfg.mode == EngineConfig.Mode.RATE ? cfg.schedule : null;
    this.steps = schedule == null ? null : new StepStats(schedule.phases());
    this.sendListener = cfg.sendListener;
  }

  /** How many of this worker's requests are among the global requests 0 .. k-1. */
  private long countBelow(long k) {
    return k <= index ? 0 : (k - index + stride - 1) / stride;
  }

  private long globalOf(long seq) {
    return seq * stride + index;
  }

  private long intendedOf(long seq) {
    return start + schedule.intendedNanos(globalOf(seq));
  }

  /** Opens every connection (keep-alive mode); completes when each one connected or failed once. */
  CompletableFuture<Void> connect() {
    loop.execute(() -> {
      if (cfg.source.constant()) {
        byte[] bytes = cfg.source.request(index, 0);
        shared = PreparedRequest.shared(bytes, cfg.source.head(index, 0));
      }
      if (cfg.newConnectionPerRequest) {
        for (Slot s : slots) idle.add(s);
        connected.complete(null);
      } else {
        connectsPending = slots.length;
        for (int g = 0; g < slotSet.groups(); g++) slotSet.open(g);
      }
    });
    return connected;
  }

  /** Starts sending at {@code startNanos}; requests intended before {@code measureFromNanos} are not recorded. */
  void begin(long startNanos, long measureFromNanos, long endNanos) {
    loop.execute(() -> {
      start = startNanos;
      measureFrom = measureFromNanos;
      end = endNanos;
      recorders.window(measureFrom, end);
      if (schedule != null) {
        planned = countBelow(schedule.total());
        for (int i = 0; i < schedule.phases(); i++) {
          steps.planned[i] = countBelow(schedule.firstRequest(i + 1)) - countBelow(schedule.firstRequest(i));
        }
        nextIntended = planned > 0 ? intendedOf(0) : Long.MAX_VALUE;
        if (planned > 0) loop.schedule(tickTask, Math.max(0, nextIntended - System.nanoTime()), TimeUnit.NANOSECONDS);
      } else {
        planned = Long.MAX_VALUE;
        loop.schedule(this::fill, Math.max(0, start - System.nanoTime()), TimeUnit.NANOSECONDS);
      }
      loop.schedule(() -> { if (!stopping) windowCpu.open(); }, Math.max(0, measureFrom - System.nanoTime()), TimeUnit.NANOSECONDS);
      loop.schedule(this::stopIssuing, Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
      long every = Math.max(TimeUnit.MILLISECONDS.toNanos(5), Math.min(cfg.timeoutNanos / 8, TimeUnit.MILLISECONDS.toNanos(100)));
      loop.scheduleAtFixedRate(this::checkTimeouts, every, every, TimeUnit.NANOSECONDS);
    });
  }

  /** Stops issuing now (Ctrl-C); in-flight requests may still complete. */
  void stop() {
    loop.execute(this::stopIssuing);
  }

  /** Adds this worker's per-step figures into {@code into}; runs on the worker's event loop. */
  CompletableFuture<Void> addSteps(StepStats into) {
    CompletableFuture<Void> f = new CompletableFuture<>();
    loop.execute(() -> {
      try {
        if (steps != null) steps.addTo(into);
        f.complete(null);
      } catch (Throwable t) {
        f.completeExceptionally(t);
      }
    });
    return f;
  }

  private void tick() {
    if (stopping) return;
    long now = System.nanoTime();
    dispatch(now, 0);
    if (issued >= planned) return;
    long delay = nextIntended > now ? nextIntended - now : BACKLOG_RECHECK_NANOS;
    loop.schedule(tickTask, delay, TimeUnit.NANOSECONDS);
  }

  /** How many of this worker's requests are intended at or before {@code t} (nanoTime). */
  private long dueAt(long t) {
    long lo = issued, hi = planned;   // requests before `issued` are due already
    while (lo < hi) {
      long mid = lo + (hi - lo) / 2;
      if (intendedOf(mid) <= t) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  /**
   * Sends every due request on a free connection; {@code starved} (1 or 0): called because a connection became
   * free when none was, so a late request waited for it (else a late request means the generator was late).
   * The counts are sums of sign bits, not branches: a first connection wait inside the window would otherwise
   * deoptimise this method there.
   */
  private void dispatch(long now, int starved) {
    while (issued < planned && nextIntended <= now && !idle.isEmpty()) {
      Slot s = idle.pollFirst();
      long seq = issued;
      long intended = nextIntended;
      issued = seq + 1;
      nextIntended = issued < planned ? intendedOf(issued) : Long.MAX_VALUE;
      int step = schedule.phaseOf(globalOf(seq));
      long lateBy = now - intended;
      int waited = starved & (int) ((CONNECTION_WAIT_NANOS - lateBy) >>> 63);
      steps.connectionWaits[step] += waited;
      steps.lateSends[step] += (waited ^ 1) & (int) ((LATE_SEND_NANOS - lateBy) >>> 63);
      steps.sent[step]++;
      steps.inFlight[step]++;
      s.step = step;
      send(s, intended, seq);
    }
  }

  private void fill() {
    while (!stopping && !idle.isEmpty()) {
      long seq = issued;
      issued = seq + 1;
      send(idle.pollFirst(), System.nanoTime(), seq);
    }
  }

  private void send(Slot s, long intended, long seq) {
    s.intended = intended;
    s.seq = seq * stride + index;
    s.busy = true;
    s.sent = System.nanoTime();
    if (sendListener != null) sendListener.onSend(s.seq, intended - start, s.sent - start);
    if (cfg.newConnectionPerRequest) {
      s.pending = true;
      slotSet.open(s.group);
    } else {
      write(s);
    }
  }

  private void write(Slot s) {
    if (shared != null) {
      s.conn.send(shared);
    } else {
      byte[] bytes = cfg.source.request(index, s.seq);
      s.conn.send(PreparedRequest.once(bytes, cfg.source.head(index, s.seq)));
    }
  }

  @Override
  public void onConnected(Lane c) {
    Slot s = (Slot) c.attachment();
    if (tlsSession == null && cfg.target.tls()) tlsSession = c.tlsSession();
    if (s.conn != c) return;
    if (s.pending) {
      s.pending = false;
      write(s);
      return;
    }
    if (connectsPending > 0 && --connectsPending == 0) connected.complete(null);
    makeIdle(s);
  }

  @Override
  public void onResponse(Lane c, int status, ByteBuf body, boolean keepAlive) {
    if (body != null) body.release();
    Slot s = (Slot) c.attachment();
    long now = System.nanoTime();
    if (steps != null && s.busy) steps.inFlight[s.step]--;
    // the same path for every response (see Recorders): the warm-up's land in the unmeasured recorders and counts,
    // and in the warm-up phase of the steps, which no result reads
    long lat = Math.max(0, (now - s.intended) / 1000), svc = Math.max(0, (now - s.sent) / 1000);
    recorders.record(s.intended, lat, svc, status);
    if (steps != null) {
      steps.record(s.step, lat, svc, status);
      if (now - start < schedule.durationNanos()) steps.answeredDuring[schedule.phaseAtNanos(now - start)]++;
    }
    s.busy = false;
    if (cfg.newConnectionPerRequest) {
      s.conn = null;
      if (keepAlive) c.close();
      makeIdle(s);
    } else if (keepAlive) {
      makeIdle(s);
    } else {
      s.conn = null;
      slotSet.reopen(s, 0, stopped);
    }
    if (stopping) maybeFinish();
  }

  @Override
  public void onRequestFailed(Lane c, ErrorKind kind, Throwable cause) {
    Slot s = (Slot) c.attachment();
    if (s.conn != c || !s.busy) return;
    s.busy = false;
    if (steps != null) steps.inFlight[s.step]--;
    if (s.intended >= measureFrom) {
      errors[kind.ordinal()]++;
      if (steps != null) steps.errors[s.step][kind.ordinal()]++;
    }
    makeIdle(s);
  }

  @Override
  public void onClosed(Lane c, boolean inFlight, ErrorKind kind, Throwable cause) {
    Slot s = (Slot) c.attachment();
    if (s.conn != c) return;
    s.conn = null;
    boolean wasBusy = s.busy;
    s.busy = false;
    s.pending = false;
    if (steps != null && wasBusy) steps.inFlight[s.step]--;
    // a connect aborted by the generator closing the channel (at the end of the run) is no failure of the target
    boolean aborted = kind == ErrorKind.CONNECT && cause instanceof ClosedChannelException;
    // a connection's failed connect is reported to each of its lanes: count it once, on the first
    boolean counted = c.index() == 0;
    if (kind == ErrorKind.CONNECT && !aborted && counted) {
      ConnectFailure why = ConnectFailure.of(cause);
      connectCauses[why.ordinal()]++;
      if (why == ConnectFailure.OTHER || why == ConnectFailure.TLS || why == ConnectFailure.PROTOCOL) {
        otherConnectError = ConnectFailure.detail(cause);
      }
    }
    if (kind == ErrorKind.CONNECT && !inFlight && !wasBusy) {
      if (!aborted && counted) connectFailures++;
    } else if ((inFlight || wasBusy) && s.intended >= measureFrom) {
      errors[kind.ordinal()]++;
      if (steps != null) {
        int step = wasBusy ? s.step : schedule.phaseAtNanos(System.nanoTime() - start);
        steps.errors[step][kind.ordinal()]++;
      }
    }
    if (connectsPending > 0 && kind == ErrorKind.CONNECT && --connectsPending == 0) connected.complete(null);
    idle.remove(s);
    if (stopping) {
      maybeFinish();
    } else if (cfg.newConnectionPerRequest) {
      loop.schedule(() -> makeIdle(s), kind == ErrorKind.CONNECT ? RECONNECT_BACKOFF_NANOS : 0, TimeUnit.NANOSECONDS);
    } else {
      slotSet.reopen(s, kind == ErrorKind.CONNECT ? RECONNECT_BACKOFF_NANOS : 0, stopped);
    }
  }

  private void makeIdle(Slot s) {
    if (stopping) { maybeFinish(); return; }
    if (cfg.mode == EngineConfig.Mode.MAX) {
      if (start != 0 && System.nanoTime() >= start) {
        long seq = issued;
        issued = seq + 1;
        send(s, System.nanoTime(), seq);
      } else {
        idle.addLast(s);
      }
    } else {
      int starved = (idle.size() - 1) >>> 31;  // 1 when no connection was free
      idle.addLast(s);
      dispatch(System.nanoTime(), starved);
    }
  }

  private void checkTimeouts() {
    long now = System.nanoTime();
    for (Slot s : slots) {
      if (s.busy && s.conn != null && now - s.sent > cfg.timeoutNanos) s.conn.fail(ErrorKind.TIMEOUT, null);
    }
    if (stopping && now - end > cfg.timeoutNanos) finish();
  }

  private void stopIssuing() {
    if (stopping) return;
    stopping = true;
    long now = System.nanoTime();
    windowCpu.close();
    if (schedule != null) {
      long due = dueAt(Math.min(now, end));
      backlog = Math.max(0, due - issued);
      for (int i = 0; i < schedule.phases() && backlog > 0; i++) {
        long a = Math.max(issued, countBelow(schedule.firstRequest(i)));
        long b = Math.min(due, countBelow(schedule.firstRequest(i + 1)));
        if (b > a) steps.unsent[i] += b - a;
      }
    }
    if (now < end) {
      end = now;
      recorders.window(measureFrom, end);
    }
    maybeFinish();
  }

  private void maybeFinish() {
    for (Slot s : slots) if (s.busy) return;
    finish();
  }

  private void finish() {
    if (done.isDone()) return;
    for (Slot s : slots) {
      if (s.conn != null) s.conn.close();
    }
    if (shared != null) {
      shared.release();
      shared = null;
    }
    connected.complete(null);
    done.complete(null);
  }
}
