(ns herald.feed.store.cursor-test
  "Cursors: encode/decode round-trips over the whole range, and decode of anything else throws only the
  invalid-cursor ex-info."
  (:require [clojure.test :refer [deftest is]]
            [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [herald.feed.store.cursor :as cursor]))

(set! *warn-on-reflection* true)

(defn- decode-result
  "[:ok v] or [:bad-cursor] or [:other-exception e]."
  [c]
  (try [:ok (cursor/decode c)]
       (catch clojure.lang.ExceptionInfo e
         (if (= {:type :herald.feed.store/bad-cursor :key :before :value c} (ex-data e)) [:bad-cursor] [:other e]))
       (catch Throwable t [:other t])))

(defspec valid-positions-round-trip 500
  (prop/for-all [ts (gen/large-integer* {:min 0 :max cursor/max-ts})
                 id (gen/large-integer* {:min 1 :max cursor/max-id})]
    (= [:ok [ts id]] (decode-result (cursor/encode ts id)))))

(defspec anything-else-is-a-bad-cursor-and-only-that 500
  (prop/for-all [c (gen/one-of [gen/any-printable-equatable gen/string
                                (gen/fmap (fn [[a b]] (str a "." b)) (gen/tuple gen/string-alphanumeric gen/string-alphanumeric))
                                (gen/fmap (fn [[ts id]] (cursor/encode ts id)) (gen/tuple gen/large-integer gen/large-integer))])]
    (let [[k v] (decode-result c)]
      (case k
        :ok (and (string? c) (= c (apply cursor/encode v)))
        :bad-cursor true
        false))))

(deftest edges
  (is (= [:bad-cursor] (decode-result "1.1y2p0ij32e8e7")) "Long/MAX_VALUE as id (the issue's 500)")
  (is (= [:ok [1 cursor/max-id]] (decode-result (cursor/encode 1 cursor/max-id))))
  (is (= [:bad-cursor] (decode-result (cursor/encode (inc cursor/max-ts) 1))))
  (doseq [c ["" "." "1." ".1" "0.0" "-1.1" "+1.1" "01.1" "1.01" "A.1" "1.1.1" "1,1" " 1.1" nil 7 [1 1]
             "zzzzzzzzzzzzzz.1" "1.zzzzzzzzzzzzzz"]]
    (is (= [:bad-cursor] (decode-result c)) (pr-str c)))
  (is (= [:ok [0 1]] (decode-result "0.1"))))
