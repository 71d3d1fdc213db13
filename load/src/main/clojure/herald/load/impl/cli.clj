(ns herald.load.impl.cli
  "Option specs of each herald-load subcommand and their translation into herald.load calls."
  (:require [clojure.java.io :as io]
            [clojure.string :as str]
            [herald.load :as load]
            [herald.load.impl.agent :as agent]
            [herald.load.impl.agent-coordinator :as coordinator]
            [herald.load.impl.agent-report :as agent-report]
            [herald.load.impl.agent-wire :as wire]
            [herald.load.impl.aggregate :as agg]
            [herald.load.impl.output :as output]
            [herald.load.impl.merge :as merge]
            [herald.load.impl.plot :as plot]
            [herald.load.impl.report :as report]
            [herald.load.impl.schedule :as schedule]
            [herald.load.impl.steps :as steps]))

(set! *warn-on-reflection* true)

(def commands
  "The subcommands."
  #{:rate :max :sweep :feed :report :compare :merge :aggregate :lab :agent})

(def parse-seconds
  "\"10s\", \"500ms\", \"2m\", \"1h\" or a plain number of seconds, as seconds (a double)."
  schedule/parse-seconds)

(defn- parse-rate
  "A plain number stays a number; a schedule text (\"1000:30s,2000:30s\", \"1000..5000:60s\") stays text."
  [s]
  (or (when (re-matches #"[0-9]*\.?[0-9]+" (str/trim s)) (parse-double (str/trim s))) s))

(defn- header [m _ v]
  (let [[k val] (str/split v #":\s*" 2)]
    (when-not val (throw (ex-info (str "bad header (want 'Name: value'): " v) {:type :herald.load/bad-option :key :headers})))
    (assoc-in m [:headers k] val)))

(def ^:private common
  [["-o" "--out DIR" "write result files into DIR"]
   ["-q" "--quiet" "no progress" :id :quiet]
   [nil "--progress MODE" "auto | text | json | quiet" :default :auto :parse-fn keyword]
   [nil "--interval SECS" "progress and .hlog interval" :default 1.0 :parse-fn parse-seconds]
   [nil "--label NAME" "name of this run in reports"]
   ["-h" "--help"]])

(def ^:private engine-specs
  [["-c" "--connections N" "connections" :default 16 :parse-fn parse-long]
   ["-t" "--threads N" "event loop threads (default: cores)" :parse-fn parse-long]
   ["-d" "--duration TIME" "measured time: 30s, 2m (default 10s); with --rate phases, each phase without a time" :parse-fn parse-seconds]
   ["-w" "--warmup TIME" "unrecorded load before measuring" :default 0.0 :parse-fn parse-seconds]
   ["-m" "--method METHOD" "HTTP method" :default :get :parse-fn (comp keyword str/lower-case)]
   ["-H" "--header 'NAME: VALUE'" "request header (repeatable)" :id :headers :default {} :assoc-fn header]
   ["-b" "--body BODY" "request body; @FILE reads a file"]
   [nil "--script FILE" "Clojure file evaluating to (fn [n] request-map)"]
   [nil "--new-connection" "new TCP connection per request" :id :new-connection?]
   [nil "--timeout TIME" "request timeout" :default 10.0 :parse-fn parse-seconds]
   [nil "--hlog FILE" "write the interval histogram log (.hlog)"]
   [nil "--http2" "HTTP/2: h2 by ALPN on https://, h2c by prior knowledge on http://" :id :http2?]
   [nil "--streams N" "requests in flight per HTTP/2 connection (default 1)" :parse-fn parse-long]])

(def ^:private agents-spec
  [nil "--agents LIST" "run on these agents (host:port,host:port), the rate or users split evenly"])

(def ^:private tls-specs
  [["-k" "--insecure" "https: trust any certificate, skip the host name check (testing only)" :id :insecure?]
   [nil "--cacert FILE" "https: trust the certificates of this PEM file (e.g. a self-signed server's)" :id :ca-cert]
   [nil "--tls-version V" "https: 1.2, 1.3 or 1.2,1.3 (default)" :id :tls-versions]])

(defn option-specs
  "The tools.cli specs of subcommand `cmd`."
  [cmd]
  (case cmd
    :rate (concat [["-R" "--rate RATE|PHASES" "requests/s, or steps and ramps: 1000:30s,2000:30s or 1000..5000:60s" :parse-fn parse-rate]
                   [nil "--ramp FROM..TO:TIME" "a linear ramp (same grammar as --rate)"]
                   [nil "--schedule EDN|@FILE" "phases as EDN: [{:rate 1000 :duration 30} {:rate 1000 :to 5000 :duration 60}]"]]
                  [agents-spec] engine-specs tls-specs common)
    :max (concat engine-specs tls-specs common)
    :sweep (concat [[nil "--p99 MS" "p99 bound in ms" :id :p99-bound :parse-fn parse-double]
                    [nil "--p999 MS" "p99.9 bound in ms (default 2 x p99)" :id :p999-bound :parse-fn parse-double]
                    [nil "--max-rate N" "the 100% rate (default: measured by a max run)" :parse-fn parse-double]
                    [nil "--fractions LIST" "fractions of the max, e.g. 0.5,0.8,1.0" :parse-fn #(mapv parse-double (str/split % #","))]
                    [nil "--rates LIST" "explicit rates, e.g. 1000,2000" :parse-fn #(mapv parse-double (str/split % #","))]]
                   engine-specs tls-specs common)
    :feed (concat [[nil "--host HOST" "service host" :default "127.0.0.1"]
                   ["-p" "--port PORT" "service port" :default 8080 :parse-fn parse-long]
                   ["-u" "--users N" "simulated users" :default 3 :parse-fn parse-long]
                   [nil "--search-share X" "share of searchers (0..1)" :default 0.1 :parse-fn parse-double]
                   [nil "--reader-share X" "share of readers (0..1)" :default 0.0 :parse-fn parse-double]
                   [nil "--edit-share X" "share of outbound operations that edit (PATCH) an earlier post (0..1)" :default 0.0 :parse-fn parse-double]
                   [nil "--delete-share X" "share of outbound operations that delete an earlier post (0..1)" :default 0.0 :parse-fn parse-double]
                   [nil "--read-post-share X" "share of outbound operations that GET an earlier post's link (0..1)" :default 0.0 :parse-fn parse-double]
                   [nil "--batch-size N" "participants per batch" :default 10 :parse-fn parse-long]
                   [nil "--min-friends N" "fewest invitees" :default 2 :parse-fn parse-long]
                   [nil "--max-friends N" "most invitees" :default 3 :parse-fn parse-long]
                   [nil "--subject-words N" "" :default 5 :parse-fn parse-long]
                   [nil "--story-words N" "" :default 150 :parse-fn parse-long]
                   [nil "--posts-per-user N" "" :default 10 :parse-fn parse-long]
                   [nil "--searches-per-user N" "" :default 5 :parse-fn parse-long]
                   [nil "--form" "form-encoded bodies instead of JSON"]
                   [nil "--new-connection" "new TCP connection per request" :id :new-connection?]
                   [nil "--rate-cap N" "at most N requests/s" :parse-fn parse-double]
                   ["-d" "--duration TIME" "measured time" :default 60.0 :parse-fn parse-seconds]
                   ["-w" "--warmup TIME" "load before measuring (same users and connections), not recorded" :default 0.0 :parse-fn parse-seconds]
                   [nil "--timeout TIME" "request timeout" :default 10.0 :parse-fn parse-seconds]
                   [nil "--seed N" "random seed" :default 1 :parse-fn parse-long]
                   [nil "--log FILE" "write the reference performance log" :id :log-file]
                   [nil "--https" "TLS to the service (see --cacert, --insecure)" :id :https?]
                   [nil "--http2" "HTTP/2: h2 by ALPN with --https, else h2c by prior knowledge" :id :http2?]
                   [nil "--streams N" "users sharing one HTTP/2 connection, a stream each (default 1)" :parse-fn parse-long]
                   [nil "--jwt-secret SECRET" "an auth-on feed's HS256 secret: a bearer token per participant (env HERALD_JWT_SECRET, which keeps it out of ps)"
                    :default-fn (fn [_] (not-empty (System/getenv "HERALD_JWT_SECRET"))) :default-desc ""]
                   [nil "--jwt-issuer ISS" "the tokens' iss claim (env HERALD_JWT_ISSUER)"
                    :default-fn (fn [_] (not-empty (System/getenv "HERALD_JWT_ISSUER"))) :default-desc ""]
                   [nil "--jwt-audience AUD" "the tokens' aud claim (env HERALD_JWT_AUDIENCE)"
                    :default-fn (fn [_] (not-empty (System/getenv "HERALD_JWT_AUDIENCE"))) :default-desc ""]
                   agents-spec]
                  tls-specs common)
    (:report :compare) [["-o" "--out DIR" "write report.html and PNGs into DIR"]
                        [nil "--steps" "one row (and one overlaid series) per step of stepped runs"]
                        ["-h" "--help"]]
    :merge [["-o" "--out DIR" "write the merged result's files into DIR"] [nil "--label NAME" "name of the merged run"] ["-h" "--help"]]
    :lab [["-o" "--out DIR" "the lab's directory (default: lab-results/<spec name>); a rerun resumes the missing cells"]
          [nil "--dry-run" "validate SPEC and list the cells, start nothing" :id :dry-run?]
          ["-h" "--help"]]
    :agent [["-p" "--port PORT" "TCP port to listen on (0: any free port, printed)" :parse-fn parse-long]
            [nil "--host HOST" "address to listen on" :default "0.0.0.0"]
            [nil "--hlog-dir DIR" "also keep each run's interval histograms in DIR/RUN-ID.hlog"]
            ["-h" "--help"]]
    :aggregate [[nil "--csv FILE" "write CSV there (default: stdout)"] [nil "--edn FILE" "also write EDN"] ["-h" "--help"]]))

(defn arg-help
  "The positional arguments of `cmd`, for usage lines."
  [cmd]
  (case cmd (:rate :max :sweep) "URL [options]" (:feed :agent) "[options]" (:report :compare :merge) "RESULT.edn... [options]" :lab "SPEC.edn [options]" :aggregate "LOGFILE|- [options]"))

(defn- schedule-opts
  "--rate, --ramp and --schedule as the API's :rate or :schedule (only one of them may be given)."
  [{:keys [rate ramp schedule] :as options}]
  (when (< 1 (count (filter some? [rate ramp schedule])))
    (throw (ex-info "give one of --rate, --ramp, --schedule" {:type :herald.load/bad-option :key :schedule})))
  (when (and ramp (not (str/includes? ramp "..")))
    (throw (ex-info (str "--ramp wants FROM..TO:TIME, not " ramp) {:type :herald.load/bad-option :key :ramp :value ramp})))
  (cond-> (dissoc options :ramp)
    ramp (assoc :rate ramp)
    (and schedule (str/starts-with? schedule "@")) (assoc :schedule (slurp (subs schedule 1)))))

(defn- engine-opts [options [url]]
  (when-not url (throw (ex-info "missing URL argument" {:type :herald.load/bad-option :key :url})))
  (let [body (:body options)
        options (schedule-opts options)]
    (cond-> (-> options (dissoc :out :quiet :label :help) (assoc :url url :handle-interrupt? true))
      (:quiet options) (assoc :progress :quiet)
      (and (:out options) (not (:hlog options))) (assoc :hlog (str (io/file (:out options) "latency.hlog")))
      (and body (str/starts-with? body "@")) (assoc :body (slurp (subs body 1)))
      (:script options) (assoc :script (load-file (:script options))))))

(defn summary-line
  "The machine-readable last line of a run: key=value pairs."
  [r]
  (let [l (:latency r)]
    (str "herald-load mode=" (name (:mode r)) " requests=" (:requests r)
         " target_rps=" (or (some->> r :rate :target (format "%.1f")) "-")
         " achieved_rps=" (format "%.1f" (double (or (get-in r [:rate :achieved]) 0)))
         " p50_ms=" (:p50 l) " p99_ms=" (:p99 l) " p999_ms=" (:p999 l) " max_ms=" (:max l)
         " errors=" (reduce + (vals (:errors r))))))

(defn step-lines
  "One machine-readable line per step of a scheduled run (none for a one-step run)."
  [r]
  (when (> (count (:steps r)) 1)
    (for [s (:steps r) :let [l (:latency s)]]
      (str "herald-load step=" (:step s) " label=" (:label s) " requests=" (:requests s)
           " target_rps=" (format "%.1f" (double (:target-rate s))) " achieved_rps=" (format "%.1f" (double (:achieved s)))
           " p50_ms=" (:p50 l) " p99_ms=" (:p99 l) " p999_ms=" (:p999 l) " max_ms=" (:max l)
           " service_p99_ms=" (get-in s [:service :p99]) " errors=" (reduce + (vals (:errors s)))
           " connection_waits=" (:connection-waits s) " late_sends=" (:late-sends s)))))

(defn- sweep! [options args]
  (let [r (load/sweep (assoc (dissoc (engine-opts options args) :hlog) :on-step #(binding [*out* *err*] (prn %))))]
    (when-let [dir (:out options)]
      (io/make-parents (io/file dir "sweep.edn"))
      (spit (io/file dir "sweep.edn") (pr-str (-> r (update :runs #(mapv :label %)) (update :run :label))))
      (when-let [m (first (filter #(= "max" (:label %)) (:runs r)))] (load/write-result! (io/file dir "max") m))
      (load/write-result! (io/file dir "steps") (:run r))
      (load/report! dir (:runs r))
      (when (seq (:steps r))
        (spit (io/file dir "sweep.svg") (plot/svg (report/sweep-chart r)))
        (with-open [o (io/output-stream (io/file dir "sweep.png"))] (.write o ^bytes (plot/png (report/sweep-chart r))))))
    (println (load/compare-table (:runs r)))
    (doseq [w (:warnings r)] (println (str "WARNING: " w)))
    (println (str "herald-load mode=sweep max_rps=" (some->> (:max-rate r) double (format "%.1f"))
                  " wall_rps=" (or (:wall r) "none") " highest_passed_rps=" (or (:highest-passed r) "none")
                  " p99_bound_ms=" (:p99-bound r)))
    0))

(defn- lab! [options [spec-path & more]]
  (when (or (nil? spec-path) (seq more))
    (throw (ex-info "lab wants one SPEC.edn argument" {:type :herald.load/bad-option :key :spec})))
  (let [spec (load/read-lab-spec spec-path)
        out (or (:out options) (str (io/file "lab-results" (or (:name spec) (str/replace (.getName (io/file ^String spec-path)) #"\.edn$" "")))))
        r (load/lab spec out {:dry-run? (:dry-run? options)})]
    (if (:dry-run? options)
      (do (println (str "herald-load lab: " (count (:cells r)) " cells, JDKs " (str/join ", " (map :home (:jdks r)))))
          (doseq [c (:cells r)] (println (:id c))))
      (do (doseq [c (:cells r)]
            (println (str "herald-load cell=" (:id c) " status=" (name (:status c))
                          " max_rps=" (some->> (:max-rate c) double (format "%.1f")) " wall_rps=" (or (:wall c) "none")
                          " cpu_ms_per_req=" (some->> (:cpu-ms-per-request c) (format "%.4f"))
                          " rss_peak_mb=" (some->> (:rss-peak-mb c) (format "%.1f"))
                          " gc_pauses=" (get-in c [:gc :count]) " gc_max_ms=" (get-in c [:gc :max-ms]))))
          (println (str "herald-load mode=lab cells=" (count (:cells r)) " resumed=" (count (:resumed r))
                        " interrupted=" (boolean (:interrupted? r)) " report=" (io/file out "report.html")))))
    (if (:interrupted? r) 130 0)))

(defn exit-code
  "The exit status of a rate, max or feed run: 2 when every request failed (none answered with a 2xx or 3xx
  status while requests failed or could not be sent), else 0."
  [r]
  (let [ok (reduce + 0 (for [[code n] (:status r) :when (<= 200 code 399)] n))
        failed (+ (reduce + 0 (vals (:errors r))) (long (or (:backlog r) 0)) (long (or (:connect-failures r) 0)))]
    (if (and (zero? ok) (pos? failed)) 2 0)))

(defn- agent! [{:keys [port host hlog-dir]}]
  (when-not port (throw (ex-info "agent wants --port PORT" {:type :herald.load/bad-option :key :port})))
  (let [a (agent/serve! {:host host :port port :hlog-dir hlog-dir
                         :log #(binding [*out* *err*] (println "herald-load agent:" %) (flush))})]
    (println (str "herald-load agent listening on " host ":" (:port a) " protocol=" wire/protocol-version))
    (flush)
    @(promise)))

(defn- distributed!
  "A rate or feed run split over the --agents: per-agent lines, the merged result, the agents' report;
  exit 2 when an agent died or failed."
  [mode o options finish!]
  (let [agents (wire/parse-agents (:agents options))
        o (cond-> (dissoc o :agents)
            (and (:out options) (not (:hlog o))) (assoc :hlog (str (io/file (:out options) "latency.hlog"))))
        r (coordinator/execute mode o agents)]
    (run! println (agent-report/agent-lines r))
    (finish! r options)
    (when-let [dir (:out options)] (spit (io/file dir "report.html") (agent-report/html r)))
    (if (agent-report/failed? r) 2 (exit-code r))))

(defn dispatch
  "Runs subcommand `cmd` with parsed `options` and `args`; `finish!` prints and writes a run result."
  [cmd options args finish!]
  (case cmd
    :rate (do (when-not (some options [:rate :ramp :schedule])
                (throw (ex-info "--rate (or --ramp or --schedule) is required" {:type :herald.load/bad-option :key :rate})))
              (when (and (:agents options) (:script options))
                (throw (ex-info "--script runs only in one generator, not with --agents" {:type :herald.load/bad-option :key :script})))
              (if (:agents options)
                (distributed! :rate (engine-opts options args) options finish!)
                (let [r (load/rate (engine-opts options args))] (finish! r options) (exit-code r))))
    :max (let [r (load/max-load (engine-opts options args))] (finish! r options) (exit-code r))
    :sweep (sweep! options args)
    :feed (let [o (cond-> (-> options (dissoc :out :quiet :label :help :form) (assoc :handle-interrupt? true))
                    (:form options) (assoc :body-format :form)
                    (:quiet options) (assoc :progress :quiet))]
            (if (:agents options)
              (distributed! :feed o options finish!)
              (let [r (load/feed o)] (finish! r options) (exit-code r))))
    (:report :compare)
    (let [results (cond->> (mapv output/read-result args)
                    (:steps options) (into [] (mapcat (fn [r] (if (seq (:steps r))
                                                                (for [s (steps/step-results r)] (update s :label #(str (report/label r) " " %)))
                                                                [r])))))]
      (when (empty? results) (throw (ex-info "no result files given" {:type :herald.load/bad-option :key :results})))
      (println (load/compare-table results))
      (when-let [dir (:out options)] (doseq [p (load/report! dir results)] (println "wrote" p)))
      0)
    :lab (lab! options args)
    :agent (agent! options)
    :merge
    (let [results (mapv output/read-result args)]
      (when (< (count results) 2) (throw (ex-info "merge needs two or more result files" {:type :herald.load/bad-option :key :results})))
      (finish! (merge/merge-results results) options)
      0)
    :aggregate
    (let [src (first args)
          rows (load/aggregate-log (if (or (nil? src) (= "-" src)) *in* src))
          csv (str (agg/rows->csv rows) "\n")]
      (if-let [f (:csv options)] (spit f csv) (print csv))
      (when-let [f (:edn options)] (spit f (pr-str rows)))
      (flush)
      0)))
