(ns herald.feed.system
  "A small system map: components with dependencies, started in dependency order and stopped in reverse."
  (:require [clojure.string :as str]))

(set! *warn-on-reflection* true)

;; A component definition is {:deps [keys...] :start (fn [deps-map] value) :stop (fn [value])}.
;; deps-map holds the started values of the component's dependencies under their keys.

(defn- cycle-error [path]
  (ex-info (str "system dependency cycle: " (str/join " -> " path))
           {:type :herald.feed/system-cycle :path path}))

(defn start-order
  "Returns the keys of `defs` (key -> component definition) in a dependency-first order.
  Throws ex-info naming the key for an unknown dependency or a cycle."
  [defs]
  (let [visit (fn visit [[order done :as acc] k path]
                (cond (done k) acc
                      (some #{k} path) (throw (cycle-error (conj path k)))
                      :else
                      (let [d (get defs k)]
                        (when-not d
                          (throw (ex-info (str "component " k " is required by " (peek path) " but not defined")
                                          {:type :herald.feed/system-missing :key k :required-by (peek path)})))
                        (let [[o dn] (reduce #(visit %1 %2 (conj path k)) acc (:deps d))]
                          [(conj o k) (conj dn k)]))))]
    (first (reduce #(visit %1 %2 []) [[] #{}] (sort (keys defs))))))

(defn- stop-started! [started order]
  (let [errors (volatile! [])]
    (doseq [k (reverse order)
            :let [entry (get started k)]
            :when entry]
      (try ((or (:stop entry) (fn [_])) (:value entry))
           (catch Throwable t (vswap! errors conj [k t]))))
    @errors))

(defn start
  "Starts every component of `defs` (key -> {:deps [k..] :start (fn [deps]) :stop (fn [value])})
  in dependency order; returns a system map {:order [...] :started {k {:value v :stop f}} :stopped? atom}.
  If a component fails to start, the ones already started are stopped in reverse and an ex-info
  naming the failed key is thrown with the original cause."
  [defs]
  (let [order (start-order defs)]
    (loop [[k & more] order started {}]
      (if-not k
        {:order order :started started :stopped? (atom false)}
        (let [{:keys [deps stop] start-fn :start} (get defs k)
              dep-values (into {} (map (fn [d] [d (get-in started [d :value])])) deps)
              result (try {:ok (start-fn dep-values)} (catch Throwable t {:error t}))]
          (if-let [t (:error result)]
            (do (stop-started! started order)
                (throw (ex-info (str "component " k " failed to start: " (ex-message t))
                                {:type :herald.feed/system-start :key k} t)))
            (recur more (assoc started k {:value (:ok result) :stop stop}))))))))

(defn value
  "The started value of component `k` in `system`, or nil."
  [system k]
  (get-in system [:started k :value]))

(defn stop
  "Stops the components of `system` in reverse dependency order. Idempotent: a second call does
  nothing. Every component's stop runs even if an earlier one throws; the first failure is then
  rethrown as an ex-info naming the component."
  [system]
  (when (and system (compare-and-set! (:stopped? system) false true))
    (let [errors (stop-started! (:started system) (:order system))]
      (when-let [[k t] (first errors)]
        (throw (ex-info (str "component " k " failed to stop: " (ex-message t))
                        {:type :herald.feed/system-stop :key k :failures (mapv first errors)} t)))))
  nil)
