/**
 * The HTTP/1.1 server on Netty: {@link herald.http.server.HeraldServer} (bootstrap and lifecycle),
 * {@link herald.http.server.HttpConnection} (one per channel: the Netty handler that feeds request assembly and
 * limits, with {@code ExchangeQueue} answering in order and {@code ConnectionEnd} closing: half-close, timeouts,
 * shutdown), {@code Http1Decoder}, {@code Http1Parser} and {@code HeaderLines} (the HTTP/1.1 codec: request line,
 * header lines, body framing), {@link herald.http.server.RingRequest} (the Ring request map), and
 * {@link herald.http.server.ResponseWriter} (the Ring response on the wire).
 */
package herald.http.server;
