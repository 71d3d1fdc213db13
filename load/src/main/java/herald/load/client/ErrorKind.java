package herald.load.client;

/** Why a request produced no response: the kinds reported in a run's "errors by kind". */
public enum ErrorKind {
  /** The TCP connection could not be established. */
  CONNECT,
  /** The connection was closed or reset before the whole response arrived. */
  READ,
  /** The request could not be written. */
  WRITE,
  /** No whole response within the request timeout. */
  TIMEOUT,
  /** The response was not valid HTTP/1.1. */
  PARSE;

  /** The lower-case name used in results ("connect", "read", ...). */
  public String label() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
