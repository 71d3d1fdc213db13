(ns herald.feed-test
  "^:integration tests of the public API: start!/stop! lifecycle, readiness, idempotent stop, the port released, pending fan-out resumed on start."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed :as feed]
            [herald.feed.store :as store]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.test-util :as u]))

(set! *warn-on-reflection* true)

(deftest ^:integration start-stop-lifecycle
  (let [dir (u/temp-dir "herald-feed-lifecycle")]
    (try
      (let [sys (u/start-feed! dir)
            base (feed/url sys)
            port (feed/port sys)]
        (is (= {"status" "ready" "store" "open" "draining" false} (:json (u/request base "/ready"))))
        (is (= 200 (:status (u/request base "/participant" :method :post :json {:name "kept"}))))
        (feed/stop! sys)
        (is (nil? (feed/stop! sys)) "stop is idempotent")
        (is (thrown? java.io.IOException (u/request base "/health")) "the server is gone")
        (testing "the port is released and the data kept"
          (let [again (u/start-feed! dir {:http {:port port}})]
            (try (is (= "kept" (get-in (u/request (feed/url again) "/participant/1") [:json "name"])))
                 (finally (feed/stop! again))))))
      (finally (u/delete-tree! dir)))))

(deftest ^:integration pending-fan-outs-are-resumed-on-start
  (let [dir (u/temp-dir "herald-feed-resume")]
    (try
      ;; record a post with its pending fan-out directly in the store, as a crash right after the ack leaves it
      (let [s (store/open-store {:type :embedded :data-dir dir})
            a (:id (graph/create-participant! s "a"))
            b (:id (graph/create-participant! s "b"))]
        (graph/befriend! s a b)
        (feeds/publish! s {:from a :occurred "2026-11-22" :subject "left behind" :story "resume me"} [b])
        (store/close-store! s)
        (let [sys (u/start-feed! dir)]
          (try
            (is (feed/await-fanout sys 10000))
            (is (= ["left behind"] (map #(get % "subject") (:json (u/request (feed/url sys) (str "/participant/" b "/inbound"))))))
            (is (empty? (feeds/pending-fanouts (:store (feed/service sys)))))
            (finally (feed/stop! sys)))))
      (finally (u/delete-tree! dir)))))

(deftest bad-config-fails-naming-the-key
  (is (re-find #":feed option :max-limit"
               (ex-message (ex-cause (try (u/start-feed! nil {:feed {:max-limit 0}}) (catch Exception e e))))))
  (is (= :herald.feed/system-start
         (:type (ex-data (try (u/start-feed! nil {:fanout {:threads -1}}) (catch Exception e e)))))))
