(ns herald.feed.store.cursor
  "Opaque page cursors: the position (ts, post id) of the last item of a page, as a URL-safe string."
  (:require [clojure.string :as str]))

(set! *warn-on-reflection* true)

(def max-ts
  "The largest :ts a cursor carries: 9999-12-31T23:59:59.999999Z in epoch microseconds (the stores' time unit),
  far below Long/MAX_VALUE, so a store may add to it."
  253402300799999999)

(def max-id
  "The largest post id a cursor carries: Long/MAX_VALUE - 1, so a store may seek to the id after it."
  (dec Long/MAX_VALUE))

(def ^:private max-chars
  "The longest cursor encode makes (two base-36 longs and the dot) is 12 + 1 + 13 characters."
  26)

(defn encode
  "The cursor that continues a feed after the post with this ts and id."
  ^String [ts id]
  (str (Long/toString (long ts) 36) "." (Long/toString (long id) 36)))

(defn- bad [c cause]
  (ex-info (str "malformed cursor " (pr-str c) ": use the cursor of a previous page's Link header")
           {:type :herald.feed.store/bad-cursor :key :before :value c}
           cause))

(defn- parse
  "[ts id] of a cursor string, or nil when it is not exactly what encode makes of a ts in 0..max-ts and an id in
  1..max-id (one spelling per position: no sign, no leading zero, no upper case)."
  [^String c]
  (when (<= 3 (.length c) max-chars)
    (let [[a b :as parts] (str/split c #"\." -1)]
      (when (and (= 2 (count parts)) (re-matches #"0|[1-9a-z][0-9a-z]*" a) (re-matches #"[1-9a-z][0-9a-z]*" b))
        (let [ts (Long/parseLong a 36) id (Long/parseLong b 36)]
          (when (and (<= 0 ts max-ts) (<= 1 id max-id) (= c (encode ts id)))
            [ts id]))))))

(defn decode
  "[ts id] from a cursor made by encode, ts in 0..max-ts and id in 1..max-id. Anything else (another type, another
  spelling, a number beyond a long) throws ex-info {:type :herald.feed.store/bad-cursor :key :before :value c},
  and nothing else: decode never throws another exception."
  [c]
  (let [r (when (string? c)
            (try (parse c) (catch Exception e (throw (bad c e)))))]
    (or r (throw (bad c nil)))))

(defn for-page
  "The :next cursor of a page: nil unless more items follow the last one shown."
  [items more?]
  (when (and more? (seq items))
    (let [{:keys [ts id]} (peek items)] (encode ts id))))
