(ns herald.load
  "herald.load: constant-rate HTTP load without coordinated omission, closed-loop max load, the wall
  search, the reference news feed workload, and the analysis of their results (percentile spectra, .hgrm,
  .hlog, per-minute aggregates, HTML reports with plots, comparisons)."
  (:require [herald.load.impl.agent :as agent]
            [herald.load.impl.agent-coordinator :as coordinator]
            [herald.load.impl.aggregate :as agg]
            [herald.load.impl.feed-run :as feed-run]
            [herald.load.impl.lab :as lab]
            [herald.load.impl.merge :as merge]
            [herald.load.impl.output :as output]
            [herald.load.impl.report :as report]
            [herald.load.impl.run :as run]
            [herald.load.impl.sweep :as sweep]))

(set! *warn-on-reflection* true)

(defn rate
  "Open-loop load following a rate schedule over `:connections` connections: one constant `:rate` for
  `:duration` seconds, or a `:schedule` of steps and linear ramps run one after the other on the same
  connections. Request k is intended at the time t where the schedule's cumulative count N(t) reaches k
  (k/rate for one step) and its latency is measured from then, so a stalled server shows in the
  percentiles for every request it delayed (no coordinated omission); the service time from the actual send
  is recorded beside it. Returns the result map (see docs/load.md) with per-step figures in :steps.

  | key                | type              | default        | meaning |
  |--------------------|-------------------|----------------|---------|
  | :url               | string            | required       | http:// or https://host:port/path?query |
  | :rate              | number or string  | :rate or :schedule | requests per second (fractional allowed), or the text form \"1000:30s,2000..4000:1m\" |
  | :schedule          | [phase] or string | :rate or :schedule | phases {:rate R :duration S} (a step) or {:rate R :to R2 :duration S} (a linear ramp); EDN text too |
  | :connections       | int               | 16             | connections (at most one request in flight each) |
  | :threads           | int               | cores          | event loop threads (capped at :connections) |
  | :duration          | seconds           | 10             | measured time of :rate, or of each phase without its own :duration |
  | :warmup            | seconds           | 0              | load before measuring at the first phase's rate, same connections, not recorded |
  | :method            | keyword           | :get           | HTTP method |
  | :headers           | map               | {}             | request headers |
  | :body              | string or bytes   | nil            | request body |
  | :script            | fn                | nil            | (fn [n] request-map) per request (:method :path :headers :body) |
  | :new-connection?   | boolean           | false          | open a new TCP connection per request |
  | :timeout           | seconds           | 10             | per-request timeout (also connect timeout) |
  | :interval          | seconds           | 1.0            | progress / interval histogram period |
  | :hlog              | path              | nil            | write the interval histogram log (.hlog) there |
  | :progress          | keyword           | :auto          | :auto (text on a terminal), :text, :json (JSON lines), :quiet |
  | :on-interval       | fn                | nil            | called with each interval map instead of printing |
  | :on-step           | fn                | nil            | called with each step's map once it settled, instead of printing |
  | :on-send           | fn                | nil            | (fn [k intended-ns sent-ns]) per request sent, on the event loop (tests, tracing) |
  | :handle-interrupt? | boolean           | false          | Ctrl-C stops the run early and still returns results |
  | :on-histogram      | fn                | nil            | (fn [start-s end-s histogram]) per interval with its latency histogram (an agent streams it; copy it to keep it) |
  | :on-start          | fn                | nil            | (fn []) called once the load has started |
  | :stop-when         | fn                | nil            | (fn []) asked every interval; true stops the run (results so far returned) |
  | :before-start      | fn                | nil            | (fn []) called once the engine is built, just before the load starts (an agent waits there for the agreed instant) |
  | :http2?            | boolean           | false          | HTTP/2: h2 by ALPN on https://, h2c by prior knowledge on http:// |
  | :streams           | int               | 1              | requests in flight per HTTP/2 connection (needs :http2?) |
  | :ca-cert           | path              | nil            | https: trust the certificates of this PEM file instead of the JDK's CAs |
  | :insecure?         | boolean           | false          | https: trust any certificate, no host name check (testing only) |
  | :tls-versions      | string or [string]| both           | https: \"1.2\", \"1.3\", \"1.2,1.3\" (or TLSv1.2, TLSv1.3) |"
  [opts]
  (run/execute :rate opts))

