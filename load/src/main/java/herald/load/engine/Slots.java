package herald.load.engine;

import herald.load.client.ConnectionListener;
import herald.load.client.Lane;
import herald.load.client.Target;
import io.netty.channel.EventLoop;
import java.util.concurrent.TimeUnit;

/**
 * A worker's request slots and the connections they share: slots [g x lanes, (g + 1) x lanes) are the lanes
 * of connection g (one slot per connection over HTTP/1.1, one per stream over HTTP/2). A connection is
 * reopened once every lane of it has left, at once or after a delay. Touched on the worker's loop only.
 */
final class Slots {
  /** One request at a time: its lane, and the request it carries. */
  static final class Slot {
    /** The connection group this slot's lane belongs to. */
    final int group;
    Lane conn;
    long intended;
    long sent;
    long seq;
    int step;
    boolean busy;
    boolean pending;

    Slot(int group) {
      this.group = group;
    }
  }

  /** Every slot, group by group. */
  final Slot[] all;
  private final int lanes;
  private final boolean[] reopening;
  private final EventLoop loop;
  private final Target target;
  private final ConnectionListener listener;

  Slots(EventLoop loop, Target target, ConnectionListener listener, int connections, int lanes) {
    this.loop = loop;
    this.target = target;
    this.listener = listener;
    this.lanes = lanes;
    this.all = new Slot[connections * lanes];
    for (int i = 0; i < all.length; i++) all[i] = new Slot(i / lanes);
    this.reopening = new boolean[connections];
  }

  /** The number of connections. */
  int groups() {
    return reopening.length;
  }

  /** Opens the connection of group {@code g}: one lane per slot, stored before connecting. */
  void open(int g) {
    int from = g * lanes;
    Object[] attachments = new Object[lanes];
    System.arraycopy(all, from, attachments, 0, lanes);
    Lane[] ls = target.newConnection(listener, false, attachments);
    for (int i = 0; i < lanes; i++) all[from + i].conn = ls[i];
    target.connect(loop, ls);
  }

  private boolean detached(int g) {
    for (int i = g * lanes, to = i + lanes; i < to; i++) if (all[i].conn != null) return false;
    return true;
  }

  /**
   * Reopens the connection of {@code s}'s group once every lane of it has left (now, or after
   * {@code delayNanos}), unless {@code stopped} says the run is over by then.
   */
  void reopen(Slot s, long delayNanos, java.util.function.BooleanSupplier stopped) {
    int g = s.group;
    if (stopped.getAsBoolean() || reopening[g] || !detached(g)) return;
    if (delayNanos <= 0) {
      open(g);
      return;
    }
    reopening[g] = true;
    loop.schedule(() -> {
      reopening[g] = false;
      if (!stopped.getAsBoolean() && detached(g)) open(g);
    }, delayNanos, TimeUnit.NANOSECONDS);
  }
}
