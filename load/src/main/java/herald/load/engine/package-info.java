/**
 * The load engine: workers on Netty event loops that send requests open-loop at a constant rate (latency
 * from the intended send time, no coordinated omission) or closed-loop as fast as possible, recording
 * latency and service time into HdrHistogram recorders.
 */
package herald.load.engine;
