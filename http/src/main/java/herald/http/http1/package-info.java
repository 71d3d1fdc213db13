/**
 * The HTTP/1.1 request codec (RFC 9112): {@link herald.http.http1.Http1Decoder} finds each request head in the
 * connection's bytes and frames the body (Content-Length, chunked); {@code Http1Parser} and {@code HeaderLines}
 * parse and check the head in one pass into a {@link herald.http.server.RequestHead} whose headers
 * ({@code Http1Headers}) stay the head's bytes until read. What the server sees of it: heads, Netty
 * {@code HttpContent}s, {@link herald.http.server.RefusalException} for a refused body, and
 * {@link herald.http.server.HeadProgress} for the request timeouts.
 */
package herald.http.http1;
