/**
 * The HTTP/1.1 client of the load generator: request encoding, an incremental response parser and a Netty
 * connection handler that reports whole responses to a listener. No HttpObject allocation on the hot path.
 */
package herald.load.client;
