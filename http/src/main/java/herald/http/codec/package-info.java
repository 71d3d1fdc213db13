/**
 * Codecs of herald.http: percent-decoding of paths, query strings and
 * {@code application/x-www-form-urlencoded} bodies ({@link herald.http.codec.FormDecoder}), JSON to and from
 * Clojure data over Jackson's streaming API ({@link herald.http.codec.JsonReader},
 * {@link herald.http.codec.JsonWriter}) and gzip response encoding ({@link herald.http.codec.Gzip}).
 *
 * <p>Every class here produces or consumes Clojure's persistent collections directly, so the Clojure API on
 * top adds no conversion. Decoders never throw on malformed percent escapes; JSON errors are
 * {@link herald.http.codec.MalformedJsonException} with a line and column.
 */
package herald.http.codec;
