(ns herald.feed.metrics-test
  "Tests of /metrics over real HTTP on the embedded store: monotonic store counters are Prometheus counters named _total, every family has a real HELP text."
  (:require [clojure.string :as str]
            [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.test-util :as u]))

(set! *warn-on-reflection* true)

(deftest store-counters-are-counters-with-help
  (let [dir (u/temp-dir "herald-feed-metrics")
        sys (u/start-feed! dir)
        base (feed/url sys)]
    (try
      (let [id (get-in (u/request base "/participant" :method :post :json {:name "m"}) [:json "id"])]
        (dotimes [_ 3] (u/request base (str "/participant/" id))))
      (let [text (:body (u/request base "/metrics"))
            types (into {} (map (fn [[_ m t]] [m t])) (re-seq #"(?m)^# TYPE (\S+) (\S+)$" text))
            helps (into {} (map (fn [[_ m h]] [m h])) (re-seq #"(?m)^# HELP (\S+) (.*)$" text))]
        (testing "cache and index counters are counters named _total (F16)"
          (doseq [m ["herald_feed_store_cache_hits_total" "herald_feed_store_cache_misses_total"
                     "herald_feed_store_cache_evictions_total" "herald_feed_store_index_errors_total"]]
            (is (= "counter" (types m)) m))
          (is (not (contains? types "herald_feed_store_cache_hits")))
          (is (= "gauge" (types "herald_feed_store_posts"))))
        (testing "every counter ends in _total, every family has a HELP that is not a placeholder"
          (doseq [[m t] types]
            (when (= "counter" t) (is (str/ends-with? m "_total") m))
            (is (not (str/blank? (helps m))) m)
            (is (not (#{"Store gauge." "Store value."} (helps m))) m)))
        (testing "the background jobs' and the recorder's own figures are there"
          (doseq [m ["herald_feed_fanout_indexed_total" "herald_feed_fanout_index_failed_total"
                     "herald_feed_perf_recorded_total" "herald_feed_perf_dropped_total" "herald_feed_perf_late_total"]]
            (is (= "counter" (types m)) m))
          (is (= "gauge" (types "herald_feed_fanout_index_queued")))
          (is (re-find #"(?m)^herald_feed_perf_recorded_total [1-9]\d*$" text)))
        (testing "the HTTP server's own figures are there (QA Q28)"
          (is (= "gauge" (types "herald_http_connections")))
          (is (re-find #"(?m)^herald_http_connections [1-9]\d*$" text) "at least the connection asking")
          (doseq [m ["herald_http_rejected_total" "herald_http_handlers_started_total" "herald_http_queue_wait_seconds_total"]]
            (is (= "counter" (types m)) m))
          (is (re-find #"(?m)^herald_http_handlers_started_total [1-9]\d*$" text) "handlers ran on virtual threads"))
        (testing "bucket bounds are plain decimals"
          (is (str/includes? text "le=\"0.0005\""))
          (is (not (re-find #"le=\"[0-9.]+E" text)))))
      (finally (feed/stop! sys) (u/delete-tree! dir)))))
