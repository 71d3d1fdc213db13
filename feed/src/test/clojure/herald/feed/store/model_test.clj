(ns herald.feed.store.model-test
  "Property: random operation sequences give the same results on the embedded store as on the memory model."
  (:require [clojure.test.check.clojure-test :refer [defspec]]
            [clojure.test.check.generators :as gen]
            [clojure.test.check.properties :as prop]
            [clojure.walk :as walk]
            [herald.feed.store :as s]
            [herald.feed.store.feeds :as feeds]
            [herald.feed.store.graph :as graph]
            [herald.feed.store.search :as search]
            [herald.feed.store.fixtures :as fx]))

(set! *warn-on-reflection* true)

(def ^:private word (gen/elements ["apple" "Birne" "cherry" "dátil" "エルダー" "fig"]))

(def ^:private op
  (gen/frequency
   [[3 (gen/fmap (fn [n] [:create n]) (gen/elements ["a" "Zoë" "日本"]))]
    [3 (gen/tuple (gen/return :befriend) gen/nat gen/nat)]
    [4 (gen/tuple (gen/return :publish) gen/nat (gen/vector word 1 4))]
    [2 (gen/tuple (gen/return :index) gen/nat)]
    [1 (gen/return [:fan-out-pending])]
    [1 (gen/tuple (gen/return :deliver) gen/nat gen/nat)]
    [2 (gen/tuple (gen/return :search) (gen/vector word 1 2))]
    [2 (gen/tuple (gen/return :outbound) gen/nat (gen/choose 1 4))]
    [2 (gen/tuple (gen/return :inbound) gen/nat (gen/choose 1 4))]
    [1 (gen/tuple (gen/return :friends) gen/nat)]
    [1 (gen/return [:reopen])]]))

(defn- strip-ts
  "Results without server timestamps (each store has its own clock), pages reduced to items + more?."
  [x]
  (walk/postwalk #(cond (and (map? %) (contains? % :next)) {:items (:items %) :more? (some? (:next %))}
                        (and (map? %) (contains? % :ts)) (dissoc % :ts)
                        :else %)
                 x))

(defn- pid [st n] (let [c (:participants (s/stats st))] (when (pos? c) (inc (mod n c)))))

(defn- apply-op
  "Runs op on st; posts is the vector of posts this store published. Returns [result posts]."
  [st posts [kind a b]]
  (let [post-at #(when (seq posts) (nth posts (mod % (count posts))))]
    (case kind
      :create [(graph/create-participant! st a) posts]
      :befriend (let [x (pid st a) y (pid st b)] [(when (and x (not= x y)) (graph/befriend! st x y)) posts])
      :publish (if-let [x (pid st a)]
                 (let [p (feeds/publish! st {:from x :occurred "2026-11-22" :subject "s" :story (apply str (interpose " " b))}
                                     (mapv :to (graph/friends st x)))]
                   [p (conj posts p)])
                 [nil posts])
      :index [(some->> (post-at a) (search/index! st)) posts]
      :fan-out-pending [(let [ps (vec (feeds/pending-fanouts st))]
                          (doseq [{:keys [post recipients]} ps] (feeds/fan-out! st post recipients))
                          ps) posts]
      :deliver [(let [p (post-at a) r (pid st b)] (when (and p r) (feeds/deliver! st r p))) posts]
      :search [(search/search st (apply str (interpose " " a))) posts]
      :outbound [(some-> (pid st a) (#(feeds/outbound st % {:limit b}))) posts]
      :inbound [(some-> (pid st a) (#(feeds/inbound st % {:limit b}))) posts]
      :friends [(some->> (pid st a) (graph/friends st)) posts])))

(defn- run-both [ops]
  (let [model (s/open-store {:type :memory}) dir (fx/temp-dir "model")
        open #(s/open-store {:type :embedded :data-dir dir :block-cache-mb 8 :write-buffer-mb 4 :index-ram-mb 16 :search-max-lag-ms 0})
        emb (volatile! (open))]
    (try
      (loop [[o & more] ops mp [] ep []]
        (cond
          (nil? o) true
          ;; on open the embedded store indexes every published post missing from its index
          (= :reopen (first o)) (do (s/close-store! @emb) (vreset! emb (open))
                                    (run! #(search/index! model %) mp)
                                    (recur more mp ep))
          :else (let [[mr mp'] (apply-op model mp o) [er ep'] (apply-op @emb ep o)]
                  (if (= (strip-ts mr) (strip-ts er))
                    (recur more mp' ep')
                    {:op o :model mr :embedded er}))))
      (finally (s/close-store! @emb) (fx/delete-tree! dir)))))

(defspec embedded-store-behaves-like-the-model 12
  (prop/for-all [ops (gen/vector op 1 40)]
    (true? (run-both ops))))
