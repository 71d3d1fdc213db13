(ns herald.feed.store.scale-test
  "The :scale composite with its roles in memory: the storage contract, config errors, stats, and the search
  catch-up after a crash (a search backend that fails or is closed while posts are published)."
  (:require [clojure.test :refer [deftest is testing]]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.lifecycle :as lifecycle]
            [herald.feed.store.search :as search]
            [herald.feed.store.contract :as contract :refer [post-of thrown-type]]
            [herald.feed.store.memory :as memory]
            [herald.feed.store.scale :as scale]
            [herald.feed.store.scale.roles :as roles]
            [herald.feed.store.scale.spi :as spi]))

(set! *warn-on-reflection* true)

(contract/deftests scale-memory #(s/open-store (assoc roles/all-in-memory :type :scale)) s/close-store!)

(contract/deftests scale-memory-uncached #(s/open-store (merge roles/all-in-memory {:type :scale :cache {:type :memory :max-size 0}}))
  s/close-store!)

(deftest bad-config-names-the-key
  (doseq [[config k] [[{:graph {:type :mysql}} [:graph :type]]
                      [{:feeds {:type :postgres}} [:feeds :type]]
                      [{:search "opensearch"} [:search]]
                      [{:cache {:type :memcached}} [:cache :type]]
                      [{:index-mark-ms 0} [:index-mark-ms]]
                      [{:catch-up-batch "10"} [:catch-up-batch]]]]
    (let [e (try (s/open-store (merge roles/all-in-memory config {:type :scale})) nil (catch clojure.lang.ExceptionInfo e e))]
      (is (= ::s/invalid (:type (ex-data e))) (pr-str config))
      (is (= k (:key (ex-data e))) (pr-str config))
      (is (re-find (re-pattern (java.util.regex.Pattern/quote (pr-str k))) (ex-message e)) (ex-message e)))))

(deftest batch-fan-out-goes-to-the-feeds-role
  (let [st (s/open-store (assoc roles/all-in-memory :type :scale))]
    (try
      (let [[a b c] (map :id (repeatedly 3 #(graph/create-participant! st "p")))
            p1 (feeds/publish! st (post-of a "one") [b c])
            p2 (feeds/publish! st (post-of a "two") [b])]
        (is (not (feeds/batch-fan-out? st)) "memory feeds have no one-write batch: fan-out-all! goes post by post")
        (feeds/fan-out-all! st [{:post p1 :recipients [b c]} {:post p2 :recipients [b]}])
        (is (= [p2 p1] (:items (feeds/inbound st b))))
        (is (= [p1] (:items (feeds/inbound st c))))
        (is (empty? (feeds/pending-fanouts st)) "the fan-out records are completed"))
      (finally (s/close-store! st)))))

(deftest stats-ready-and-close
  (let [st (s/open-store (assoc roles/all-in-memory :type :scale))]
    (graph/create-participant! st "a")
    (graph/participant st 1)
    (graph/participant st 1)
    (let [p (feeds/publish! st (post-of 1 "unindexed") [])
          stats (s/stats st)]
      (is (= 1 (:participants stats)) "lifted from the graph role")
      (is (= 1 (:posts stats)) "lifted from the feeds role")
      (is (= 1 (:memory-participants stats)) "the shared memory store, prefixed")
      (is (= 1 (:search-pending stats)) "published, not indexed")
      (is (= 1 (:cache-hits stats)))
      (is (contains? (:herald.feed.store/counters (meta stats)) :cache-hits))
      (search/index! st p)
      (is (= 0 (:search-pending (s/stats st)))))
    (is (true? (s/ready? st)))
    (s/close-store! st)
    (s/close-store! st)
    (is (false? (s/ready? st)) "closed")
    (is (= ::s/closed (thrown-type #(graph/create-participant! st "b"))))))

;; ---------------------------------------------------------------------------------------------------
;; catch-up: backends that outlive one open (a memory feeds store handed in, a search index that can fail)

(deftype HeldSearch [inner mark fail?]
  search/SearchIndex
  (-index! [_ post] (when @fail? (throw (ex-info "search down" {:type ::down}))) (search/-index! inner post))
  (-index-batch! [_ posts] (when @fail? (throw (ex-info "search down" {:type ::down}))) (search/-index-batch! inner posts))
  (-search [_ k opts] (search/-search inner k opts))
  (-refresh-search! [_] nil)
  spi/IndexProgress
  (-indexed-through [_] @mark)
  (-set-indexed-through! [_ ts] (when @fail? (throw (ex-info "search down" {:type ::down}))) (reset! mark ts))
  lifecycle/Lifecycle
  (-close! [_] nil)
  (-ready? [_] (not @fail?))
  (-stats [_] {:indexed-posts (count (:index @(.-state ^herald.feed.store.memory.MemoryStore inner)))}))

(defn- held [config] (:store config))

(defn- open-held [feeds search & {:as opts}]
  (with-redefs [roles/backends (-> roles/backends (assoc-in [:feeds :held] `held) (assoc-in [:search :held] `held))]
    (s/open-store (merge roles/all-in-memory {:type :scale :feeds {:type :held :store feeds} :search {:type :held :store search}
                          :index-mark-ms 10}
                         opts))))

(defn- await!
  "Waits until (ok?) is true (the store's background indexing and mark are asynchronous), checking every 10 ms, at
  most 30 s (a loaded 2-core CI machine), instead of a fixed sleep."
  [ok?]
  (let [deadline (+ (System/currentTimeMillis) 30000)]
    (loop [] (when-not (or (ok?) (> (System/currentTimeMillis) deadline)) (Thread/sleep 10) (recur)))))

(deftest search-catches-up-after-a-crash
  (let [feeds (memory/memory-store)
        search (HeldSearch. (memory/memory-store) (atom 0) (atom false))
        a 7
        st (open-held feeds search)
        p1 (feeds/publish! st (post-of a "alpha before") [])]
    (search/index! st p1)
    (await! #(= (:ts p1) @(.-mark search)))
    (is (= (:ts p1) @(.-mark search)) "the mark follows the indexed posts")
    (reset! (.-fail? search) true)
    (let [p2 (feeds/publish! st (post-of a "beta during the outage") [])
          p3 (feeds/publish! st (post-of a "gamma during the outage") [])]
      (is (= ::down (thrown-type #(search/index! st p2))))
      (is (false? (s/ready? st)) "not ready while search fails")
      (Thread/sleep 50)
      (is (= (:ts p1) @(.-mark search)) "the mark cannot be stored while search is down")
      ;; the crash: the store is dropped without close; search comes back
      (reset! (.-fail? search) false)
      (let [p4 (feeds/publish! st (post-of a "delta indexed") [])]
        (search/index! st p4)
        (Thread/sleep 50)
        (is (<= (:ts p1) @(.-mark search) (dec (:ts p2)))
            "an indexed post above a waiting one does not move the mark past it"))
      (let [st2 (open-held feeds search)]
        (try
          (is (= [a] (search/search st2 "beta")) "caught up on open")
          (is (= [a] (search/search st2 "gamma")))
          (is (= [a a] (search/search st2 "outage")) "each post once")
          (is (= [a] (search/search st2 "delta")) "indexed before the crash and caught up again: once")
          (is (= (:ts (last (:items (feeds/outbound st2 a)))) (:ts p1)))
          (is (< (:ts p3) @(.-mark search)) "the mark moved past every post")
          (finally (s/close-store! st2)))))
    (s/close-store! st)))

(deftest posts-left-unindexed-are-indexed-by-the-store
  (let [feeds (memory/memory-store)
        search (HeldSearch. (memory/memory-store) (atom 0) (atom true))
        st (open-held feeds search :index-retry-ms 300)]
    (try
      (let [p1 (feeds/publish! st (post-of 3 "forgotten by the caller") [])
            _ (feeds/publish! st (post-of 3 "failed to index") [])]
        (Thread/sleep 500)
        (is (= [] (search/search st "forgotten")) "not while search fails")
        (is (= 2 (:search-pending (s/stats st))))
        (reset! (.-fail? search) false)
        (await! #(and (= [3] (search/search st "forgotten")) (= [3] (search/search st "failed")) (= 0 (:search-pending (s/stats st)))))
        (is (= [3] (search/search st "forgotten")) "retried once search is back")
        (is (= [3] (search/search st "failed")))
        (is (= 0 (:search-pending (s/stats st))))
        (await! #(< (:ts p1) @(.-mark search)))
        (is (< (:ts p1) @(.-mark search)) "and the mark moved past them"))
      (finally (s/close-store! st)))))

(deftest a-failing-catch-up-fails-the-open
  (let [feeds (memory/memory-store)
        search (HeldSearch. (memory/memory-store) (atom 0) (atom false))]
    (feeds/publish! feeds (post-of 1 "never indexed") [])
    (reset! (.-fail? search) true)
    (let [e (try (open-held feeds search) nil (catch clojure.lang.ExceptionInfo e e))]
      (is (= ::s/unavailable (:type (ex-data e))))
      (is (= [:search] (:key (ex-data e)))))
    (reset! (.-fail? search) false)
    (let [st (open-held feeds search)]
      (try (is (= [1] (search/search st "indexed"))) (finally (s/close-store! st))))))
