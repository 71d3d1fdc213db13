/**
 * The HTTP/1.1 server on Netty: {@link herald.http.server.HeraldServer} (bootstrap and lifecycle),
 * {@link herald.http.server.HttpConnection} (one per channel: request assembly, limits, timeouts, in-order
 * dispatch), {@link herald.http.server.RingRequest} (the Ring request map), and
 * {@link herald.http.server.ResponseWriter} (the Ring response on the wire).
 */
package herald.http.server;
