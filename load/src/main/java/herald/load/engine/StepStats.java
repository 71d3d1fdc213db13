package herald.load.engine;

import herald.load.client.ErrorKind;
import org.HdrHistogram.Histogram;

/**
 * Per-phase ("step") counters and histograms (microseconds) of a rate run. A worker owns one and writes it
 * on its event loop only; {@link LoadEngine#steps()} reads them on each loop and adds them into a fresh one,
 * which is then a snapshot safe to read from any thread. A request belongs to the phase of its intended time.
 */
public final class StepStats {
  private final Histogram[] latency;
  private final Histogram[] service;
  final long[] planned;
  final long[] sent;
  final long[] completed;
  final long[] statusErrors;
  final long[] connectionWaits;
  final long[] lateSends;
  final long[] inFlight;
  final long[] unsent;
  final long[] answeredDuring;
  final long[][] errors;

  StepStats(int phases) {
    latency = new Histogram[phases];
    service = new Histogram[phases];
    for (int i = 0; i < phases; i++) {
      latency[i] = new Histogram(3);
      service[i] = new Histogram(3);
    }
    planned = new long[phases];
    sent = new long[phases];
    completed = new long[phases];
    statusErrors = new long[phases];
    connectionWaits = new long[phases];
    lateSends = new long[phases];
    inFlight = new long[phases];
    unsent = new long[phases];
    answeredDuring = new long[phases];
    errors = new long[phases][ErrorKind.values().length];
  }

  void record(int step, long latencyMicros, long serviceMicros, int status) {
    latency[step].recordValue(latencyMicros);
    service[step].recordValue(serviceMicros);
    completed[step]++;
    if (status < 200 || status >= 400) statusErrors[step]++;
  }

  void addTo(StepStats into) {
    for (int i = 0; i < planned.length; i++) {
      into.latency[i].add(latency[i]);
      into.service[i].add(service[i]);
      into.planned[i] += planned[i];
      into.sent[i] += sent[i];
      into.completed[i] += completed[i];
      into.statusErrors[i] += statusErrors[i];
      into.connectionWaits[i] += connectionWaits[i];
      into.lateSends[i] += lateSends[i];
      into.inFlight[i] += inFlight[i];
      into.unsent[i] += unsent[i];
      into.answeredDuring[i] += answeredDuring[i];
      for (int k = 0; k < errors[i].length; k++) into.errors[i][k] += errors[i][k];
    }
  }

  /** Number of steps. */
  public int steps() { return planned.length; }

  /** Latency from the intended send time of the step's answered requests (microseconds). */
  public Histogram latency(int step) { return latency[step]; }

  /** Service time from the actual send of the step's answered requests (microseconds). */
  public Histogram service(int step) { return service[step]; }

  /** Requests the schedule intends in the step (the math, whatever happened). */
  public long planned(int step) { return planned[step]; }

  /** Requests of the step sent so far. */
  public long sent(int step) { return sent[step]; }

  /** Responses (any status) to the step's requests. */
  public long completed(int step) { return completed[step]; }

  /** Responses with status below 200 or from 400 up. */
  public long statusErrors(int step) { return statusErrors[step]; }

  /** Requests of the step that were due but had to wait for a connection to become free. */
  public long connectionWaits(int step) { return connectionWaits[step]; }

  /**
   * Requests of the step sent more than 5 ms after their intended time while a connection was free: the
   * generator's event loop (or the machine) was late.
   */
  public long lateSends(int step) { return lateSends[step]; }

  /** Requests of the step sent and neither answered nor failed yet. */
  public long inFlight(int step) { return inFlight[step]; }

  /** Requests of the step that were due when issuing stopped but never sent (no free connection). */
  public long unsent(int step) { return unsent[step]; }

  /** Responses (to requests of any step) that arrived within the step's time span: the server's throughput then. */
  public long answeredDuring(int step) { return answeredDuring[step]; }

  /** Failed requests of the step of one kind. */
  public long errors(int step, ErrorKind kind) { return errors[step][kind.ordinal()]; }
}
