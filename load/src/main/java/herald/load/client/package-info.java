/**
 * The HTTP client of the load generator: request encoding, {@link herald.load.client.Target} (address, TLS,
 * HTTP/1.1 or HTTP/2) making connections whose {@link herald.load.client.Lane}s each carry one request at a
 * time (an HTTP/1.1 connection with its own incremental response parser, or a stream slot of an HTTP/2
 * connection on Netty's codec), and the listener they report whole responses to. No HttpObject allocation on
 * the hot path.
 */
package herald.load.client;
