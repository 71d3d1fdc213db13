(ns herald.feed.store.relations-contract
  "The graph role's relationships (unfriend, mutes, blocks) and the search role's pages as contract checks, run
  against every backend through herald.feed.store.contract/checks."
  (:require [clojure.test :refer [is testing]]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.search :as search]))

(set! *warn-on-reflection* true)

(defn- thrown [f]
  (try (f) nil (catch clojure.lang.ExceptionInfo e (ex-data e))))

(defn- unfriend [st]
  (let [[a b c] (map :id (repeatedly 3 #(graph/create-participant! st "p")))
        f1 (graph/befriend! st a b)]
    (graph/befriend! st a c)
    (is (= [b c] (map :to (graph/friends st a))) "read before unfriend (would be cached)")
    (is (= [a] (map :to (graph/friends st b))))
    (is (true? (graph/unfriend! st b a)) "either order")
    (is (= [c] (map :to (graph/friends st a))) "both sides")
    (is (= [] (graph/friends st b)))
    (is (false? (graph/unfriend! st a b)) "idempotent: not friends any more")
    (is (false? (graph/unfriend! st b c)) "never friends")
    (let [f2 (graph/befriend! st a b)]
      (is (:created? f2) "befriending again makes a new friendship")
      (is (not= (:id f1) (:id f2)) "with a new id: ids are never reused"))
    (is (= :herald.feed.store/invalid (:type (thrown #(graph/unfriend! st a a)))))))

(defn- mutes [st]
  (let [[a b c] (map :id (repeatedly 3 #(graph/create-participant! st "p")))]
    (graph/befriend! st a b)
    (is (= #{} (graph/hidden st a)) "read before mute (would be cached)")
    (is (= {:from a :target c :created? true} (graph/mute! st a c)))
    (is (= {:from a :target b :created? true} (graph/mute! st a b)))
    (is (= {:from a :target b :created? false} (graph/mute! st a b)) "idempotent")
    (is (= [b c] (graph/mutes st a)) "ascending ids")
    (is (= #{b c} (graph/hidden st a)))
    (is (= #{} (graph/hidden st b)) "directed: the muted one sees the muter")
    (is (= [b] (map :to (graph/friends st a))) "the friendship is untouched")
    (is (true? (graph/unmute! st a b)))
    (is (false? (graph/unmute! st a b)) "idempotent")
    (is (= [c] (graph/mutes st a)))
    (is (= #{c} (graph/hidden st a)))
    (is (= [] (graph/mutes st b)))
    (is (= :herald.feed.store/invalid (:type (thrown #(graph/mute! st a a)))))))

(defn- blocks [st]
  (let [[a b c d] (map :id (repeatedly 4 #(graph/create-participant! st "p")))]
    (graph/befriend! st a b)
    (graph/befriend! st a c)
    (is (= [b c] (map :to (graph/friends st a))) "read before block (would be cached)")
    (is (= #{} (graph/hidden st b)))
    (is (= {:from a :target b :created? true} (graph/block! st a b)))
    (is (= {:from a :target b :created? false} (graph/block! st a b)) "idempotent")
    (is (= [c] (map :to (graph/friends st a))) "the block ends the friendship, both sides")
    (is (= [] (graph/friends st b)))
    (is (= [b] (graph/blocks st a)))
    (is (= [] (graph/blocks st b)) "directed")
    (is (= #{b} (graph/hidden st a)))
    (is (= #{a} (graph/hidden st b)) "the blocked one no longer sees the blocker")
    (doseq [[x y] [[a b] [b a]]]
      (is (= {:type :herald.feed.store/blocked :blocker a :blocked b} (thrown #(graph/befriend! st x y)))
          "befriending is refused in both directions"))
    (is (= [] (graph/friends st b)) "and writes nothing")
    (graph/block! st d a)
    (is (= #{b d} (graph/hidden st a)) "blocked by d too")
    (is (true? (graph/unblock! st a b)))
    (is (false? (graph/unblock! st a b)) "idempotent")
    (is (= #{d} (graph/hidden st a)))
    (is (= #{} (graph/hidden st b)))
    (is (= [] (map :to (graph/friends st b))) "unblocking does not restore the friendship")
    (is (true? (:created? (graph/befriend! st b a))) "befriending works again")
    (is (= :herald.feed.store/blocked (:type (thrown #(graph/befriend! st a d)))))
    (is (= :herald.feed.store/invalid (:type (thrown #(graph/block! st a a)))))
    (is (= :herald.feed.store/invalid (:type (thrown #(graph/unblock! st a 0)))))))

(defn- block-races [st]
  (let [pool (java.util.concurrent.Executors/newFixedThreadPool 6)]
    (try
      (dotimes [_ 10]
        (let [[a b] (map :id (repeatedly 2 #(graph/create-participant! st "p")))
              start (java.util.concurrent.CountDownLatch. 1)
              tasks (mapv (fn [i] (.submit pool ^Callable (fn [] (.await start)
                                                           (try (if (zero? (long (mod i 3))) (graph/block! st a b) (graph/befriend! st b a))
                                                                (catch clojure.lang.ExceptionInfo e (:type (ex-data e)))))))
                          (range 6))]
          (.countDown start)
          (run! #(.get ^java.util.concurrent.Future %) tasks)
          (is (= [] (graph/friends st a) (graph/friends st b)) "a block racing befriends leaves no friendship")))
      (finally (.shutdownNow pool)))))

(defn- search-pages [st]
  (let [[a b] (map :id (repeatedly 2 #(graph/create-participant! st "p")))
        ps (vec (for [i (range 7)] (feeds/publish! st {:from (if (even? i) a b) :occurred "2026-11-22" :subject "page"
                                                   :story (str "wren " i)} [])))
        _ (search/index-batch! st ps)
        _ (search/refresh-search! st)
        walk (fn [n] (loop [acc [] before nil pages 0]
                       (let [{:keys [items next]} (search/search-page st "wren" (cond-> {:limit n} before (assoc :before before)))
                             acc (into acc (map #(select-keys % [:id :from])) items)]
                         (if next (recur acc next (inc pages)) [acc (inc pages)]))))
        expect (mapv #(select-keys % [:id :from]) (rseq ps))]
    (doseq [n [1 2 3 7 10]]
      (let [[items pages] (walk n)]
        (is (= expect items) (str "pages of " n " walk every hit once, newest first"))
        (is (= (max 1 (long (Math/ceil (/ 7.0 n)))) pages) (str "no empty trailing page at limit " n))))
    (is (= (mapv :from (rseq ps)) (search/search st "wren")) "the same hits as search")
    (is (= {:items [] :next nil} (search/search-page st "giraffe")))
    (is (= {:items [] :next nil} (search/search-page st " ;, ")))
    (is (= :herald.feed.store/bad-cursor (:type (thrown #(search/search-page st "wren" {:before "nope"})))))))

(defn- search-hidden
  "A searcher's hidden senders (opts :hidden) are left out by the search itself: every page is full while visible
  hits remain, also when hidden hits come first, between and last, and no page is empty."
  [st]
  (let [[a b c] (map :id (repeatedly 3 #(graph/create-participant! st "p")))
        senders [b a b b c a b b b]                         ; oldest first: the newest three and the oldest are b's
        ps (vec (for [[i from] (map-indexed vector senders)]
                  (feeds/publish! st {:from from :occurred "2026-11-22" :subject "hide" :story (str "finch " i)} [])))
        _ (search/index-batch! st ps)
        _ (search/refresh-search! st)
        walk (fn [hidden n]
               (loop [acc [] sizes [] before nil]
                 (let [{:keys [items next]} (search/search-page st "finch" (cond-> {:limit n :hidden hidden} before (assoc :before before)))
                       acc (into acc (map #(select-keys % [:id :from])) items)
                       sizes (conj sizes (count items))]
                   (if next (recur acc sizes next) [acc sizes]))))
        visible (fn [hidden] (vec (for [p (rseq ps) :when (not (contains? hidden (:from p)))] (select-keys p [:id :from]))))]
    (doseq [hidden [#{b} #{b c} #{a b c} #{c 999999}] n [1 2 3 10]]
      (let [[items sizes] (walk hidden n)
            expect (visible hidden)]
        (is (= expect items) (str "hidden " hidden ", pages of " n ": every visible hit once, newest first"))
        (is (every? #(= n %) (butlast sizes)) (str "hidden " hidden ": every page but the last holds " n))
        (is (or (empty? expect) (pos? (long (peek sizes)))) (str "hidden " hidden ": no empty last page"))))
    (is (= (visible #{}) (first (walk #{} 4)) (first (walk nil 4))) "an empty or nil :hidden hides nothing")
    (is (= :herald.feed.store/invalid (:type (thrown #(search/search-page st "finch" {:hidden [b]})))) ":hidden is a set")
    (is (= :herald.feed.store/invalid (:type (thrown #(search/search-page st "finch" {:hidden #{0}})))) "of ids")))

(def checks
  "name -> (fn [store]), merged into herald.feed.store.contract/checks."
  (array-map "unfriend" unfriend "mutes" mutes "blocks" blocks "block-races" block-races "search-pages" search-pages
             "search-hidden" search-hidden))
