(ns herald.json
  "JSON to and from Clojure data over Jackson's streaming API (jackson-core, no databind), with hostile-input limits."
  (:refer-clojure :exclude [read])
  (:require [herald.json.impl :as impl])
  (:import (herald.json JsonWriter)))

(set! *warn-on-reflection* true)

(defn read
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

  The reader an options map makes is cached (up to 256 distinct maps), so passing the same map on every call
  costs a lookup, not a new reader.

  Malformed input (syntax, truncation, trailing content, empty input, bad UTF-8, a limit exceeded) throws
  `(ex-info msg {:type :herald.json/malformed :message detail :line l :column c})` (`:line`/`:column`
  1-based, absent when unknown) and never another exception type. An unknown or ill-typed option throws
  `{:type :herald.json/invalid-option :key k}`, an input of another class `{:type :herald.json/invalid-argument}`."
  ([x] (impl/read-with (impl/reader nil) x nil))
  ([x opts] (impl/read-with (impl/reader opts) x nil)))

(defn read-field
  "The value of the top-level field `field-name` (a String) of the JSON object in `x` (as `read` takes it), read
  as `read` would read it (objects and arrays too, with the same `opts`), or nil when the document is not an
  object or has no such field. Reads only up to the end of that field's value: what follows is neither parsed nor
  checked, which makes it the cheap way to take one value (an id, a link) out of a large response. A repeated
  field gives its first value (`read` keeps the last). Malformed input before the end of the value throws as
  `read` does (`:herald.json/malformed`)."
  ([x ^String field-name] (impl/read-with (impl/reader nil) x field-name))
  ([x ^String field-name opts] (impl/read-with (impl/reader opts) x field-name)))

(defn write-str
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
  Any other value throws `(ex-info msg {:type :herald.json/unencodable :value-class c})`.

  | option     | type    | default | meaning                                                        |
  |------------|---------|---------|----------------------------------------------------------------|
  | `:pretty?` | boolean | false   | indented output                                                |
  | `:key-fn`  | fn      | nil     | map key -> the String written, e.g. `#(str/upper-case (name %))`; replaces the default key conversion; a non-String result is unencodable |"
  (^String [x] (impl/write-with #(.writeString JsonWriter/DEFAULT x)))
  (^String [x opts] (let [w (impl/writer opts)] (impl/write-with #(.writeString w x)))))

(defn write-bytes
  "Writes `x` as UTF-8 JSON bytes, without a String in between (see `write-str` for conversions and options).
  Characters outside the BMP are written as `\\uD83D\\uDE00`-style escape pairs (Jackson's byte generator), where
  `write-str` keeps them as they are: the same JSON value."
  (^bytes [x] (impl/write-with #(.writeBytes JsonWriter/DEFAULT x)))
  (^bytes [x opts] (let [w (impl/writer opts)] (impl/write-with #(.writeBytes w x)))))
