;; Herald's clojure.test runner, run by each module's `test` phase (see the parent pom).
;; Usage: clojure.main build/test_runner.clj TEST-DIR SUMMARY-FILE
;; Loads every *_test.clj under TEST-DIR, runs its tests (skipping ^:stress and ^:benchmark unless
;; -Dherald.test.include=stress,benchmark), fails on reflection warnings in herald code, prints
;; "N passed, N failed, N skipped" last, writes the same counts to SUMMARY-FILE and exits 1 on failure.
;; A test that cannot run (a backend that cannot start) reports (clojure.test/do-report {:type :skip :message "why"}).
;; Shared test servers whose start fn is marked ^:herald.test/start-early start in the background once the
;; namespaces are loaded (see start-early!).
(ns herald.build.test-runner
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [clojure.test :as t]))

(defn- test-namespaces [^java.io.File dir]
  (let [root (.toPath (.getCanonicalFile dir))]
    (->> (file-seq (.getCanonicalFile dir))
         (filter #(str/ends-with? (.getName ^java.io.File %) "_test.clj"))
         (map #(-> (str (.relativize root (.toPath ^java.io.File %)))
                   (str/replace #"\.clj$" "")
                   (str/replace "/" ".")
                   (str/replace "_" "-")
                   symbol))
         sort)))

(def ^:private include
  (set (map keyword (str/split (System/getProperty "herald.test.include" "none") #","))))

(defn- selected? [v]
  (let [m (meta v)]
    (not (some #(and (get m %) (not (include %))) [:stress :benchmark]))))

(def ^:private skips (atom []))

(defmethod t/report :skip [m]
  (swap! skips conj m)
  (t/with-test-out
    (println "SKIPPED" (some-> t/*testing-vars* first meta :name) "-" (:message m))))

(def ^:private outcomes (atom {:passed 0 :failed 0 :skipped 0}))

(def ^:private var-times "[[var-symbol ms] ...] of every test var run, in run order" (atom []))

(defn- run-var [v]
  (let [bad #(+ (:fail @t/*report-counters*) (:error @t/*report-counters*))
        bad0 (bad) skip0 (count @skips)
        t0 (System/nanoTime)]
    (t/test-var v)
    (swap! var-times conj [(symbol v) (quot (- (System/nanoTime) t0) 1000000)])
    (swap! outcomes update (cond (> (bad) bad0) :failed
                                 (> (count @skips) skip0) :skipped
                                 :else :passed)
           inc)))

(defn- run-ns [ns-sym]
  (let [ns (the-ns ns-sym)
        once (t/join-fixtures (::t/once-fixtures (meta ns)))
        each (t/join-fixtures (::t/each-fixtures (meta ns)))
        vars (->> (vals (ns-interns ns)) (filter (comp :test meta)) (filter selected?)
                  (sort-by (comp :line meta)))]
    (binding [t/*report-counters* (ref t/*initial-report-counters*)]
      (t/do-report {:type :begin-test-ns :ns ns})
      (when (seq vars)
        (try (once (fn [] (doseq [v vars] (each (fn [] (run-var v))))))
             (catch Throwable e
               (t/do-report {:type :error :message "uncaught in fixture" :expected nil :actual e})
               (swap! outcomes update :failed inc))))
      (t/do-report {:type :end-test-ns :ns ns})
      @t/*report-counters*)))

(defn- load-namespaces [nss]
  (let [err (java.io.StringWriter.)
        out *err*
        tee (proxy [java.io.Writer] []
              (write ([x] (if (string? x) (do (.write err ^String x) (.write out ^String x))
                              (if (int? x) (do (.write err (int x)) (.write out (int x)))
                                  (do (.write err ^chars x) (.write out ^chars x)))))
                     ([x off len] (if (string? x)
                                    (do (.write err ^String x (int off) (int len)) (.write out ^String x (int off) (int len)))
                                    (do (.write err ^chars x (int off) (int len)) (.write out ^chars x (int off) (int len))))))
              (flush [] (.flush out))
              (close [] nil))
        failures (atom 0)]
    (binding [*err* tee]
      (doseq [n nss]
        (try (require n)
             (catch Throwable e
               (swap! failures inc)
               (println "ERROR loading" n ":" (.getMessage e))
               (.printStackTrace e)))))
    (let [warnings (->> (str/split-lines (str err))
                        (filter #(str/starts-with? % "Reflection warning"))
                        (filter #(re-find #"herald/" %)))]
      (doseq [w warnings] (println "FAIL (reflection)" w))
      (+ @failures (count warnings)))))

(defn- start-early!
  "Calls, each in its own future, every public fn of the loaded namespaces marked ^:herald.test/start-early (the
  start of a shared test server in a child JVM or in this one, which tests would otherwise wait for when they
  first use it), so that its start overlaps the tests that run before. A server that no selected namespace
  requires is not loaded, so not started; a start that fails is reported by the tests that use it."
  []
  (doseq [n (all-ns) [_ v] (ns-publics n) :when (:herald.test/start-early (meta v))]
    (future (try (v) (catch Throwable _ nil)))))

(defn- report-property-seeds!
  "Makes every defspec failure print, on lines of its own, the test, its seed and its failing then shrunk input:
  test.check prints the seed when a property returns false but not when it throws, and a CI run draws a fresh
  seed each time, so the log must say how to reproduce it: (the-spec num-tests :seed N)."
  []
  (when-let [opts (try (requiring-resolve 'clojure.test.check.clojure-test/*default-opts*) (catch Exception _ nil))]
    (let [report (:reporter-fn @opts)
          test-name #(some-> t/*testing-vars* first symbol)]
      (alter-var-root opts assoc :reporter-fn
                      (fn [{:keys [type seed] :as m}]
                        (case type
                          :failure (binding [*print-length* 20 *print-level* 6]
                                     (println "PROPERTY FAILED" (test-name) "seed" seed "failing size" (:failing-size m)
                                              "after" (:num-tests m) "trials; input:" (pr-str (:fail m))))
                          :shrunk (println "PROPERTY SHRUNK" (test-name) "seed" seed "smallest input:"
                                           (pr-str (-> m :shrunk :smallest)) (str "reproduce: (" (test-name) " " (:num-tests m) " :seed " seed ")"))
                          nil)
                        (when report (report m)))))))

(defn -main [dir summary]
  (let [pattern (re-pattern (System/getProperty "herald.test.ns" ".*"))
        nss (filter #(re-matches pattern (str %)) (test-namespaces (io/file dir)))
        load-failures (load-namespaces nss)
        _ (report-property-seeds!)
        _ (start-early!)
        timed (doall (map (fn [n] (let [t0 (System/nanoTime) r (run-ns n)]
                                    [r [n (quot (- (System/nanoTime) t0) 1000000)]]))
                          nss))
        results (map first timed)
        total (apply merge-with + {:test 0 :pass 0 :fail 0 :error 0} results)
        {:keys [passed skipped]} @outcomes
        failed (+ (:failed @outcomes) load-failures)
        line (format "%d passed, %d failed, %d skipped" passed failed skipped)]
    (io/make-parents summary)
    (spit summary (pr-str {:passed passed :failed failed :skipped skipped :assertions (:pass total)}))
    (spit (io/file (.getParentFile (io/file summary)) "clojure-test-times.txt")
          (str/join (map (fn [[n ms]] (str ms " ms " n "\n")) (sort-by (comp - second) (map second timed)))))
    (spit (io/file (.getParentFile (io/file summary)) "clojure-test-var-times.txt")
          (str/join (map (fn [[v ms]] (str ms " ms " v "\n")) (sort-by (comp - second) @var-times))))
    (println)
    (println "Slowest tests:")
    (doseq [[v ms] (take 8 (sort-by (comp - second) @var-times))] (println (format "  %7.1f s  %s" (/ ms 1000.0) v)))
    (println "Slowest namespaces:")
    (doseq [[n ms] (take 8 (sort-by (comp - second) (map second timed)))] (println (format "  %7.1f s  %s" (/ ms 1000.0) n)))
    (println (format "Clojure tests: %d assertions passed in %d tests of %d namespaces" (:pass total) (:test total) (count nss)))
    (println line)
    (shutdown-agents)
    (System/exit (if (zero? failed) 0 1))))

(apply -main *command-line-args*)