(defn max-load
  "Closed-loop load like wrk: every connection sends its next request as soon as the previous response
  arrives, for `:duration` seconds. Options as `rate` without `:rate`/`:warmup` semantics changing: latency
  equals service time here. Returns the result map."
  [opts]
  (run/execute :max opts))

(defn sweep
  "Finds the wall (the highest rate under an SLO): measures the maximum rate (a `max-load` run) unless
  given, then makes one `rate` run whose schedule steps through fractions of it, each for `:duration`, on
  the same connections, stops it after `:stop-after-failures` failing steps in a row, and reports the
  highest rate whose p99 and p99.9 stay under their bounds, with the target achieved within 1% and no
  errors. Takes `rate`'s options (not :rate or :schedule) plus:

  | key                  | type          | default            | meaning |
  |----------------------|---------------|--------------------|---------|
  | :p99-bound           | ms            | required           | p99 latency bound |
  | :p999-bound          | ms            | 2 x :p99-bound     | p99.9 latency bound |
  | :max-rate            | number        | measured           | the 100% rate |
  | :fractions           | [number]      | 0.1 .. 1.5         | fractions of :max-rate to run |
  | :rates               | [number]      | nil                | explicit rates instead of fractions |
  | :stop-after-failures | int           | 2                  | stop after this many failing steps in a row |
  | :on-step             | fn            | nil                | called with each step's verdict as soon as it is known |

  Returns {:mode :sweep :max-rate :steps [{:rate :achieved :p99 :p999 :errors :ok?}] :wall :highest-passed :warnings
  :runs :run}: :wall is the highest rate below the first failing step, :highest-passed the highest passing one;
  :run is the stepped rate run, :runs the max run (when measured) and one result view per step."
  [opts]
  (sweep/execute opts))

(defn feed
  "The reference news feed workload against a herald.feed (or reference) service over HTTP: closed-loop
  users, each a broadcaster (participants, friendships, outbound posts), a searcher or a reader. Records
  every request as (entity, operation, status, latency). Returns the result map with :operations and
  :per-minute.

  | key                | type     | default     | meaning |
  |--------------------|----------|-------------|---------|
  | :host              | string   | 127.0.0.1   | service host |
  | :port              | int      | 8080        | service port |
  | :users             | int      | 3           | concurrent simulated users |
  | :search-share      | 0..1     | 0.1         | probability a user is a searcher |
  | :reader-share      | 0..1     | 0.0         | probability a user is a reader (inbound/outbound/friends GETs) |
  | :edit-share        | 0..1     | 0.0         | share of a broadcaster's outbound operations that PATCH a post it published earlier (outbound patch) |
  | :delete-share      | 0..1     | 0.0         | share that DELETE one (outbound delete); with :edit-share at most 1 |
  | :read-post-share   | 0..1     | 0.0         | share that GET one by its link (outbound get-one); the three at most 1 |
  | :batch-size        | int      | 10          | participants created per broadcaster iteration |
  | :min-friends       | int      | 2           | fewest invitees per batch |
  | :max-friends       | int      | 3           | most invitees per batch |
  | :subject-words     | int      | 5           | words per subject |
  | :story-words       | int      | 150         | words per story |
  | :posts-per-user    | int      | 10          | outbound posts per invitee |
  | :searches-per-user | int      | 5           | searches per searcher iteration |
  | :body-format       | keyword  | :json       | :json or :form (application/x-www-form-urlencoded) |
  | :new-connection?   | boolean  | false       | new TCP connection per request (the reference tester's way) |
  | :rate-cap          | number   | nil         | at most this many requests/s over all users |
  | :duration          | seconds  | 60          | measured time |
  | :warmup            | seconds  | 0           | load before measuring (same users), not recorded |
  | :timeout           | seconds  | 10          | per-request timeout |
  | :seed              | int      | 1           | random seed (roles, words, picks) |
  | :log-file          | path     | nil         | write the reference performance log there |
  | :threads           | int      | 1           | event loop threads |
  | :https?            | boolean  | false       | TLS to the service (with :ca-cert, :insecure?, :tls-versions as in `rate`) |
  | :http2?            | boolean  | false       | HTTP/2 (h2 by ALPN with :https?, else h2c), one stream at a time per user |
  | :streams           | int      | 1           | users sharing one HTTP/2 connection (a stream each); needs :http2? |
  | :jwt-secret        | string   | nil         | an auth-on feed's HS256 secret (>= 32 bytes): each request acting as a participant carries `Authorization: Bearer` with a token minted for it (subject its id) |
  | :jwt-issuer, :jwt-audience | string | nil | the tokens' iss and aud, when the feed checks them |
  | :progress, :interval, :on-interval, :handle-interrupt? | | | as in `rate` |
  | :on-histogram, :on-start, :stop-when, :before-start | fn | nil | as in `rate` (:on-start once the users started, before the warm-up) |"
  [opts]
  (feed-run/execute opts))

(defn read-lab-spec
  "Reads and validates a lab SPEC file (EDN, see docs/load.md); a mistake throws ex-info
  {:type :herald.load/bad-spec :key [path in SPEC]} before anything starts."
  [path]
  (lab/read-spec path))

(defn lab
  "Runs the lab of validated `spec` (see `read-lab-spec`) into directory `out`: for each target x JDK x JVM
  option set, starts the target fresh, warms it up, sweeps to the wall, records CPU per request, RSS, GC
  pauses and allocation and flame graphs, stops it; then writes summary.edn, summary.json and report.html.
  Cells finished by an earlier run into `out` are kept (resume); a shutdown (Ctrl-C, SIGTERM) kills the
  running target. Options: :dry-run? (only the cells and JDKs), :log (fn of a progress line). Returns the
  summary map (:cells, :resumed, :interrupted?)."
  ([spec out] (lab spec out {}))
  ([spec out opts] (lab/execute spec out opts)))

(defn write-result!
  "Writes result `r` into directory `dir` (result.edn, summary.json, .hgrm, per-minute CSV/EDN,
  report.html, PNG plots). Returns the paths written."
  [dir r]
  (output/write-result! dir r))

