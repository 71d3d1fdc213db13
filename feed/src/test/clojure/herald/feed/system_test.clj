(ns herald.feed.system-test
  "Tests of the system map: dependency order, reverse stop, rollback on a failed start, idempotent stop."
  (:require [clojure.test :refer [deftest is]]
            [herald.feed.system :as system]))

(set! *warn-on-reflection* true)

(defn- defs [log fail-key]
  (into {}
        (for [[k deps] {:c [:a :b] :a [] :b [:a] :d [:c]}]
          [k {:deps deps
              :start (fn [m] (when (= k fail-key) (throw (RuntimeException. "boom")))
                       (swap! log conj [:start k (set (keys m))]) k)
              :stop (fn [v] (swap! log conj [:stop v]))}])))

(deftest starts-in-dependency-order-and-stops-in-reverse
  (let [log (atom [])
        sys (system/start (defs log nil))]
    (is (= [[:start :a #{}] [:start :b #{:a}] [:start :c #{:a :b}] [:start :d #{:c}]] @log))
    (is (= :c (system/value sys :c)))
    (reset! log [])
    (system/stop sys)
    (is (= [[:stop :d] [:stop :c] [:stop :b] [:stop :a]] @log))
    (system/stop sys)
    (is (= 4 (count @log)) "stop is idempotent")))

(deftest a-failed-start-stops-what-started-and-names-the-key
  (let [log (atom [])
        e (try (system/start (defs log :c)) (catch clojure.lang.ExceptionInfo e e))]
    (is (= {:type :herald.feed/system-start :key :c} (ex-data e)))
    (is (= "boom" (ex-message (ex-cause e))))
    (is (= [[:stop :b] [:stop :a]] (filterv #(= :stop (first %)) @log)))))

(deftest cycles-and-missing-dependencies-are-named
  (is (= {:type :herald.feed/system-cycle :path [:a :b :a]}
         (ex-data (try (system/start-order {:a {:deps [:b]} :b {:deps [:a]}}) (catch Exception e e)))))
  (is (= :zz (:key (ex-data (try (system/start-order {:a {:deps [:zz]}}) (catch Exception e e)))))))

(deftest every-stop-runs-even-when-one-throws
  (let [log (atom [])
        sys (system/start {:a {:start (fn [_] :a) :stop (fn [_] (swap! log conj :a))}
                           :b {:deps [:a] :start (fn [_] :b) :stop (fn [_] (throw (RuntimeException. "stop failed")))}})
        e (try (system/stop sys) nil (catch clojure.lang.ExceptionInfo e e))]
    (is (= [:a] @log))
    (is (= :b (:key (ex-data e))))))
