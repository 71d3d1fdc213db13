package herald.load.engine;

import herald.load.client.ConnectionListener;
import herald.load.client.ErrorKind;
import herald.load.client.HttpConnection;
import herald.load.client.Transport;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.EventLoop;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.SingleWriterRecorder;

/**
 * One event loop's share of a run: its connections ("slots"), its part of the rate and its recorders. All
 * state is touched on the loop only, except the recorders' interval reads and the volatile counters.
 */
final class Worker implements ConnectionListener {
  private static final long RECONNECT_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
  private static final long BACKLOG_RECHECK_NANOS = TimeUnit.MILLISECONDS.toNanos(1);

  static final class Slot {
    HttpConnection conn;
    long intended;
    long sent;
    long seq;
    boolean busy;
    boolean pending;
  }

  final int index;
  private final EventLoop loop;
  private final EngineConfig cfg;
  private final Bootstrap bootstrap;
  private final Slot[] slots;
  private final ArrayDeque<Slot> idle = new ArrayDeque<>();
  private final double interval;
  private final double globalInterval;
  private final int stride;
  private ByteBuf shared;
  private ByteBuf sharedRaw;
  final SingleWriterRecorder latency = new SingleWriterRecorder(3);
  final SingleWriterRecorder service = new SingleWriterRecorder(3);
  private Histogram reuseLatency, reuseService;
  final long[] statusCounts = new long[600];
  final long[] errors = new long[ErrorKind.values().length];
  volatile long completed;
  volatile long issued;
  volatile long backlog;
  private long start, measureFrom, end, planned;
  private boolean stopping;
  private int connectsPending;
  private final CompletableFuture<Void> connected = new CompletableFuture<>();
  final CompletableFuture<Void> done = new CompletableFuture<>();

  /**
   * Worker {@code index} of {@code stride} takes the global schedule's requests index, index + stride, ...
   * so that the total over workers is exactly rate x duration whatever the thread count.
   */
  Worker(int index, int stride, EventLoop loop, EngineConfig cfg, int connections) {
    this.stride = stride;
    this.index = index;
    this.loop = loop;
    this.cfg = cfg;
    this.bootstrap = Transport.bootstrap((int) Math.max(1, Math.min(Integer.MAX_VALUE, cfg.timeoutNanos / 1_000_000)))
        .group(loop);
    this.slots = new Slot[connections];
    for (int i = 0; i < connections; i++) slots[i] = new Slot();
    this.globalInterval = cfg.mode == EngineConfig.Mode.RATE ? 1e9 / cfg.rate : 0;
    this.interval = globalInterval * stride;
  }

  /** Opens every connection (keep-alive mode); completes when each one connected or failed once. */
  CompletableFuture<Void> connect() {
    loop.execute(() -> {
      if (cfg.source.constant()) {
        byte[] bytes = cfg.source.request(index, 0);
        sharedRaw = Unpooled.directBuffer(bytes.length).writeBytes(bytes);
        shared = Unpooled.unreleasableBuffer(sharedRaw);
      }
      if (cfg.newConnectionPerRequest) {
        for (Slot s : slots) idle.add(s);
        connected.complete(null);
      } else {
        connectsPending = slots.length;
        for (Slot s : slots) open(s);
      }
    });
    return connected;
  }