(defn read-result
  "Reads a result.edn written by `write-result!`."
  [path]
  (output/read-result path))

(defn report!
  "Writes report.html (inline SVG) and PNG plots of one or more results, overlaid, into `dir`."
  [dir results]
  (output/write-plots! dir results))

(defn summary-text
  "The wrk2-style text summary of a result."
  [r]
  (output/summary-text r))

(defn compare-table
  "The side-by-side table of several results, as aligned text."
  [results]
  (report/table-text results))

(defn merge-results
  "One result from the results of several generators run side by side against one target: histograms
  merged exactly (HdrHistogram addition), counts, errors, statuses and rates summed."
  [results]
  (merge/merge-results results))

(defn aggregate
  "Per-minute aggregates of records (maps of :time-ms :entity :operation :latency-us): count, median, p95,
  p99, max (ms) per minute and entity x operation."
  [records]
  (agg/aggregate records))

(defn aggregate-log
  "Per-minute aggregates of a reference performance log (YEAR|MONTH|DAY|HOUR|MINUTE|entity|operation|ms)."
  [source]
  (agg/aggregate-log source))

(defn per-minute-csv
  "Per-minute aggregate rows as CSV text."
  [rows]
  (agg/rows->csv rows))

(defn agent-server
  "Starts a load generator agent that one coordinator at a time drives (`herald-load agent`): options
  :host (default 0.0.0.0), :port (0: any free port), :hlog-dir (this agent's own .hlog per run), :log (fn of
  a line per coordinator), :warm-up? (default true). Returns {:port :close (fn [])}. See docs/load.md,
  \"Distributed generators\"."
  [opts]
  (agent/serve! opts))

(defn on-agents
  "Runs `mode` (:rate or :feed) with `opts` (as `rate` or `feed`) split over `agents` ([{:host :port :name}]):
  the rate (or the users and rate cap) divided, one start instant, interval histograms streamed back.
  Returns the merged result with :agents (per-agent figures and warnings). Extra options: :agent-lead-ms
  (default 1000), :hlog (one .hlog of every agent's intervals, tagged by agent)."
  [mode opts agents]
  (coordinator/execute mode opts agents))
