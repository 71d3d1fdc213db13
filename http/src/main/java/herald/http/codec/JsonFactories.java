package herald.http.codec;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.StreamWriteConstraints;
import com.fasterxml.jackson.core.util.JsonRecyclerPools;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Shared Jackson {@link JsonFactory} instances, one per set of read limits.
 *
 * <p>Buffers are recycled through a shared concurrent pool rather than Jackson's default thread-local one:
 * handlers run on virtual threads, which would each get (and drop) their own buffers.
 */
final class JsonFactories {
  private JsonFactories() {}

  /** Default maximum nesting depth of arrays and objects when reading. */
  static final int DEFAULT_MAX_DEPTH = 512;
  /** Default maximum length of one string value, in chars (Jackson's default is 20M). */
  static final int DEFAULT_MAX_STRING = 20_000_000;

  private static final ConcurrentHashMap<Long, JsonFactory> BY_LIMITS = new ConcurrentHashMap<>();

  static final JsonFactory DEFAULT = get(DEFAULT_MAX_DEPTH, DEFAULT_MAX_STRING);

  static JsonFactory get(int maxDepth, int maxString) {
    long key = ((long) maxDepth << 32) | (maxString & 0xffffffffL);
    return BY_LIMITS.computeIfAbsent(key, k -> build(maxDepth, maxString));
  }

  private static JsonFactory build(int maxDepth, int maxString) {
    return JsonFactory.builder()
        .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
        .streamReadConstraints(StreamReadConstraints.builder()
            .maxNestingDepth(maxDepth)
            .maxStringLength(maxString)
            .build())
        .streamWriteConstraints(StreamWriteConstraints.builder().maxNestingDepth(1000).build())
        .recyclerPool(JsonRecyclerPools.sharedConcurrentDequePool())
        .build();
  }
}
