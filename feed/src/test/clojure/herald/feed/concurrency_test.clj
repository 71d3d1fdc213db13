(ns herald.feed.concurrency-test
  "^:integration many clients befriending and posting at once over HTTP: no lost or doubled friendship, no lost or duplicate inbound item."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed :as feed]
            [herald.feed.test-util :as u]))

(set! *warn-on-reflection* true)

(defn- link [id] (str "/participant/" id))

(defn- in-parallel
  "Runs (f i) for i in 0..n-1 on n threads at once; returns the results."
  [n f]
  (let [start (java.util.concurrent.CountDownLatch. 1)
        fs (mapv (fn [i] (future (.await start) (f i))) (range n))]
    (.countDown start)
    (mapv deref fs)))

(deftest ^:integration concurrent-friendships-and-posts
  (let [dir (u/temp-dir "herald-feed-concurrency")
        sys (u/start-feed! dir)
        base (feed/url sys)
        req (fn [path & opts] (apply u/request base path opts))]
    (try
      (let [ids (vec (in-parallel 12 (fn [i] (get-in (req "/participant" :method :post :json {:name (str "p" i)}) [:json "id"]))))
            pairs (for [a ids b ids :when (< a b)] [a b])
            ;; every pair is befriended by 4 racing requests, from both sides, JSON and form
            attempts (shuffle (for [[a b] pairs [x y] [[a b] [b a] [a b] [b a]]] [x y]))
            results (apply concat
                           (in-parallel 8 (fn [t]
                                            (doall (for [[x y] (take-nth 8 (drop t attempts))]
                                                     (let [r (req (str (link x) "/friends") :method :post
                                                                  :json {:from (link x) :to (link y)})]
                                                       [#{x y} (:status r) (get-in r [:json "id"])]))))))]
        (is (every? #(= 200 (second %)) results))
        (is (every? #(= 1 (count (set (map last %)))) (vals (group-by first results)))
            "racing adds of one pair return one friendship id")
        (doseq [id ids]
          (let [fs (:json (req (str (link id) "/friends")))]
            (is (= (set (remove #{(link id)} (map link ids))) (set (map #(get % "to") fs))) "no lost friendship")
            (is (= (count fs) (count (set (map #(get % "to") fs)))) "no doubled friendship")))
        ;; now everyone posts at once; every participant is everyone's friend
        (let [posted (apply concat
                            (in-parallel 8 (fn [t]
                                             (doall (for [i (range 15)
                                                          :let [x (nth ids (mod (+ t (* 8 i)) (count ids)))
                                                                subject (str "t" t "-" i)
                                                                r (req (str (link x) "/outbound") :method :post
                                                                       :json {:from (link x) :occurred "2026-11-22" :subject subject :story "concurrent"})]]
                                                      [x subject (:status r)])))))]
          (is (every? #(= 200 (last %)) posted))
          (is (feed/await-fanout sys 30000))
          (doseq [id ids]
            (let [inbound (map #(get % "subject") (:json (req (str (link id) "/inbound?limit=1000"))))
                  expected (set (for [[x s] posted :when (not= x id)] s))]
              (is (= (count inbound) (count (set inbound))) "no duplicate inbound item")
              (is (= expected (set inbound)) "no lost inbound item")))))
      (finally (feed/stop! sys) (u/delete-tree! dir)))))

;; ---------------------------------------------------------------------------------------------------
;; issue 11: deletes and edits racing the fan-out

(deftest ^:integration deletes-and-edits-race-the-fan-out
  (let [dir (u/temp-dir "herald-feed-concurrency-deletes")
        sys (u/start-feed! dir)
        base (feed/url sys)
        req (fn [path & opts] (apply u/request base path opts))]
    (try
      (let [ids (vec (for [i (range 10)] (get-in (req "/participant" :method :post :json {:name (str "d" i)}) [:json "id"])))]
        (doseq [a ids b ids :when (< a b)]
          (req (str (link a) "/friends") :method :post :json {:to (link b)}))
        ;; each thread posts, and deletes or edits its post right after the 200, while the fan-out of it (to 9
        ;; friends) is still queued or running; others post alongside
        (let [done (apply concat
                          (in-parallel 8 (fn [t]
                                           (doall (for [i (range 25)
                                                        :let [x (nth ids (mod (+ t i) (count ids)))
                                                              subject (str "r" t "-" i)
                                                              p (:json (req (str (link x) "/outbound") :method :post
                                                                            :json {:subject subject :story "racing"}))
                                                              action (case (int (mod i 3)) 0 :delete 1 :edit 2 :keep)
                                                              r (case action
                                                                  :delete (req (get p "link") :method :delete)
                                                                  :edit (req (get p "link") :method :patch :json {:story (str "edited " subject)})
                                                                  :keep nil)]]
                                                    {:x x :subject subject :action action :status (:status r)})))))
              deleted (set (map :subject (filter #(= :delete (:action %)) done)))
              edited (set (map :subject (filter #(= :edit (:action %)) done)))]
          (is (every? #(case (:action %) :delete (= 204 (:status %)) :edit (= 200 (:status %)) true) done))
          (is (feed/await-fanout sys 30000))
          (doseq [id ids]
            (let [items (:json (req (str (link id) "/inbound?limit=1000")))
                  subjects (map #(get % "subject") items)
                  expected (set (for [{:keys [x subject]} done :when (and (not= x id) (not (deleted subject)))] subject))]
              (is (= expected (set subjects)) "every kept post delivered, no deleted one shown")
              (is (= (count subjects) (count (set subjects))) "no duplicate inbound item")
              (is (every? #(= (str "edited " (get % "subject")) (get % "story"))
                          (filter #(edited (get % "subject")) items))
                  "every inbound copy of an edited post shows the edit")))
          (doseq [id ids]
            (is (not-any? deleted (map #(get % "subject") (:json (req (str (link id) "/outbound?limit=1000")))))))
          (let [kept (count (filter #(= :keep (:action %)) done))]
            (is (= kept (count (:json (u/eventually 30000 #(= kept (count (:json %)))
                                                    #(req "/outbound?keywords=racing&limit=1000")))))
                "search finds the kept posts' story, not the deleted or edited ones'"))))
      (finally (feed/stop! sys) (u/delete-tree! dir)))))
