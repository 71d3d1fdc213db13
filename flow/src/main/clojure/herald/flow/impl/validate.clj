(ns herald.flow.impl.validate
  "Validation of a job against the model: every problem is an ex-info naming the key, the value and the fix."
  (:require [herald.flow.impl.model :as model]
            [herald.flow.impl.types :as t :refer [invalid!]]))

(set! *warn-on-reflection* true)

(defn- type-ok? [type one-of v]
  (if one-of
    (contains? (set one-of) v)
    (case type
      (:keyword :task :window) (keyword? v)
      :fn (qualified-keyword? v)
      :calls (qualified-keyword? v)
      :pos-int (pos-int? v)
      :nat-int (nat-int? v)
      :retries (or (nat-int? v) (= :forever v))
      :boolean (boolean? v)
      :string (string? v)
      :vector (vector? v)
      :duration (t/duration? v)
      :group-key (or (keyword? v) (and (vector? v) (seq v) (every? keyword? v)))
      :edges (and (vector? v) (every? #(and (vector? %) (= 2 (count %)) (every? keyword? %)) v))
      :catalog (and (vector? v) (every? map? v))
      :task-or-all (keyword? v)
      :targets (or (#{:all :none} v) (and (vector? v) (seq v) (every? keyword? v)))
      :predicate (or (qualified-keyword? v) (and (vector? v) (#{:and :or :not} (first v))))
      :aggregation (or (qualified-keyword? v) (and (vector? v) (qualified-keyword? (first v))))
      :serde (or (#{:edn :codec} v) (qualified-keyword? v))
      :path (or (string? v) (instance? java.io.File v))
      :live-fn (fn? v)
      :inject (and (map? v) (every? map? (vals v)))
      :map (map? v)
      :config (and (map? v) (every? #(or (string? %) (keyword? %)) (keys v)))
      true)))

(defn- words [type one-of] (t/describe-type type one-of))

(defn- check-keys!
  "Unknown keys, missing keys, keys not allowed here and values of the wrong type, for one map of `section`."
  [section m path own-ns? default-label]
  (when-not (map? m) (invalid! path nil m "is not a map" (str "write the " (name section) " as a map")))
  (let [ks (model/by-section section)]
    (doseq [key (keys m) :when (and (own-ns? key) (not (contains? ks key)))]
      (invalid! (conj path key) key (get m key) (str "is not a key of " default-label)
                (if-let [c (t/closest key (keys ks))]
                  (str "did you mean " c "?")
                  (str "use one of " (vec (sort (keys ks)))))))
    (doseq [[key {:keys [type optional? one-of required-when allowed-when]}] ks]
      (let [present? (contains? m key) v (get m key)
            when-holds? (fn [[wk wvs]] (contains? wvs (get m wk (:default (get ks wk)))))]
        (when (and (not present?) (or (not optional?) (and required-when (when-holds? required-when))))
          (invalid! (conj path key) key nil (str "is missing from " default-label)
                    (str "add " key ", " (words type one-of)
                         (when required-when (str " (required when " (first required-when) " is "
                                                  (get m (first required-when)) ")")))))
        (when (and present? allowed-when (not (when-holds? allowed-when)))
          (invalid! (conj path key) key v (str "is not allowed when " (first allowed-when) " is "
                                               (pr-str (get m (first allowed-when))))
                    (str "remove it, or use it only when " (first allowed-when) " is one of " (vec (second allowed-when)))))
        (when (and present? (not (type-ok? type one-of v)))
          (invalid! (conj path key) key v (str "is not " (words type one-of))
                    (str "make it " (words type one-of))))))))

(defn- own-ns [& ns-names] (let [s (set ns-names)] (fn [k] (or (nil? (namespace k)) (contains? s (namespace k))))))

(defn- check-section! [job section k ns-names label]
  (doseq [[i m] (map-indexed vector (get job k []))]
    (check-keys! section m [k i] (apply own-ns (if (string? ns-names) [ns-names] ns-names)) (str (if (re-find #"^[aeiou]" label) "an " "a ") label))))

(defn- cycle-path
  "A path [a b ... a] through `succ` if the graph has a cycle, else nil."
  [nodes succ]
  (let [state (volatile! {})]
    (letfn [(visit [n stack]
              (case (get @state n)
                :done nil
                :active (conj (vec (drop-while #(not= n %) stack)) n)
                (do (vswap! state assoc n :active)
                    (or (some #(visit % (conj stack n)) (succ n))
                        (do (vswap! state assoc n :done) nil)))))]
      (some #(visit % []) nodes))))

(defn- check-graph! [job tasks]
  (let [edges (:workflow job)
        ins (group-by second edges) outs (group-by first edges)]
    (doseq [[i [from to :as e]] (map-indexed vector edges) [pos n] [[0 from] [1 to]]]
      (when-not (contains? tasks n)
        (invalid! [:workflow i pos] :workflow n "names a task missing from :catalog"
                  (str "add {:task/name " n " ...} to :catalog or fix the edge " e)))
      (when (= from to) (invalid! [:workflow i] :workflow e "is a self-loop" "remove the edge")))
    (when-let [dup (some (fn [[e n]] (when (> n 1) e)) (frequencies edges))]
      (invalid! [:workflow] :workflow dup "appears twice" "remove the duplicate edge"))
    (when-let [c (cycle-path (keys tasks) #(map second (outs %)))]
      (invalid! [:workflow] :workflow c "is a cycle" "a workflow is a directed acyclic graph: remove one edge of the cycle"))
    (doseq [[n {:task/keys [type parallelism] :as task}] tasks
            :let [path [:catalog (:index (meta task)) :task/type]]]
      (cond (and (not (ins n)) (not (outs n)))
            (invalid! [:catalog (:index (meta task)) :task/name] :task/name n "is in :catalog but not in :workflow"
                      "add an edge for it or remove it from :catalog")
            (and (= type :input) (ins n))
            (invalid! path :task/type type (str "of task " n " has in-edges " (mapv first (ins n)))
                      "an input cannot receive segments: remove those edges or make it a :function task")
            (and (not= type :input) (not (ins n)))
            (invalid! path :task/type type (str "of task " n " has no in-edges")
                      "a root of the workflow must be an :input task")
            (and (= type :output) (outs n))
            (invalid! path :task/type type (str "of task " n " has out-edges " (mapv second (outs n)))
                      "an output is a leaf: remove those edges or make it a :function task")
            (and (= type :function) (not (outs n)))
            (invalid! path :task/type type (str "of task " n " is a leaf")
                      "a leaf must be an :output (or a :reduce task with windows): add an edge to an output")
            (and (= type :input) (> (long (or parallelism 1)) 1))
            (invalid! [:catalog (:index (meta task)) :task/parallelism] :task/parallelism parallelism
                      (str "of input " n " is more than 1") "inputs read on one thread: set it to 1 and raise the parallelism of downstream tasks")))
    outs))

(defn- check-predicate! [path p thrown?]
  (cond (qualified-keyword? p) (t/fn-ref! path :flow/predicate p)
        (and (vector? p) (= :not (first p)) (not= 2 (count p)))
        (invalid! path :flow/predicate p "takes exactly one predicate" "write [:not p]")
        (and (vector? p) (#{:and :or :not} (first p)) (next p))
        (doseq [[i q] (map-indexed vector (rest p))] (check-predicate! (conj path (inc i)) q thrown?))
        :else (invalid! path :flow/predicate p "is not a predicate"
                        "use a namespaced keyword naming a fn, or [:and ...], [:or ...], [:not p]")))

(defn- check-flow-conditions! [job tasks outs]
  (let [fcs (map-indexed vector (:flow-conditions job))]
    (doseq [[i {:flow/keys [from to predicate thrown-exception? post-transform]}] fcs
            :let [path [:flow-conditions i] downstream (set (map second (outs from)))]]
      (when-not (contains? tasks from)
        (invalid! (conj path :flow/from) :flow/from from "names a task missing from :catalog" "use a task name of the catalog"))
      (when (vector? to)
        (doseq [n to :when (not (downstream n))]
          (invalid! (conj path :flow/to) :flow/to n (str "is not downstream of " from)
                    (str "route only to " (vec (sort downstream)) ", :all or :none"))))
      (check-predicate! (conj path :flow/predicate) predicate thrown-exception?)
      (when post-transform (t/fn-ref! (conj path :flow/post-transform) :flow/post-transform post-transform)))
    (doseq [[from group] (group-by (comp :flow/from second) fcs)
            :let [after (drop-while (comp :flow/short-circuit? second) (remove (comp :flow/thrown-exception? second) group))
                  [i] (first after)
                  [j] (first (filter (comp :flow/short-circuit? second) after))]
            :when j]
      (invalid! [:flow-conditions j :flow/short-circuit?] :flow/short-circuit? true
                (str "comes after a condition of " from " that is not short-circuit (" [:flow-conditions i] ")")
                "put the short-circuit conditions of a task before its others"))))

(def ^:private max-extents-per-segment
  "The most sliding extents one segment may fall into (range / slide): beyond it a job does that much work per segment."
  10000)

(defn- check-extents!
  "Extent lengths a runtime can work with: a positive range, a positive slide no longer than the range (a longer one
  leaves gaps whose segments no extent counts), and at most `max-extents-per-segment` extents per segment."
  [path {:window/keys [type range slide] :or {type :fixed}}]
  (when (and (#{:fixed :sliding} type) (t/duration? range) (zero? (t/duration-ms range)))
    (invalid! (conj path :window/range) :window/range range "is zero: no segment fits an empty extent"
              "give the extent a positive length, e.g. [1 :minute]"))
  (when (and (= :sliding type) (t/duration? slide) (t/duration? range))
    (let [r (t/duration-ms range) s (t/duration-ms slide)]
      (cond (zero? s)
            (invalid! (conj path :window/slide) :window/slide slide "is zero: extents would start everywhere"
                      "give the slide a positive length no longer than :window/range")
            (> s r)
            (invalid! (conj path :window/slide) :window/slide slide
                      (str "is longer than :window/range " (pr-str range) ": segments between extents would be counted by none")
                      "use a slide no longer than the range (equal to it: a :fixed window)")
            (> (quot r s) max-extents-per-segment)
            (invalid! (conj path :window/slide) :window/slide slide
                      (str "puts each segment into " (quot r s) " extents of :window/range " (pr-str range)
                           " (at most " max-extents-per-segment ")")
                      "use a longer slide or a shorter range")))))

(defn- check-windows! [job tasks outs]
  (let [ids (map :window/id (:windows job))]
    (doseq [[i {:window/keys [id task aggregation on-late]}] (map-indexed vector (:windows job))
            :let [path [:windows i] tm (get tasks task)]]
      (when (> (count (filter #{id} ids)) 1)
        (invalid! (conj path :window/id) :window/id id "is not unique" "give every window its own id"))
      (cond (nil? tm) (invalid! (conj path :window/task) :window/task task "names a task missing from :catalog" "use a task name of the catalog")
            (not (#{:function :reduce} (:task/type tm)))
            (invalid! (conj path :window/task) :window/task task (str "is a " (:task/type tm) " task")
                      "windows aggregate what a :function or :reduce task emits")
            (and (> (long (:task/parallelism tm 1)) 1) (not (or (:task/group-by-key tm) (:task/group-by-fn tm))))
            (invalid! (conj path :window/task) :window/task task "runs on several threads without a group key"
                      "add :task/group-by-key (windows then aggregate per group) or set :task/parallelism 1"))
      (let [[kw] (if (vector? aggregation) aggregation [aggregation])]
        (when-not (= "herald.flow" (namespace kw))
          (t/fn-ref! (conj path :window/aggregation) :window/aggregation kw :map)))
      (when on-late (t/fn-ref! (conj path :window/on-late) :window/on-late on-late))
      (check-extents! path (nth (:windows job) i)))
    (doseq [[n tm] tasks
            :when (and (= :reduce (:task/type tm)) (not (some #(= n (:window/task %)) (:windows job))))]
      (invalid! [:catalog (:index (meta tm)) :task/type] :task/type :reduce (str "task " n " has no window")
                "a :reduce task hands its segments to windows: add a window on it or make it a :function task"))))

(defn- check-triggers! [job tasks outs]
  (let [windows (into {} (map (juxt :window/id identity)) (:windows job))]
    (doseq [[i {:trigger/keys [window-id sync emit]}] (map-indexed vector (:triggers job))
            :let [path [:triggers i] w (windows window-id)]]
      (when-not w
        (invalid! (conj path :trigger/window-id) :trigger/window-id window-id "names no window"
                  (if (seq windows)
                    (str "use one of " (vec (sort (keys windows))))
                    "define a window in :windows first (the job has none), then name its :window/id here")))
      (when-not (or sync emit)
        (invalid! path :trigger/sync nil "and :trigger/emit are both missing" "add :trigger/sync or :trigger/emit: a trigger that calls nothing does nothing"))
      (when sync (t/fn-ref! (conj path :trigger/sync) :trigger/sync sync))
      (when emit
        (t/fn-ref! (conj path :trigger/emit) :trigger/emit emit)
        (when-not (outs (:window/task w))
          (invalid! (conj path :trigger/emit) :trigger/emit emit (str "emits from " (:window/task w) ", which has no out-edges")
                    "add an edge from the window's task to an output, or use :trigger/sync"))))))

(defn- check-lifecycles! [job tasks]
  (doseq [[i {:lifecycle/keys [task calls]}] (map-indexed vector (:lifecycles job))
          :let [path [:lifecycles i]]]
    (when-not (or (= :all task) (contains? tasks task))
      (invalid! (conj path :lifecycle/task) :lifecycle/task task "names a task missing from :catalog" "use a task name or :all"))
    (let [m (t/fn-ref! (conj path :lifecycle/calls) :lifecycle/calls calls :map)]
      (check-keys! :lifecycle-calls m (conj path :lifecycle/calls) (constantly true) (str "the lifecycle calls " calls))
      (doseq [[k f] m :when (not (ifn? f))]
        (invalid! (conj path :lifecycle/calls k) k f "is not a fn" "make every hook a fn")))))

(defn- check-tasks! [job]
  (let [tasks (reduce (fn [acc [i m]]
                        (when (contains? acc (:task/name m))
                          (invalid! [:catalog i :task/name] :task/name (:task/name m) "is not unique" "give every task its own name"))
                        (assoc acc (:task/name m) (with-meta (merge (model/defaults :task) m) {:index i})))
                      {} (map-indexed vector (:catalog job)))]
    (doseq [[_ m] tasks :let [path [:catalog (:index (meta m))]]]
      (when (= :function (:task/type m)) (t/fn-ref! (conj path :task/fn) :task/fn (:task/fn m)))
      (when (and (= :reduce (:task/type m)) (contains? m :task/fn)) (t/fn-ref! (conj path :task/fn) :task/fn (:task/fn m)))
      (when-let [p (:task/plugin m)] (t/fn-ref! (conj path :task/plugin) :task/plugin p))
      (when-let [g (:task/group-by-fn m)] (t/fn-ref! (conj path :task/group-by-fn) :task/group-by-fn g))
      (when-let [r (:output/rejected? m)] (t/fn-ref! (conj path :output/rejected?) :output/rejected? r))
      (when (< (long (:output/backoff-max-ms m)) (long (:output/backoff-ms m)))
        (invalid! (conj path :output/backoff-max-ms) :output/backoff-max-ms (:output/backoff-max-ms m)
                  (str "is less than :output/backoff-ms " (:output/backoff-ms m))
                  "make the cap at least the first wait"))
      (when (and (:output/give-up-after-ms m) (= 0 (:output/retries m 0)))
        (invalid! (conj path :output/give-up-after-ms) :output/give-up-after-ms (:output/give-up-after-ms m)
                  "is given with no :output/retries: the first failure fails the task before any budget is spent"
                  "add :output/retries :forever (or a count that outlasts the budget)"))
      (when (and (:task/group-by-key m) (:task/group-by-fn m))
        (invalid! (conj path :task/group-by-fn) :task/group-by-fn (:task/group-by-fn m) "is given with :task/group-by-key" "keep one of the two")))
    tasks))

(defn check-map!
  "Throws the invalid-job error for a `job` that is not a map (nil, a vector, a string, ...)."
  [job]
  (when-not (map? job)
    (invalid! [] :job job (str "is not a job: the job is " (if (nil? job) "nil" (str "a " (.getName (class job)))))
              "a job is a map with :workflow and :catalog")))

(defn- validate* [job]
  (check-map! job)
  (check-keys! :job job [] (fn [k] (or (nil? (namespace k)) (= "job" (namespace k)))) "a job")
  (check-section! job :task :catalog ["task" "output"] "task")
  (check-section! job :flow-condition :flow-conditions "flow" "flow condition")
  (check-section! job :lifecycle :lifecycles "lifecycle" "lifecycle")
  (check-section! job :window :windows "window" "window")
  (check-section! job :trigger :triggers "trigger" "trigger")
  (let [tasks (check-tasks! job)
        outs (check-graph! job tasks)]
    (check-flow-conditions! job tasks outs)
    (check-windows! job tasks outs)
    (check-triggers! job tasks outs)
    (check-lifecycles! job tasks)
    (-> (merge (model/defaults :job) job)
        (assoc :catalog (mapv #(merge (model/defaults :task) %) (:catalog job)))
        (update :windows (fn [ws] (mapv #(merge (model/defaults :window) %) ws)))
        (update :triggers (fn [ts] (vec (map-indexed (fn [i tr] (merge {:trigger/id (keyword (str "trigger-" i))}
                                                                       (model/defaults :trigger) tr)) ts))))
        (update :flow-conditions (fn [fcs] (mapv #(merge (model/defaults :flow-condition) %) fcs))))))

(defn- owner
  "The name of the task, window or trigger an error `path` points into, as [kind name], or nil."
  [job [section i]]
  (when (int? i)
    (case section
      :catalog [:task (get-in job [:catalog i :task/name])]
      :windows [:window (get-in job [:windows i :window/id])]
      :flow-conditions [:task (get-in job [:flow-conditions i :flow/from])]
      :lifecycles [:task (get-in job [:lifecycles i :lifecycle/task])]
      :triggers [:window (get-in job [:triggers i :trigger/window-id])]
      nil)))

(defn validate-opts
  "Checks the options of `submit-job` (and their `:kafka` map) against the model's runtime sections; throws
  `:herald.flow/invalid-job` with `:path [:opts ...]` naming the key at fault."
  [opts]
  (when-not (map? opts) (invalid! [:opts] :opts opts "is not a map" "pass submit-job a map of options"))
  (check-keys! :submit opts [:opts] (constantly true) "the options of submit-job")
  (when (map? (:kafka opts))
    (check-keys! :kafka (:kafka opts) [:opts :kafka] (constantly true) "the :kafka options of submit-job"))
  opts)

(defn validate
  "Checks `job` against the model; returns it with defaults filled in or throws `:herald.flow/invalid-job`
  whose data carries :path, :key, :value, :problem, :hint and, when the path is inside one, the :task or
  :window it concerns (also named in the message)."
  [job]
  (try (validate* job)
       (catch clojure.lang.ExceptionInfo e
         (let [d (ex-data e) [kind n] (when (map? job) (owner job (:path d)))]
           (if (and (= :herald.flow/invalid-job (:type d)) (keyword? n) (not (contains? d kind)))
             (throw (ex-info (str (.getMessage e) " (" (name kind) " " n ")") (assoc d kind n) (.getCause e)))
             (throw e))))))
