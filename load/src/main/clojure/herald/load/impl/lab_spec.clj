(ns herald.load.impl.lab-spec
  "The lab's SPEC: validation (every mistake an ex-info naming the key, before anything starts), the JDKs
  found on the machine, and the matrix of cells (target x JDK x JVM option set)."
  (:require [clojure.java.io :as io]
            [clojure.string :as str])
  (:import (java.io File)))

(set! *warn-on-reflection* true)

(defn- bad
  "Throws the lab's spec error: `path` is the key path in SPEC (a vector)."
  [path msg value]
  (throw (ex-info (str "spec " (pr-str path) ": " msg (when (some? value) (str " (got " (pr-str value) ")")))
                  {:type :herald.load/bad-spec :key path :value value})))

(def top-keys
  "The keys a SPEC may have."
  #{:name :targets :jvm-opts :jdks :workload :slo :sweep :profile :common-opts})

(defn- check [ok? path msg value] (when-not ok? (bad path msg value)))

(defn- pos-num? [x] (and (number? x) (pos? (double x))))

(defn- name-ok? [s] (and (string? s) (re-matches #"[A-Za-z0-9][A-Za-z0-9._-]*" s)))

(defn- check-names [xs path]
  (doseq [[i x] (map-indexed vector xs)]
    (check (map? x) (conj path i) "must be a map" x)
    (check (name-ok? (:name x)) (conj path i :name) "must be a name of letters, digits, . _ - (it names the cell's directory)" (:name x)))
  (let [dups (for [[n c] (frequencies (map :name xs)) :when (> c 1)] n)]
    (check (empty? dups) path "names must be distinct" (vec dups))))

(defn- check-target [t i]
  (let [p [:targets i]]
    (check (every? #{:name :cmd :url :ready :ready-timeout :dir :env :min-jdk :version-cmd} (keys t))
           p (str "unknown keys " (pr-str (vec (remove #{:name :cmd :url :ready :ready-timeout :dir :env :min-jdk :version-cmd} (keys t)))))
           nil)
    (check (and (string? (:cmd t)) (not (str/blank? (:cmd t)))) (conj p :cmd) "must be a shell command (string)" (:cmd t))
    (check (and (string? (:url t)) (re-matches #"https?://.+" (:url t))) (conj p :url) "must be an http:// or https:// URL ({port} is the cell's port)" (:url t))
    (check (or (nil? (:ready t)) (and (string? (:ready t)) (re-matches #"https?://.+" (:ready t)))) (conj p :ready) "must be a URL probed until it answers" (:ready t))
    (check (or (nil? (:ready-timeout t)) (pos-num? (:ready-timeout t))) (conj p :ready-timeout) "must be a positive number of seconds" (:ready-timeout t))
    (check (or (nil? (:dir t)) (and (string? (:dir t)) (.isDirectory (io/file ^String (:dir t))))) (conj p :dir) "must be an existing directory" (:dir t))
    (check (or (nil? (:env t)) (and (map? (:env t)) (every? string? (keys (:env t))) (every? string? (vals (:env t)))))
           (conj p :env) "must be a map of strings to strings" (:env t))
    (check (or (nil? (:min-jdk t)) (and (integer? (:min-jdk t)) (<= 8 (long (:min-jdk t)) 99))) (conj p :min-jdk) "must be a Java feature release, e.g. 21" (:min-jdk t))
    (check (or (nil? (:version-cmd t)) (string? (:version-cmd t))) (conj p :version-cmd) "must be a shell command (string)" (:version-cmd t))))

(defn- check-workload [w]
  (check (map? w) [:workload] "must be a map: {:kind :http :method :get ...} or {:kind :feed :users N ...}" w)
  (check (#{:http :feed} (:kind w :http)) [:workload :kind] "must be :http or :feed" (:kind w))
  (if (= :feed (:kind w))
    (do (check (or (nil? (:users w)) (and (integer? (:users w)) (pos? (long (:users w))))) [:workload :users] "must be a positive integer" (:users w))
        (check (or (nil? (:rates w)) (and (vector? (:rates w)) (seq (:rates w)) (every? pos-num? (:rates w)))) [:workload :rates] "must be a vector of positive rates" (:rates w)))
    (do (check (or (nil? (:method w)) (#{:get :post :put :delete :head :patch} (:method w))) [:workload :method] "must be :get, :post, :put, :delete, :head or :patch" (:method w))
        (check (or (nil? (:connections w)) (and (integer? (:connections w)) (pos? (long (:connections w))))) [:workload :connections] "must be a positive integer" (:connections w))
        (check (or (nil? (:headers w)) (map? (:headers w))) [:workload :headers] "must be a map" (:headers w))
        (check (or (nil? (:body w)) (string? (:body w))) [:workload :body] "must be a string" (:body w)))))

(defn- check-sweep [s]
  (check (or (nil? s) (map? s)) [:sweep] "must be a map" s)
  (doseq [k [:warmup :duration :max-duration]]
    (check (or (nil? (get s k)) (pos-num? (get s k))) [:sweep k] "must be a positive number of seconds" (get s k)))
  (check (or (nil? (:fractions s)) (and (vector? (:fractions s)) (seq (:fractions s)) (every? pos-num? (:fractions s))))
         [:sweep :fractions] "must be a vector of positive fractions of the max" (:fractions s))
  (check (or (nil? (:stop-after-failures s)) (and (integer? (:stop-after-failures s)) (pos? (long (:stop-after-failures s)))))
         [:sweep :stop-after-failures] "must be a positive integer" (:stop-after-failures s)))

(defn- check-profile [p]
  (when-not (false? p)
    (check (or (nil? p) (map? p)) [:profile] "must be a map or false" p)
    (check (or (nil? (:fraction p)) (and (pos-num? (:fraction p)) (<= (double (:fraction p)) 2.0))) [:profile :fraction] "must be a fraction of the wall in (0, 2]" (:fraction p))
    (check (or (nil? (:duration p)) (pos-num? (:duration p))) [:profile :duration] "must be a positive number of seconds" (:duration p))
    (check (or (nil? (:events p)) (and (vector? (:events p)) (seq (:events p)) (every? #{:cpu :alloc} (:events p)))) [:profile :events] "must be a vector of :cpu and :alloc" (:events p))))

(defn validate
  "SPEC checked and with its defaults: throws ex-info {:type :herald.load/bad-spec :key [path]} at the first
  mistake. Nothing is started here."
  [spec]
  (check (map? spec) [] "SPEC must be an EDN map" (type spec))
  (let [unknown (remove top-keys (keys spec))]
    (check (empty? unknown) [(first unknown)] (str "unknown key (known: " (str/join " " (sort top-keys)) ")") nil))
  (check (and (vector? (:targets spec)) (seq (:targets spec))) [:targets] "must be a non-empty vector of targets" (:targets spec))
  (check-names (:targets spec) [:targets])
  (doseq [[i t] (map-indexed vector (:targets spec))] (check-target t i))
  (check (and (vector? (:jvm-opts spec)) (seq (:jvm-opts spec))) [:jvm-opts] "must be a non-empty vector of {:name :opts}" (:jvm-opts spec))
  (check-names (:jvm-opts spec) [:jvm-opts])
  (doseq [[i j] (map-indexed vector (:jvm-opts spec))]
    (check (and (vector? (:opts j)) (every? string? (:opts j))) [:jvm-opts i :opts] "must be a vector of strings" (:opts j)))
  (check (or (nil? (:common-opts spec)) (and (vector? (:common-opts spec)) (every? string? (:common-opts spec)))) [:common-opts] "must be a vector of strings" (:common-opts spec))
  (let [j (:jdks spec :all)]
    (check (or (= :all j) (and (vector? j) (seq j) (every? #(or (string? %) (integer? %)) j)))
           [:jdks] "must be :all, or a vector of JDK homes (strings) or feature releases (e.g. 17 25)" j))
  (check-workload (:workload spec {:kind :http}))
  (let [slo (:slo spec)]
    (check (map? slo) [:slo] "must be a map {:p99 MS :p999 MS}" slo)
    (check (pos-num? (:p99 slo)) [:slo :p99] "must be a positive number of ms" (:p99 slo))
    (check (or (nil? (:p999 slo)) (pos-num? (:p999 slo))) [:slo :p999] "must be a positive number of ms" (:p999 slo)))
  (check-sweep (:sweep spec))
  (check-profile (:profile spec))
  (-> spec
      (update :jdks #(or % :all))
      (update :workload #(merge {:kind :http} %))
      (update :sweep #(merge {:warmup 5 :duration 5 :stop-after-failures 2} %))
      (update :profile #(if (false? %) false (merge {:fraction 0.5 :duration 10 :events [:cpu :alloc]} %)))))

;; --- JDKs ---------------------------------------------------------------------------------------------------

(defn jdk-info
  "{:home :major :version} of the JDK at `home` (its `release` file), or nil when there is no bin/java."
  [home]
  (let [home (.getCanonicalFile (io/file (str home)))
        rel (io/file home "release")]
    (when (.canExecute (io/file home "bin" "java"))
      (let [v (when (.exists rel) (second (re-find #"(?m)^JAVA_VERSION=\"([^\"]+)\"" (slurp rel))))
            impl (when (.exists rel) (second (re-find #"(?m)^IMPLEMENTOR=\"([^\"]+)\"" (slurp rel))))
            major (some-> v (str/split #"[.+-]") first parse-long)]
        (when major {:home (str home) :major major :version v :vendor impl})))))

(defn find-jdks
  "Every JDK >= 17 on the machine: under /usr/lib/jvm, $JAVA_HOME and the running JVM's, one per real path,
  oldest first."
  []
  (let [dirs (concat (some-> (io/file "/usr/lib/jvm") .listFiles seq)
                     (some-> (System/getenv "JAVA_HOME") io/file vector)
                     [(io/file (System/getProperty "java.home"))])]
    (->> dirs (filter #(.isDirectory ^File %)) (keep jdk-info) (filter #(>= (long (:major %)) 17))
         (group-by :home) vals (map first) (sort-by (juxt :major :version :home)) vec)))

(defn jdk-name
  "A cell name for a JDK: its feature release and vendor, e.g. 17-debian or 25-eclipse."
  [{:keys [major vendor home]}]
  (str major "-" (or (some-> vendor str/lower-case (str/split #"[^a-z0-9]+") first not-empty)
                     (.getName (io/file ^String home)))))

(defn resolve-jdks
  "The JDKs of SPEC's :jdks: :all found, or each named home (checked) or feature release (the newest
  update of it found)."
  [jdks]
  (let [found (find-jdks)
        pick (fn [i x]
               (if (integer? x)
                 (or (last (filter #(= (long x) (long (:major %))) found))
                     (bad [:jdks i] (str "no JDK " x " found (found: " (str/join ", " (map :home found)) ")") x))
                 (or (jdk-info x) (bad [:jdks i] "is not a JDK home (no bin/java and release file)" x))))
        out (if (= :all jdks) found (vec (map-indexed pick jdks)))]
    (check (seq out) [:jdks] "no JDK >= 17 found" jdks)
    (let [named (map jdk-name out)
          dups (for [[n c] (frequencies named) :when (> c 1)] n)]
      (mapv (fn [j n] (assoc j :name (if (seq dups) (str n "-" (.getName (io/file ^String (:home j)))) n))) out named))))

(defn cells
  "The matrix: one cell per target x JDK x JVM option set, in run order, each with its :id (the directory
  name target__jdk__jvm)."
  [spec jdks]
  (vec (for [t (:targets spec) j jdks o (:jvm-opts spec)]
         {:id (str (:name t) "__" (:name j) "__" (:name o)) :target t :jdk j :jvm (assoc o :opts (into (vec (:common-opts spec)) (:opts o)))})))
