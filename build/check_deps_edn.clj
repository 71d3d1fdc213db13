;; Checks the root deps.edn against Maven (build/check-deps-edn.sh runs it; it is not part of the build).
;; Reads what build/check-deps-edn.sh had Maven write for each module M: M/target/deps-check/direct.txt
;; (dependency:list, direct deps, runtime scope) and M/target/deps-check/classpath.txt (dependency:build-classpath,
;; runtime scope); when tools.deps is on the classpath, each alias's resolved classpath is compared jar by jar too.
;; Prints one line per difference and "deps.edn: N aliases match the poms" or exits 1.
(ns herald.build.check-deps-edn
  (:require [clojure.edn :as edn]
            [clojure.java.io :as io]
            [clojure.set :as set]
            [clojure.string :as str]))

(def modules
  "alias -> the modules whose direct dependencies it carries (an alias brings the herald modules its module depends on)."
  {:json [:json] :http [:http :json] :flow [:flow] :load [:load :json] :feed [:feed :json :http :flow]
   :all [:json :http :flow :load :feed]})

(def classpaths
  "alias -> the modules whose Maven runtime classpaths, first jar of an artifact winning, it must equal: the feed's
  already holds herald-json's, herald-http's and herald-flow's (without flow's optional kafka-streams and its RocksDB)."
  {:json [:json] :http [:http] :flow [:flow] :load [:load] :feed [:feed] :all [:feed :load :http :flow]})

(defn- maven-direct
  "group/artifact$classifier -> version of a module's direct runtime dependencies (herald's own left out)."
  [m]
  (into {}
        (for [line (str/split-lines (slurp (io/file (name m) "target/deps-check/direct.txt")))
              :let [[_ coords] (re-find #"^\s+(\S+:\S+)" line)]
              :when (and coords (not (str/starts-with? coords "dev.herald:")))
              :let [[g a _type & more] (str/split coords #":")
                    [classifier version] (if (= 3 (count more)) [(first more) (second more)] [nil (first more)])]]
          [(str g "/" a (when classifier (str "$" classifier))) version])))

(defn- edn-direct
  "The same map for one alias of deps.edn (its :extra-deps plus the top-level :deps)."
  [deps alias]
  (into {} (for [[lib {v :mvn/version}] (merge (:deps deps) (get-in deps [:aliases alias :extra-deps]))]
             [(str lib) v])))

(defn- jar-coords
  "group/artifact -> version (with $classifier) for the jars of a classpath under ~/.m2/repository (others
  dropped); the first jar of an artifact wins, as on a JVM classpath."
  [entries]
  (reduce (fn [m [k v]] (if (contains? m k) m (assoc m k v)))
        {}
        (for [^String e entries
              :let [m (re-find #"/repository/(.+)/([^/]+)/([^/]+)/([^/]+)\.jar$" e)]
              :when m
              :let [[_ gpath a v file] m
                    classifier (let [base (str a "-" v)]
                                 (when (and (str/starts-with? file base) (> (count file) (count base)))
                                   (subs file (inc (count base)))))]
              :when (not (str/starts-with? gpath "dev/herald"))]
          [(str (str/replace gpath "/" ".") "/" a) (str v (when classifier (str "$" classifier)))])))

(defn- diff
  "Lines naming each lib whose version differs between `want` (Maven) and `got` (deps.edn)."
  [what alias want got]
  (for [lib (sort (set/union (set (keys want)) (set (keys got))))
        :when (not= (want lib) (got lib))]
    (str what " " alias " " lib ": pom " (or (want lib) "-") ", deps.edn " (or (got lib) "-"))))

(defn- tools-deps-classpath
  "The jars tools.deps resolves for `alias`, or nil when tools.deps is not on the classpath."
  [alias]
  (when-let [create-basis (try (requiring-resolve 'clojure.tools.deps/create-basis) (catch Exception _ nil))]
    (:classpath-roots (create-basis {:project "deps.edn" :user nil :aliases [alias]}))))

(defn -main []
  (let [deps (edn/read-string (slurp "deps.edn"))
        problems
        (vec (concat
              (for [[alias ms] modules
                    line (diff "direct" alias (into {"org.clojure/clojure" (get-in deps [:deps 'org.clojure/clojure :mvn/version])}
                                                    (map #(maven-direct %)) ms)
                               (edn-direct deps alias))]
                line)
              (for [[alias ms] modules
                    p (get-in deps [:aliases alias :extra-paths])
                    :when (not (.isDirectory (io/file p)))]
                (str "path " alias " " p ": no such directory (run mvn compile first for target/classes)"))
              (for [[alias ms] classpaths
                    :let [cp (tools-deps-classpath alias)]
                    :when cp
                    line (diff "resolved" alias
                               (jar-coords (mapcat #(str/split (slurp (io/file (name %) "target/deps-check/classpath.txt"))
                                                               #":")
                                                   ms))
                               (jar-coords cp))]
                line)))]
    (doseq [p problems] (println p))
    (if (seq problems)
      (do (println (count problems) "differences between deps.edn and the poms") (System/exit 1))
      (println "deps.edn:" (count modules) "aliases match the poms"
               (if (tools-deps-classpath :http) "(direct deps, and every resolved jar via tools.deps)"
                   "(direct deps only: tools.deps not on the classpath)")))))

(apply -main *command-line-args*)
