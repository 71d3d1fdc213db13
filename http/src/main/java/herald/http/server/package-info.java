/**
 * The HTTP server on Netty: {@link herald.http.server.HeraldServer} (bootstrap and lifecycle),
 * {@link herald.http.server.HttpConnection} (one per channel: the Netty handler that feeds request assembly and
 * limits, with {@code ExchangeQueue} answering in order and {@code ConnectionEnd} closing: half-close, timeouts,
 * shutdown), {@link herald.http.server.RequestHead} (the checked request head both codecs give it: the HTTP/1.1 one
 * in {@code herald.http.http1}, HTTP/2's in {@code herald.http.http2}), {@link herald.http.server.RingRequest} (the
 * Ring request map, read from the head), and
 * {@link herald.http.server.ResponseWriter} (the Ring response on the wire).
 */
package herald.http.server;
