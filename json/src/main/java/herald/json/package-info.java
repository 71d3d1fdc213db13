/**
 * JSON to and from Clojure data over Jackson's streaming API (jackson-core only, no databind): the Java core of
 * {@code herald.json}. {@link herald.json.JsonReader} builds persistent maps and vectors straight from parser
 * tokens, with limits for hostile input (depth, string length, duplicate keys); {@link herald.json.JsonWriter}
 * walks Clojure data into a generator over recycled buffers. Reading errors are always
 * {@link herald.json.MalformedJsonException} with a line and column; values JSON cannot hold are a
 * {@link herald.json.JsonEncodeException}. Instances are immutable and thread-safe.
 */
package herald.json;
