/**
 * TLS for the server: builds the Netty {@link io.netty.handler.ssl.SslContext} (JDK provider) from PEM files or
 * from a user-supplied {@link javax.net.ssl.SSLContext}. Used only when the server is started with TLS options.
 */
package herald.http.tls;
