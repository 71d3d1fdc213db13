package herald.load.client;

/** A whole response: status, body bytes, and when the request was sent and the response completed. */
public record Response(int status, byte[] body, long sentNanos, long doneNanos) {
  /** Send-to-response time in nanoseconds. */
  public long latencyNanos() {
    return doneNanos - sentNanos;
  }
}
