(ns herald.flow.gen
  "test.check generators of valid jobs, and the naive sequential interpreter their outputs are compared with."
  (:require [clojure.test.check.generators :as gen]
            [herald.flow.impl.types :as t]))

(set! *warn-on-reflection* true)

(def fns [:herald.flow.test-fns/inc-n :herald.flow.test-fns/dbl-n :herald.flow.test-fns/split
          :herald.flow.test-fns/drop-odd :herald.flow.test-fns/boom-7])
(def preds [:herald.flow.test-fns/even-n? :herald.flow.test-fns/big? :herald.flow.test-fns/small-k?])

(def gen-pred
  (gen/recursive-gen (fn [inner] (gen/one-of [(gen/fmap #(into [:and] %) (gen/vector inner 1 2))
                                              (gen/fmap #(into [:or] %) (gen/vector inner 1 2))
                                              (gen/fmap (fn [p] [:not p]) inner)]))
                     (gen/elements preds)))

(defn- name-of [prefix i] (keyword (str prefix i)))

(def gen-shape
  "{:inputs n :fns [fn-kw ...] :outputs n} plus random choices for edges."
  (gen/hash-map :inputs (gen/choose 1 2) :fns (gen/vector (gen/elements fns) 1 4) :outputs (gen/choose 1 2)
                :picks (gen/vector (gen/choose 0 100) 24) :pars (gen/vector (gen/choose 1 3) 4)
                :batch (gen/elements [1 2 7 64]) :conds (gen/vector (gen/tuple gen/boolean gen-pred gen/boolean) 4)
                :segments (gen/vector (gen/hash-map :n (gen/choose 0 100) :k (gen/choose 0 4)) 0 60)
                :window? gen/boolean))

(defn job-of
  "A valid job from a generated shape: inputs -> function tasks -> outputs, random edges, flow conditions,
  parallelism, group keys, and maybe a windowed reduce leaf."
  [{:keys [inputs fns outputs picks pars batch conds window?]}]
  (let [ins (mapv #(name-of "in" %) (range inputs))
        fs (mapv #(name-of "f" %) (range (count fns)))
        outs (mapv #(name-of "out" %) (range outputs))
        pick (fn [i xs] (nth xs (mod (nth picks (mod i (count picks))) (count xs))))
        fn-edges (for [[i f] (map-indexed vector fs)
                       src (distinct [(pick i (into ins (take i fs))) (pick (+ 7 i) (into ins (take i fs)))])]
                   [src f])
        out-edges (for [[i o] (map-indexed vector outs)] [(pick (+ 13 i) (into ins fs)) o])
        edges (vec (distinct (concat fn-edges out-edges)))
        leafless (remove (set (map first edges)) (into ins fs))
        edges (into edges (map-indexed (fn [i n] [n (pick (+ 3 i) outs)]) leafless))
        edges (cond-> edges window? (conj [(last fs) :agg]))
        catalog (concat (for [i ins] {:task/name i :task/type :input :task/plugin :herald.flow.plugin/seq-input :task/batch-size batch})
                        (for [[i f] (map-indexed vector fs)]
                          (cond-> {:task/name f :task/type :function :task/fn (nth fns i) :task/parallelism (nth pars i)}
                            (odd? (nth picks (+ 17 i))) (assoc :task/group-by-key :k)))
                        (for [o outs] {:task/name o :task/type :output :task/plugin :herald.flow.plugin/collecting-output})
                        (when window? [{:task/name :agg :task/type :reduce :task/group-by-key :k :task/parallelism 2}]))
        downstream (fn [n] (vec (distinct (keep (fn [[a b]] (when (= a n) b)) edges))))
        fcs (for [[i [on? p short?]] (map-indexed vector conds) :when on?
                  :let [from (nth fs (mod i (count fs))) ds (downstream from)]]
              {:flow/from from :flow/predicate p :flow/short-circuit? short?
               :flow/to (if (even? (nth picks (+ 5 i))) :all [(pick i ds)])})
        fcs (concat (filter :flow/short-circuit? fcs) (remove :flow/short-circuit? fcs))
        thrown (for [[i f] (map-indexed vector fns) :when (and (= f :herald.flow.test-fns/boom-7) (even? (nth picks i)))]
                 {:flow/from (nth fs i) :flow/to :all :flow/predicate :herald.flow.test-fns/seven?
                  :flow/thrown-exception? true :flow/post-transform :herald.flow.test-fns/err->seg})]
    (cond-> {:workflow edges :catalog (vec catalog) :flow-conditions (vec (concat fcs thrown))}
      window? (assoc :windows [{:window/id :w :window/task :agg :window/type :global :window/aggregation [:herald.flow/sum :n]}]
                     :triggers [{:trigger/window-id :w :trigger/on :watermark :trigger/sync :herald.flow.test-fns/collect-fired!}]))))

(defn- route-of [job task seg]
  (let [outs (vec (distinct (keep (fn [[a b]] (when (= a task) b)) (:workflow job))))
        normal (filter #(and (= task (:flow/from %)) (not (:flow/thrown-exception? %))) (:flow-conditions job))
        pred (fn pred [p] (cond (keyword? p) ((t/resolve-fn p) seg)
                                (= :and (first p)) (every? pred (rest p))
                                (= :or (first p)) (boolean (some pred (rest p)))
                                :else (not (pred (second p)))))]
    (if (empty? normal)
      outs
      (distinct (reduce (fn [acc {:flow/keys [predicate to short-circuit?]}]
                          (if (pred predicate)
                            (let [ts (case to :all outs :none [] to)] (if short-circuit? (reduced ts) (into acc ts)))
                            acc))
                        [] normal)))))

(defn interpret
  "Runs `job` on `inputs` (input task name -> segments) one segment at a time, depth first. Returns
  {:outputs {output-name [segments]} :errors n :sums {group sum}} for comparison as multisets."
  [job inputs]
  (let [tasks (into {} (map (juxt :task/name identity)) (:catalog job))
        result (atom {:outputs {} :errors 0 :sums {}})]
    (letfn [(deliver [task seg]
              (let [{type :task/type fkw :task/fn} (tasks task)]
                (case type
                  :output (swap! result update-in [:outputs task] (fnil conj []) seg)
                  :reduce (swap! result update-in [:sums (:k seg)] (fnil + 0) (or (:n seg) 0))
                  :function (let [f (t/resolve-fn fkw)
                                  r (try {:ok (f seg)} (catch Exception e {:error e}))]
                              (if-let [e (:error r)]
                                (do (swap! result update :errors inc)
                                    (doseq [fc (:flow-conditions job)
                                            :when (and (= task (:flow/from fc)) (:flow/thrown-exception? fc)
                                                       ((t/resolve-fn (:flow/predicate fc)) seg e))
                                            n (vec (distinct (keep (fn [[a b]] (when (= a task) b)) (:workflow job))))]
                                      (deliver n ((t/resolve-fn (:flow/post-transform fc)) seg e))))
                                (doseq [s (let [x (:ok r)] (cond (map? x) [x] (nil? x) [] :else x))
                                        n (try (route-of job task s)
                                               (catch Exception _ (swap! result update :errors inc) []))]
                                  (deliver n s)))))))]
      (doseq [[in segs] inputs s segs n (route-of job in s)] (deliver n s)))
    @result))

(defn multiset [xs] (frequencies xs))
