(ns herald.flow.impl.route
  "Flow conditions compiled to routing fns, and group keys: where each segment a task emits goes."
  (:require [herald.flow.impl.types :as t]))

(set! *warn-on-reflection* true)

(defn- compile-predicate [p resolve]
  (cond (keyword? p) (resolve p)
        (= :and (first p)) (let [ps (mapv #(compile-predicate % resolve) (rest p))]
                             (fn [& args] (every? #(apply % args) ps)))
        (= :or (first p)) (let [ps (mapv #(compile-predicate % resolve) (rest p))]
                            (fn [& args] (boolean (some #(apply % args) ps))))
        (= :not (first p)) (let [q (compile-predicate (second p) resolve)] (fn [& args] (not (apply q args))))))

(defn- target-indexes [to targets]
  (case to
    :all (vec (range (count targets)))
    :none []
    (mapv #(.indexOf ^java.util.List targets %) to)))

(defn conditions
  "The compiled flow conditions of `task-name` whose out-edges are `targets` (a vector of task names):
  {:normal [{:pred f :to [i ...] :short? b}] :thrown [{:pred f :to [i ...] :post f}]}."
  [job task-name targets resolve]
  (let [mine (filter #(= task-name (:flow/from %)) (:flow-conditions job))
        c (fn [fc] {:pred (compile-predicate (:flow/predicate fc) resolve)
                    :to (target-indexes (:flow/to fc) targets)
                    :short? (:flow/short-circuit? fc)
                    :post (some-> (:flow/post-transform fc) resolve)})]
    {:normal (mapv c (remove :flow/thrown-exception? mine))
     :thrown (mapv c (filter :flow/thrown-exception? mine))}))

(defn route-normal
  "Calls `(add! i seg)` for every target index the segment goes to under `normal` conditions
  (every target when there are none)."
  [normal ^long ntargets seg add!]
  (if (empty? normal)
    (loop [i 0] (when (< i ntargets) (add! i seg) (recur (inc i))))
    (let [hit (reduce (fn [acc {:keys [pred to short?]}]
                        (if (pred seg)
                          (if short? (reduced to) (into acc to))
                          acc))
                      #{} normal)]
      (doseq [i hit] (add! i seg)))))

(defn error-segment
  "The default post-transform of a thrown-exception condition: the segment with :flow/error."
  [task-name seg ^Throwable e]
  (assoc seg :flow/error {:task task-name :message (.getMessage e) :data (ex-data e)
                          :class (.getName (class e))}))

(defn route-thrown
  "Routes the input segment of a fn that threw by the `thrown` conditions; false when none matched."
  [task-name thrown seg e add!]
  (let [hits (filter #((:pred %) seg e) thrown)]
    (doseq [{:keys [to post]} hits :let [s (if post (post seg e) (error-segment task-name seg e))] i to]
      (add! i s))
    (boolean (seq hits))))

(defn group-fn
  "The fn of a segment giving its group under the task's :task/group-by-key or :task/group-by-fn, or nil."
  [task resolve]
  (let [k (:task/group-by-key task)]
    (cond (keyword? k) (fn [seg] (get seg k))
          (vector? k) (fn [seg] (mapv #(get seg %) k))
          (:task/group-by-fn task) (resolve (:task/group-by-fn task)))))

(defn partition-of
  "The thread (0..n-1) a group goes to: stable across runs, as snapshots rely on it."
  ^long [group ^long n]
  (Math/floorMod (long (hash group)) n))

(defn resolver
  "A caching resolver of fn-referencing keywords (validation already proved they resolve)."
  []
  (let [cache (atom {})]
    (fn [kw]
      (if (fn? kw)
        kw
        (or (get @cache kw)
            (let [f (t/resolve-fn kw)] (swap! cache assoc kw f) f))))))
