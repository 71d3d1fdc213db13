/**
 * The durable local log of herald.flow: the binary record codec.
 */
package herald.flow.log;
