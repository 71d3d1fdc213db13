package herald.json;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.StreamWriteConstraints;
import com.fasterxml.jackson.core.util.BufferRecycler;
import com.fasterxml.jackson.core.util.JsonRecyclerPools;
import com.fasterxml.jackson.core.util.RecyclerPool;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Shared Jackson {@link JsonFactory} instances, one per set of read limits.
 *
 * <p>Buffers: Jackson's default pool is thread-local, which is the fastest on platform threads (Netty's event
 * loops, worker pools) but useless on virtual threads, each of which would get (and drop) its own buffers.
 * {@link #recycler()} picks the thread-local pool on platform threads and a shared concurrent pool on
 * virtual threads, and {@link #forCurrentThread} does the same for parsers.
 */
final class JsonFactories {
  private JsonFactories() {}

  /** Default maximum nesting depth of arrays and objects when reading. */
  static final int DEFAULT_MAX_DEPTH = 512;
  /** Default maximum length of one string value, in chars (Jackson's default is 20M). */
  static final int DEFAULT_MAX_STRING = 20_000_000;

  private static final RecyclerPool<BufferRecycler> SHARED = JsonRecyclerPools.sharedConcurrentDequePool();
  private static final RecyclerPool<BufferRecycler> THREAD_LOCAL = JsonRecyclerPools.threadLocalPool();

  /** A buffer recycler for the current thread; give it back with {@link BufferRecycler#releaseToPool()}. */
  static BufferRecycler recycler() {
    return (Thread.currentThread().isVirtual() ? SHARED : THREAD_LOCAL).acquireAndLinkPooled();
  }

  private static final ConcurrentHashMap<Long, JsonFactory[]> BY_LIMITS = new ConcurrentHashMap<>();

  static final JsonFactory[] DEFAULT = get(DEFAULT_MAX_DEPTH, DEFAULT_MAX_STRING);

  /** Two factories with these limits: [0] recycles through the shared pool, [1] through the thread-local one. */
  static JsonFactory[] get(int maxDepth, int maxString) {
    long key = ((long) maxDepth << 32) | (maxString & 0xffffffffL);
    return BY_LIMITS.computeIfAbsent(key, k -> new JsonFactory[] {
        build(maxDepth, maxString, SHARED), build(maxDepth, maxString, THREAD_LOCAL)});
  }

  /** The factory of the pair that suits the current thread (see {@link #recycler()}). */
  static JsonFactory forCurrentThread(JsonFactory[] pair) {
    return Thread.currentThread().isVirtual() ? pair[0] : pair[1];
  }

  private static JsonFactory build(int maxDepth, int maxString, RecyclerPool<BufferRecycler> pool) {
    return JsonFactory.builder()
        .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
        .streamReadConstraints(StreamReadConstraints.builder()
            .maxNestingDepth(maxDepth)
            .maxStringLength(maxString)
            .build())
        .streamWriteConstraints(StreamWriteConstraints.builder().maxNestingDepth(1000).build())
        .recyclerPool(pool)
        .build();
  }
}
