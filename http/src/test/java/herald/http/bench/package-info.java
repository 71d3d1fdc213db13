/**
 * Benchmark targets: {@link herald.http.bench.RawNettyServer}, the raw Netty 4.2 TechEmpower-style server
 * that {@code bench/http.sh} and the load generator measure herald against (the ceiling).
 */
package herald.http.bench;
