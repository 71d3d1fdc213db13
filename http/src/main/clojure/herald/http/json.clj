(ns herald.http.json
  "JSON to and from Clojure data over Jackson's streaming API (no databind), with hostile-input limits."
  (:require [herald.http.impl.json :as impl])
  (:import (herald.http.codec JsonEncodeException JsonWriter)))

(set! *warn-on-reflection* true)

(defn read-json
  "Reads exactly one JSON value from `x` (String, byte[], InputStream or Reader; streams are read to the
  end and closed; byte input may be UTF-8, UTF-16 or UTF-32, detected) into Clojure data.

  | JSON           | Clojure                                                              |
  |----------------|----------------------------------------------------------------------|
  | object         | persistent map; keys Strings (default), keywords or `(key-fn s)`     |
  | array          | persistent vector                                                    |
  | string         | String (`\\/`, `\\uXXXX` and surrogate pairs decoded)                   |
  | integer        | Long when it fits, else clojure.lang.BigInt                          |
  | decimal        | Double (beyond its range, as 1e400: malformed), or BigDecimal with `:bigdecimals? true` |
  | true/false/null| Boolean / nil                                                        |

  With `:keywords? true` a key \"ns/name\" becomes `:ns/name`. Duplicate keys: the last wins, unless
  `:reject-duplicate-keys?`. Anything after the value other than whitespace is an error.

  | option                   | type    | default    | meaning                                          |
  |--------------------------|---------|------------|--------------------------------------------------|
  | `:keywords?`             | boolean | false      | object keys as keywords                          |
  | `:key-fn`                | fn      | nil        | String key -> map key; overrides `:keywords?`    |
  | `:bigdecimals?`          | boolean | false      | decimals as BigDecimal (exact) instead of Double |
  | `:reject-duplicate-keys?`| boolean | false      | a repeated key in one object is an error         |
  | `:max-depth`             | int     | 512        | max nesting of arrays/objects                    |
  | `:max-string-length`     | int     | 20000000   | max chars in one string or key                   |

  Malformed input (syntax, truncation, trailing content, empty input, bad UTF-8, a limit exceeded) throws
  `(ex-info msg {:type :herald.http/malformed-json :message detail :line l :column c})` (`:line`/`:column`
  1-based, absent when unknown) and never another exception type. An unknown or ill-typed option throws
  `{:type :herald.http/invalid-option :key k}`."
  ([x] (impl/read-with (impl/json-reader nil) x))
  ([x opts] (impl/read-with (impl/json-reader opts) x)))

(defn- write-with [f]
  (try (f) (catch JsonEncodeException e (throw (impl/encode-error e)))))

(defn write-json-bytes
  "Writes `x` as UTF-8 JSON bytes (see `write-json` for conversions and options)."
  (^bytes [x] (write-with #(.writeBytes JsonWriter/DEFAULT x)))
  (^bytes [x opts] (let [w (impl/json-writer opts)] (write-with #(.writeBytes w x)))))

(defn write-json
  "Writes `x` as a JSON String.

  | Clojure / Java                                  | JSON                                         |
  |-------------------------------------------------|----------------------------------------------|
  | map (any java.util.Map, records)                | object                                       |
  | vector, list, seq, set, array, other Iterable   | array (sets in their iteration order)        |
  | keyword, symbol                                 | string without `:`; `:a/b` -> \"a/b\"          |
  | String, char, UUID                              | string                                       |
  | Long, Integer, Short, Byte, BigInt, BigInteger  | integer, exact                               |
  | Double, Float                                   | number (NaN and infinities are an error)     |
  | BigDecimal                                      | number, exact                                |
  | Ratio                                           | number, as a double (lossy: 1/3 -> 0.333...) |
  | Instant, Date                                   | ISO-8601 UTC string, \"2026-11-22T13:00:00Z\"  |
  | ZonedDateTime, other java.time values           | ISO-8601 string (offset, no zone id)         |
  | nil, true, false                                | null, true, false                            |

  Map keys may be keywords, Strings, symbols, numbers, UUIDs, chars or booleans (written as strings).
  Any other value throws `(ex-info msg {:type :herald.http/json-encode-error :value-class c})`.

  | option     | type    | default | meaning                                                        |
  |------------|---------|---------|----------------------------------------------------------------|
  | `:pretty?` | boolean | false   | indented output                                                |
  | `:key-fn`  | fn      | nil     | map key -> the String written, e.g. `#(str/upper-case (name %))`; replaces the default key conversion; a non-String result is an encode error |"
  (^String [x] (write-with #(.writeString JsonWriter/DEFAULT x)))
  (^String [x opts] (let [w (impl/json-writer opts)] (write-with #(.writeString w x)))))
