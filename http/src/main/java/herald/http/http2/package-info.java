/**
 * HTTP/2 for the server: h2 negotiated by ALPN on TLS ({@link herald.http.http2.AlpnSwitch}), h2c by prior
 * knowledge ({@link herald.http.http2.PrefaceDetector}) or {@code Upgrade: h2c}
 * ({@link herald.http.http2.UpgradeWatcher}) on plaintext. Each stream is a Netty child channel whose
 * {@link herald.http.http2.StreamAdapter} turns frames into the request head and contents the exchange handler
 * reads, so requests, limits, handler modes and the Ring response rules are shared with HTTP/1.1; the server
 * side is reached through {@link herald.http.http2.Http2Host}.
 */
package herald.http.http2;
