package herald.load.client;

import io.netty.buffer.ByteBuf;
import io.netty.channel.EventLoop;
import java.util.ArrayList;
import java.util.List;

/**
 * Sessions that share HTTP/2 connections, one stream each (the feed workload's --streams): when a member needs
 * a connection, one is opened carrying a lane for every member that has none, so that up to N sessions share
 * each connection. All members run on the group's event loop; the group passes each lane's events to the
 * session the lane belongs to.
 */
public final class SessionGroup implements ConnectionListener {
  private final EventLoop loop;
  private final Target target;
  private final List<SessionClient> members = new ArrayList<>();

  /** A group on {@code loop}; at most {@code target.lanesPerConnection()} members. */
  public SessionGroup(EventLoop loop, Target target) {
    this.loop = loop;
    this.target = target;
  }

  EventLoop loop() {
    return loop;
  }

  Target target() {
    return target;
  }

  void add(SessionClient s) {
    if (members.size() >= target.lanesPerConnection()) {
      throw new IllegalStateException("a group has at most " + target.lanesPerConnection() + " sessions");
    }
    members.add(s);
  }

  /** Opens a connection with a lane for every member without one; on the loop. */
  void open() {
    List<SessionClient> free = new ArrayList<>();
    for (SessionClient s : members) if (s.detached()) free.add(s);
    if (free.isEmpty()) return;
    Lane[] lanes = target.newConnection(this, true, free.toArray());
    for (int i = 0; i < lanes.length; i++) free.get(i).attach(lanes[i]);
    target.connect(loop, lanes);
  }

  private static SessionClient of(Lane lane) {
    return (SessionClient) lane.attachment();
  }

  @Override public void onConnected(Lane lane) { of(lane).onConnected(lane); }
  @Override public void onResponse(Lane lane, int status, ByteBuf body, boolean keepAlive) { of(lane).onResponse(lane, status, body, keepAlive); }
  @Override public void onRequestFailed(Lane lane, ErrorKind kind, Throwable cause) { of(lane).onRequestFailed(lane, kind, cause); }
  @Override public void onClosed(Lane lane, boolean inFlight, ErrorKind kind, Throwable cause) { of(lane).onClosed(lane, inFlight, kind, cause); }
}