  /** Starts sending at {@code startNanos}; requests intended before {@code measureFromNanos} are not recorded. */
  void begin(long startNanos, long measureFromNanos, long endNanos) {
    loop.execute(() -> {
      start = startNanos + (long) (index * globalInterval);
      measureFrom = measureFromNanos;
      end = endNanos;
      if (cfg.mode == EngineConfig.Mode.RATE) {
        long total = (long) Math.ceil((endNanos - startNanos) / globalInterval - 1e-6);
        planned = Math.max(0, (total - index + stride - 1) / stride);
      } else {
        planned = Long.MAX_VALUE;
      }
      long first = Math.max(0, start - System.nanoTime());
      if (cfg.mode == EngineConfig.Mode.RATE) loop.schedule(this::tick, first, TimeUnit.NANOSECONDS);
      else loop.schedule(this::fill, first, TimeUnit.NANOSECONDS);
      loop.schedule(this::stopIssuing, Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
      long every = Math.max(TimeUnit.MILLISECONDS.toNanos(5), Math.min(cfg.timeoutNanos / 8, TimeUnit.MILLISECONDS.toNanos(100)));
      loop.scheduleAtFixedRate(this::checkTimeouts, every, every, TimeUnit.NANOSECONDS);
    });
  }

  /** Stops issuing now (Ctrl-C); in-flight requests may still complete. */
  void stop() {
    loop.execute(this::stopIssuing);
  }

  /** Adds this worker's interval histograms (since the last call) to the given ones. */
  void collect(Histogram latencyInto, Histogram serviceInto) {
    reuseLatency = latency.getIntervalHistogram(reuseLatency);
    reuseService = service.getIntervalHistogram(reuseService);
    latencyInto.add(reuseLatency);
    serviceInto.add(reuseService);
  }

  private void open(Slot s) {
    HttpConnection c = new HttpConnection(this, false, s);
    s.conn = c;
    ChannelFuture f = bootstrap.clone().handler(c).connect(cfg.host, cfg.port);
    f.addListener(r -> { if (!r.isSuccess()) c.connectFailed(r.cause()); });
  }

  private void tick() {
    if (stopping) return;
    long now = System.nanoTime();
    dispatch(now);
    if (issued >= planned) return;
    long next = start + (long) (issued * interval);
    long delay = next > now ? next - now : BACKLOG_RECHECK_NANOS;
    loop.schedule(this::tick, delay, TimeUnit.NANOSECONDS);
  }

  private long dueAt(long now) {
    if (now < start) return 0;
    return Math.min(planned, (long) ((now - start) / interval) + 1);
  }

  private void dispatch(long now) {
    long due = dueAt(now);
    while (issued < due && !idle.isEmpty()) {
      Slot s = idle.pollFirst();
      long seq = issued;
      issued = seq + 1;
      send(s, start + (long) (seq * interval), seq);
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
    if (cfg.newConnectionPerRequest) {
      s.pending = true;
      open(s);
    } else {
      write(s);
    }
  }

  private void write(Slot s) {
    ByteBuf req = shared != null ? shared.duplicate() : Unpooled.wrappedBuffer(cfg.source.request(index, s.seq));
    s.conn.send(req, cfg.source.head(index, s.seq));
  }

  @Override
  public void onConnected(HttpConnection c) {
    Slot s = (Slot) c.attachment;
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
  public void onResponse(HttpConnection c, int status, ByteBuf body, boolean keepAlive) {
    if (body != null) body.release();
    Slot s = (Slot) c.attachment;
    long now = System.nanoTime();
    if (s.intended >= measureFrom && s.intended < end) {
      latency.recordValue(Math.max(0, (now - s.intended) / 1000));
      service.recordValue(Math.max(0, (now - s.sent) / 1000));
      statusCounts[Math.min(599, Math.max(0, status))]++;
      completed++;
    }
    s.busy = false;
    if (cfg.newConnectionPerRequest) {
      s.conn = null;
      if (keepAlive) c.channel().close();
      makeIdle(s);
    } else if (keepAlive) {
      makeIdle(s);
    } else {
      s.conn = null;
      if (!stopping) open(s);
    }
    if (stopping) maybeFinish();
  }

  @Override
  public void onClosed(HttpConnection c, boolean inFlight, ErrorKind kind, Throwable cause) {
    Slot s = (Slot) c.attachment;
    if (s.conn != c) return;
    s.conn = null;
    boolean wasBusy = s.busy;
    s.busy = false;
    s.pending = false;
    if ((inFlight || wasBusy || kind == ErrorKind.CONNECT) && s.intended >= measureFrom) errors[kind.ordinal()]++;
    if (connectsPending > 0 && kind == ErrorKind.CONNECT && --connectsPending == 0) connected.complete(null);
    idle.remove(s);
    if (stopping) {
      maybeFinish();
    } else if (cfg.newConnectionPerRequest) {
      loop.schedule(() -> makeIdle(s), kind == ErrorKind.CONNECT ? RECONNECT_BACKOFF_NANOS : 0, TimeUnit.NANOSECONDS);
    } else {
      loop.schedule(() -> { if (!stopping && s.conn == null) open(s); },
          kind == ErrorKind.CONNECT ? RECONNECT_BACKOFF_NANOS : 0, TimeUnit.NANOSECONDS);
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
      idle.addLast(s);
      dispatch(System.nanoTime());
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
    if (cfg.mode == EngineConfig.Mode.RATE) backlog = Math.max(0, dueAt(Math.min(now, end)) - issued);
    if (now < end) end = now;
    maybeFinish();
  }

  private void maybeFinish() {
    for (Slot s : slots) if (s.busy) return;
    finish();
  }

  private void finish() {
    if (done.isDone()) return;
    for (Slot s : slots) {
      if (s.conn != null && s.conn.channel() != null) s.conn.channel().close();
    }
    if (sharedRaw != null) {
      sharedRaw.release();
      sharedRaw = null;
      shared = null;
    }
    connected.complete(null);
    done.complete(null);
  }
}
