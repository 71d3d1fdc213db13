(ns herald.feed.contract-fuzz-test
  "Generative tests of the HTTP boundary against the embedded profile: random and mutated cursors, limits, ids,
  keywords and /perf times on every route are answered 2xx or 4xx (4xx with the feed's JSON error body), never
  5xx. A store's own validation never answers a client."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [clojure.test.check :as tc]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [herald.feed :as feed]
            [herald.feed.store.cursor :as cursor]
            [herald.feed.test-util :as u])
  (:import (java.net URLEncoder)
           (java.nio.charset StandardCharsets)))

(set! *warn-on-reflection* true)

(defn- enc ^String [s] (URLEncoder/encode (str s) StandardCharsets/UTF_8))

(def ^:private gen-text
  "Strings a client might send: ASCII, any Unicode, digits, signs and dots."
  (gen/one-of [gen/string-ascii gen/string
               (gen/fmap str/join (gen/vector (gen/elements (seq "0123456789az.-+_ %ZxX:/T")) 0 30))]))

(def ^:private gen-number-text
  "Numbers near the edges of a long and of the limits."
  (gen/fmap str (gen/one-of [gen/large-integer gen/size-bounded-bigint gen/double
                             (gen/elements [0 -1 1 1000 1001 10000 10001 Long/MAX_VALUE Long/MIN_VALUE
                                            "9223372036854775808" "1e3" "0x10" "07" "+5" " 5" "5 " "" "NaN"])])))

(defn- gen-mutated
  "`s` with a few random edits (replace, insert, delete a character; duplicate or cut the text)."
  [s]
  (let [alphabet (seq "0123456789abcdefghijklmnopqrstuvwxyzABCZ.-+_~ %\u00e9")
        edit (gen/one-of
              [(gen/let [i gen/nat c (gen/elements alphabet)]
                 (fn [^String x] (if (empty? x) (str c) (let [i (mod i (count x))] (str (subs x 0 i) c (subs x (inc i)))))))
               (gen/let [i gen/nat c (gen/elements alphabet)]
                 (fn [^String x] (let [i (mod i (inc (count x)))] (str (subs x 0 i) c (subs x i)))))
               (gen/let [i gen/nat]
                 (fn [^String x] (if (empty? x) x (let [i (mod i (count x))] (str (subs x 0 i) (subs x (inc i)))))))
               (gen/return (fn [x] (str x x)))
               (gen/return (fn [^String x] (subs x 0 (quot (count x) 2))))
               (gen/return str/upper-case)])]
    (gen/fmap (fn [fs] (reduce (fn [x f] (f x)) s fs)) (gen/vector edit 1 4))))

(defn- gen-cursor [valid]
  (gen/one-of [(gen/bind (gen/elements valid) gen-mutated)
               (gen/fmap (fn [[ts id]] (cursor/encode ts id)) (gen/tuple gen/large-integer gen/large-integer))
               (gen/fmap (fn [[a b]] (str a "." b)) (gen/tuple gen-number-text gen-number-text))
               (gen/elements ["1.1y2p0ij32e8e7" "1y2p0ij32e8e7.1" "-1.1" "0.0" "0.-1" "zzzzzzzzzzzzz.zzzzzzzzzzzzz" "1.1.1" "."])
               gen-text]))

(defn- answer-ok?
  "2xx, or 4xx with a JSON body {\"error\": string ...}."
  [{:keys [status json]}]
  (or (<= 200 (long status) 299)
      (and (<= 400 (long status) 499) (map? json) (string? (get json "error")))))

(defn- check [base n gen-path]
  (tc/quick-check n (prop/for-all [path gen-path]
                      (let [r (u/request base path)]
                        (when-not (answer-ok? r) (println "FAILED:" path (:status r) (:body r)))
                        (answer-ok? r)))
                  :max-size 60))

