/**
 * Codecs of herald.http: percent-decoding of paths, query strings and
 * {@code application/x-www-form-urlencoded} bodies ({@link herald.http.codec.FormDecoder}) and gzip response
 * encoding ({@link herald.http.codec.Gzip}). JSON is the herald-json module's ({@code herald.json}).
 *
 * <p>Every class here produces or consumes Clojure's persistent collections directly, so the Clojure API on
 * top adds no conversion. Decoders never throw on malformed percent escapes.
 */
package herald.http.codec;
