(ns herald.flow.impl.plan
  "The physical plan of a validated job: tasks fused into stages, stages into threads, edges into queues."
  (:import (java.util.concurrent ArrayBlockingQueue)))

(set! *warn-on-reflection* true)

(defn- fusible?
  "Whether edge a->b can run in one loop: a straight line, same thread count, no regrouping."
  [tasks ins outs a b]
  (let [ta (tasks a) tb (tasks b)]
    (and (= [b] (outs a)) (= [a] (ins b))
         (= (:task/parallelism ta) (:task/parallelism tb))
         (or (= 1 (:task/parallelism tb))
             (not (or (:task/group-by-key tb) (:task/group-by-fn tb)))))))

(defn stages
  "Vector of stages, each {:id i :tasks [task-name ...] :parallelism p}, in topological order."
  [job {:keys [fuse?] :or {fuse? true}}]
  (let [tasks (into {} (map (juxt :task/name identity)) (:catalog job))
        edges (:workflow job)
        outs (reduce (fn [m [a b]] (update m a (fnil conj []) b)) {} edges)
        ins (reduce (fn [m [a b]] (update m b (fnil conj []) a)) {} edges)
        fused-in? (fn [b] (let [[a] (ins b)] (and fuse? a (fusible? tasks ins outs a b))))
        order (loop [order [] seen #{} frontier (filter #(empty? (ins %)) (map :task/name (:catalog job)))]
                (if-let [n (first frontier)]
                  (let [seen (conj seen n)
                        ready (filter (fn [m] (and (not (seen m)) (every? seen (ins m)))) (outs n))]
                    (recur (conj order n) seen (distinct (concat (rest frontier) ready))))
                  order))
        heads (remove fused-in? order)]
    (vec (map-indexed
          (fn [i head]
            {:id i
             :tasks (loop [chain [head]]
                      (let [[nxt] (outs (peek chain))]
                        (if (and nxt (= 1 (count (outs (peek chain)))) (fused-in? nxt)) (recur (conj chain nxt)) chain)))
             :parallelism (:task/parallelism (tasks head))})
          heads))))

(defn wire
  "Adds to each stage its workers' queues (:queues), worker ids (:worker-ids), the stages it sends to
  (:targets, by the last task's out-edges, as stage ids) and the worker ids that send to it (:producers)."
  [job stages ^long capacity]
  (let [head->stage (into {} (map (juxt (comp first :tasks) :id)) stages)
        outs (reduce (fn [m [a b]] (update m a (fnil conj []) b)) {} (:workflow job))
        ids (reductions + 0 (map :parallelism stages))
        stages (mapv (fn [s base]
                       (assoc s :worker-ids (vec (range base (+ (long base) (long (:parallelism s)))))
                              :queues (vec (repeatedly (:parallelism s) #(ArrayBlockingQueue. capacity)))
                              :target-tasks (vec (outs (peek (:tasks s)) []))
                              :targets (mapv head->stage (outs (peek (:tasks s)) []))))
                     stages ids)]
    (mapv (fn [s]
            (assoc s :producers (set (mapcat :worker-ids (filter #(some #{(:id s)} (:targets %)) stages)))))
          stages)))