(defn- seed!
  "Two friends, 1 posting 6 items; returns the cursors of 1's outbound and 2's inbound pages of 1 item."
  [base sys]
  (u/request base "/participant" :method :post :json {:name "Ann"})
  (u/request base "/participant" :method :post :json {:name "Bob"})
  (u/request base "/participant/1/friends" :method :post :json {:to "/participant/2"})
  (dotimes [i 6]
    (u/request base "/participant/1/outbound" :method :post :json {:subject (str "s" i) :story "hello fuzz"}))
  (feed/await-fanout sys 10000)
  (let [next-cursor (fn [path] (second (re-find #"before=([^>&]+)>" (get-in (u/request base path) [:headers "link"]))))]
    (into [] (keep identity)
          (for [p ["/participant/1/outbound?limit=1" "/participant/1/outbound?limit=3" "/participant/2/inbound?limit=2"]]
            (some-> ^String (next-cursor p) (java.net.URLDecoder/decode StandardCharsets/UTF_8))))))

(deftest ^:integration malformed-cursors-are-400s-never-500s
  (let [dir (u/temp-dir "herald-fuzz")
        sys (u/start-feed! dir)
        base (feed/url sys)]
    (try
      (let [valid (seed! base sys)]
        (is (= 3 (count valid)) "the seeded feeds give cursors")
        (testing "the overflowing cursor of the issue (a 500 before)"
          (let [r (u/request base "/participant/1/outbound?before=1.1y2p0ij32e8e7")]
            (is (= 400 (:status r)))
            (is (= "before" (get-in r [:json "field"])))
            (is (= "1.1y2p0ij32e8e7" (get-in r [:json "value"])))))
        (testing "valid cursors page on"
          (doseq [c valid]
            (is (= 200 (:status (u/request base (str "/participant/1/outbound?before=" (enc c))))))))
        (let [res (check base 400 (gen/let [c (gen-cursor valid)
                                            route (gen/elements ["/participant/1/outbound" "/participant/2/inbound"
                                                                 "/participant/1/inbound" "/participant/2/outbound"])
                                            limit (gen/one-of [(gen/return nil) gen-number-text])]
                                    (str route "?before=" (enc c) (when limit (str "&limit=" (enc limit))))))]
          (is (:pass? res) (pr-str (select-keys res [:seed :shrunk])))))
      (finally (feed/stop! sys) (u/delete-tree! dir)))))

(deftest ^:integration every-route-answers-fuzzed-parameters-without-a-5xx
  (let [dir (u/temp-dir "herald-fuzz")
        sys (u/start-feed! dir)
        base (feed/url sys)]
    (try
      (let [valid (seed! base sys)
            gen-id (gen/one-of [gen-number-text gen-text (gen/elements ["1" "2" "3" "0" "-1" "01" "1.0" "%00"])])
            gen-param (gen/one-of [gen-number-text gen-text (gen/return "")])
            gen-time (gen/one-of [gen-number-text gen-text (gen-mutated "2026-11-22T13:05:00Z")
                                  (gen-mutated "2026-11-22") (gen-mutated "2026-11-22T13:05")
                                  (gen/return "")])
            q (fn [& kvs] (str/join "&" (for [[k v] (partition 2 kvs) :when (some? v)] (str k "=" (enc v)))))
            gen-path
            (gen/one-of
             [(gen/let [id gen-id sub (gen/elements ["" "/friends" "/outbound" "/inbound" "/mutes" "/blocks"])
                        limit (gen/one-of [(gen/return nil) gen-param])
                        before (gen/one-of [(gen/return nil) (gen-cursor valid)])]
                (str "/participant/" (enc id) sub "?" (q "limit" limit "before" before)))
              ;; issue 11: a post's link
              (gen/let [id gen-id post-id gen-id]
                (str "/participant/" (enc id) "/outbound/" (enc post-id)))
              (gen/let [kw (gen/one-of [gen-text (gen/return nil) (gen/elements ["hello" "fuzz" "s1 hello"])])
                        limit (gen/one-of [(gen/return nil) gen-param])
                        before (gen/one-of [(gen/return nil) (gen-cursor valid)])]
                (str "/outbound?" (q "keywords" kw "limit" limit "before" before)))
              (gen/let [route (gen/elements ["/perf" "/perf/log"])
                        from (gen/one-of [(gen/return nil) gen-time])
                        to (gen/one-of [(gen/return nil) gen-time])]
                (str route "?" (q "from" from "to" to)))
              (gen/let [route (gen/elements ["/health" "/ready" "/metrics" "/openapi.json"])
                        junk gen-param]
                (str route "?" (q "x" junk)))])]
        (let [res (check base 600 gen-path)]
          (is (:pass? res) (pr-str (select-keys res [:seed :shrunk]))))
        (testing "fuzzed links in POST bodies"
          (let [res (tc/quick-check 200
                                    (prop/for-all [from gen-id to gen-id subject gen/string]
                                      (every? answer-ok?
                                              [(u/request base "/participant/1/friends" :method :post :json {:from from :to to})
                                               (u/request base "/participant/1/outbound" :method :post
                                                          :json {:from from :subject subject :story to})
                                               ;; relationships (issue 11)
                                               (u/request base "/participant/2/mutes" :method :post :json {:target to})
                                               (u/request base "/participant/3/blocks" :method :post :json {:target from})
                                               (u/request base (str "/participant/" (enc from) "/friends/" (enc to)) :method :delete)
                                               (u/request base (str "/participant/2/mutes/" (enc to)) :method :delete)
                                               (u/request base (str "/participant/" (enc to) "/blocks/" (enc from)) :method :delete)]))
                                    :max-size 40)]
            (is (:pass? res) (pr-str (select-keys res [:seed :shrunk]))))))
      (finally (feed/stop! sys) (u/delete-tree! dir)))))
