# bench/lib/tail.sh: bench/http.sh's tail latency part, sourced after bench/lib/common.sh. tail_runs measures raw
# Netty's non-pipelined max rate (wrk, TAIL_CONNECTIONS connections), then for each server, started fresh with a VM
# log (GC, safepoints, JIT compilations, epoch-millisecond stamps): `herald-load rate` at TAIL_SHARE of that max
# for TAIL_WARMUP seconds (unrecorded, same connections) and TAIL_SECONDS recorded, the generator pinned to
# WRK_CPU with its own safepoint log, both given one full collection during the warm-up (TAIL_SETTLE). The servers: raw Netty, herald on the event loop and on virtual threads
# (ParallelGC, as the throughput runs; TAIL_ROUNDS rounds in alternating order, each server's figures the median of
# its rounds), then herald on the event loop and raw Netty under each other collector of TAIL_GCS (one round).
# What happened inside the recorded window (from herald-load's interval log) is read from the logs: the server's
# safepoint pauses (every stop-the-world pause, whatever the collector, by VM operation), GC cycles, JIT
# compilations, the generator's own pauses, and how busy the server's core was with other processes. tail_summary
# prints the `tail ...` and `tail_gc ...` lines; every run is a row of TAIL_RESULTS. With TAIL_FLAGSETS the server
# rounds give way to a JVM-flag A/B (bench/lib/tail_flags.sh).

TAIL_SECONDS=${TAIL_SECONDS:-60}
TAIL_WARMUP=${TAIL_WARMUP:-20}
TAIL_CONNECTIONS=${TAIL_CONNECTIONS:-64}
TAIL_SHARE=${TAIL_SHARE:-0.5}
TAIL_RATE=${TAIL_RATE:-}
TAIL_GCS=${TAIL_GCS:-parallel g1 zgc}
# rounds of raw Netty, herald and herald on virtual threads under ParallelGC, in alternating order (N H V, V H N, ...):
# each server's figures are the median of its rounds, so one noisy minute of the shared machine moves no verdict
TAIL_ROUNDS=${TAIL_ROUNDS:-3}
TAIL_RESULTS=${TAIL_RESULTS:-$ROOT/bench/results/http-tail.csv}
# seconds of MachineJitter on the server's and the generator's cores before the runs (tail_jitter); 0: none
TAIL_JITTER=${TAIL_JITTER:-20}
# 1: a full collection in the server and the generator during the warm-up (settle_run); 0: none
TAIL_SETTLE=${TAIL_SETTLE:-1}
# JVM flags added to every tail server's (after -Xmx1g -Xms1g and the collector's) and the generator's whole set.
# The generator's heap is fixed and pre-touched: with -Xmx1g alone it starts at 1/64 of the machine's memory and
# collects more often (session 11: one young collection in each 30 s window at 22,741 req/s, none with these flags)
TAIL_SERVER_FLAGS=${TAIL_SERVER_FLAGS-}
TAIL_GEN_FLAGS=${TAIL_GEN_FLAGS--Xmx1g -Xms1g -XX:+AlwaysPreTouch -XX:+UseParallelGC}
# the generator's command: another build's bin/herald-load for an A/B of the generator itself (TAIL_FLAGSETS)
TAIL_GEN_CMD=${TAIL_GEN_CMD:-$ROOT/bin/herald-load}

gc_flags() {
  case $1 in
    parallel) echo "-XX:+UseParallelGC" ;;
    g1) echo "-XX:+UseG1GC" ;;
    zgc) if [ "$JAVA_MAJOR" -ge 23 ]; then echo "-XX:+UseZGC"; else echo "-XX:+UseZGC -XX:+ZGenerational"; fi ;;
    shenandoah) echo "-XX:+UseShenandoahGC" ;;
    *) die "unknown collector $1 in TAIL_GCS (parallel, g1, zgc, shenandoah)" ;;
  esac
}
gc_name() { case $1 in parallel) echo ParallelGC ;; g1) echo G1 ;; zgc) echo ZGC-generational ;; shenandoah) echo Shenandoah ;; esac; }

# vm_log FILE: the -Xlog option for a VM log of GC cycles, safepoints, JIT compilations and deoptimisations,
# stamped in epoch ms
vm_log() { echo "-Xlog:gc,safepoint,jit+compilation=debug,deoptimization=debug:file=$1:timemillis,tags"; }

# window HLOG: "FROM TO" in epoch ms, the recorded part of a herald-load run: TAIL_SECONDS from its interval log's
# StartTime (the intervals' offsets count from it, the warm-up excluded)
window() {
  awk -v d="$TAIL_SECONDS" '/^#\[StartTime: / {split($0, a, " "); printf "%.0f %.0f\n", a[2] * 1000, (a[2] + d) * 1000; exit}' "$1"
}

# vm_window LOG FROM TO: "pauses total_ms max_ms gc_cycles jit_compiles ops ttsp_max_ms deopts" inside [FROM, TO]
# of a vm_log. ops: every safepoint's VM operation with its count and longest pause, longest first
# (`ParallelCollectForAllocation:2/5.1` = two young collections of ParallelGC, the longer 5.1 ms; `-` when none);
# ttsp_max_ms: the longest time to safepoint (threads reaching it) of any of them, the rest of a pause being the
# operation itself; deopts: compiled methods sent back to the interpreter (uncommon traps: a branch or type the
# JIT had assumed away; one trap logs a line per frame, counted once). The log's tag column is padded
# (`[gc          ]`), hence the patterns.
vm_window() {
  awk -v from="$2" -v to="$3" '
    {t = $0; sub(/^\[/, "", t); sub(/ms\].*/, "", t); t += 0}
    t < from || t > to {next}
    /\]\[safepoint *\]/ && /Total: / {
      v = $0; sub(/.*Total: /, "", v); v += 0; n++; tot += v; if (v > m) m = v
      op = $0; sub(/.*Safepoint "/, "", op); sub(/".*/, "", op); on[op]++; if (v > om[op]) om[op] = v
      r = $0; sub(/.*Reaching safepoint: /, "", r); r += 0; if (r > ttsp) ttsp = r }
    /\]\[gc *\]/ && /GC\(/ && !/Using/ {g[gc_id($0)] = 1}
    /\]\[jit,compilation/ {j++}
    /\]\[deoptimization *\]/ {d = $0; sub(/ pc=.*/, "", d); if (!(d in seen)) {seen[d] = 1; dn++}}
    function gc_id(s) {sub(/.*GC\(/, "", s); sub(/\).*/, "", s); return s}
    END {c = 0; for (k in g) c++
      ops = ""
      while (1) {best = ""; for (k in on) if (!(k in done) && (best == "" || om[k] > om[best])) best = k
                 if (best == "") break; done[best] = 1
                 ops = ops (ops == "" ? "" : ",") sprintf("%s:%d/%.1f", best, on[best], om[best] / 1e6)}
      printf "%d %.1f %.1f %d %d %s %.2f %d\n", n, tot / 1e6, m / 1e6, c, j, (ops == "" ? "-" : ops), ttsp / 1e6, dn}' "$1"
}

# thread_ticks PID...: "pid tid ticks name" per thread of each PID (user + system clock ticks; a name may hold spaces)
thread_ticks() {
  local p
  for p in "$@"; do
    # one awk for all of a process's threads (a thread that ended since the glob is skipped)
    awk -v p="$p" '{s = $0; n = s; sub(/^[0-9]+ \(/, "", n); sub(/\) [^)]*$/, "", n); sub(/.*\) /, "", s)
      split(s, a, " "); split(FILENAME, f, "/"); print p, f[5], a[12] + a[13], n}' /proc/"$p"/task/*/stat 2>/dev/null || true
  done
}

# loop_sample SERVER_PID GENERATOR_PID OUT: thread_ticks of both processes one second into the recorded window and
# one second before its end, with the time between in OUT (the two threads doing the I/O are each process's
# busiest; how busy they are says how much a stall is amplified: a backlog drains at the busy thread's spare rate)
loop_sample() {
  sleep $((TAIL_WARMUP + 1))
  thread_ticks "$1" "$2" >"$3.0"; local t0; t0=$(date +%s%N)
  sleep $((TAIL_SECONDS - 2))
  thread_ticks "$1" "$2" >"$3.1"; echo $(( $(date +%s%N) - t0 )) >"$3.ns"
}

# busiest_pct OUT PID: "pct name" of PID's busiest thread between loop_sample's two readings (pct of one core)
busiest_pct() {
  [ -s "$1.1" ] && [ -s "$1.ns" ] || { echo "- -"; return; }
  awk -v pid="$2" -v ns="$(cat "$1.ns")" -v hz="$(getconf CLK_TCK)" '
    FNR == NR {if ($1 == pid) t0[$2] = $3; next}
    $1 == pid && ($2 in t0) {d = $3 - t0[$2]; if (d > best) {best = d; name = $4; for (i = 5; i <= NF; i++) name = name "_" $i}}
    END {if (name == "") print "- -"; else printf "%.0f %s\n", 100 * best / hz / (ns / 1e9), name}' "$1.0" "$1.1"
}

# settle_run SERVER_PID GENERATOR_PID: two thirds into the warm-up, one full collection in the server and in the
# generator (jcmd GC.run), so the recorded window starts in a steady state, as a long-running process's: the
# startup's objects tenured. Without it a server whose first young collection falls in the window (raw Netty's, at
# 10 s of warm-up) pays there for copying every startup object (11-16 ms against 4-6 ms for later ones), while one
# whose metaspace filled during start-up (herald's: a full collection) had them moved out of the young generation.
# The collection shows in the VM log as `ParallelGCCollect` under ParallelGC (another collector names its own): one inside
# the window would be named there.
settle_run() {
  sleep "$(awk -v w="$TAIL_WARMUP" 'BEGIN {printf "%.1f", w * 2 / 3}')"
  jcmd "$1" GC.run >/dev/null 2>&1 || log "jcmd GC.run failed for the server (pid $1)"
  jcmd "$2" GC.run >/dev/null 2>&1 || log "jcmd GC.run failed for the generator (pid $2)"
}

# tail_run NAME BASE GC: starts BASE (a server_main name) as NAME under collector GC, runs herald-load against
# it and leaves the figures in TR_* (and a CSV row)
tail_run() {
  local s=$1 base=$2 gc=$3 dir="$WORK/tail.$1" url c0 s0 c1 s1 from to f flags=() sx=()
  for f in "${JVM_FLAGS[@]}"; do [ "$f" = -XX:+UseParallelGC ] || flags+=("$f"); done
  read -r -a gcf <<<"$(gc_flags "$gc")"
  TAIL_BASE[$s]=$base
  read -r -a sx <<<"${TR_SERVER_FLAGS-$TAIL_SERVER_FLAGS}"
  start_server "$s" "${flags[@]}" "${gcf[@]}" "${sx[@]}" "$(vm_log "$WORK/$s.vm.log")"
  url="http://127.0.0.1:${PORT[$s]}/plaintext"
  c0=$(cpu_ticks "${PID[$s]}"); s0=$(core_ticks)
  HERALD_LOAD_JVM_OPTS="${TR_GEN_FLAGS-$TAIL_GEN_FLAGS} $(vm_log "$WORK/$s.gen.log")" \
    "${ON_WRK[@]}" "${TR_GEN_CMD:-$TAIL_GEN_CMD}" rate "$url" -R "$TAIL_RATE" -c "$TAIL_CONNECTIONS" \
    -w "${TAIL_WARMUP}s" -d "${TAIL_SECONDS}s" --quiet -o "$dir" >"$dir.txt" 2>&1 &
  local gen=$! settle=""
  PID[$s.gen]=$gen  # stopped by bench_cleanup if the script is interrupted
  if [ "$TAIL_SETTLE" = 1 ]; then settle_run "${PID[$s]}" "$gen" & settle=$!; fi
  loop_sample "${PID[$s]}" "$gen" "$dir.threads" & local sampler=$!
  wait "$gen" || log "herald-load rate exited $? against $s: $(grep -m3 WARNING "$dir.txt" | tr '\n' ' ')"
  [ -n "$settle" ] && { wait "$settle" || true; }
  wait "$sampler" || true
  read -r TR_LOOP TR_LOOP_NAME <<<"$(busiest_pct "$dir.threads" "${PID[$s]}")"
  read -r TR_GEN_LOOP TR_GEN_LOOP_NAME <<<"$(busiest_pct "$dir.threads" "$gen")"
  unset "PID[$s.gen]"
  c1=$(cpu_ticks "${PID[$s]}"); s1=$(core_ticks)
  stop_server "$s"
  read -r from to <<<"$(window "$dir/latency.hlog")"
  read -r TR_PAUSES TR_PAUSE_MS TR_PAUSE_MAX TR_GCS TR_JIT TR_OPS TR_TTSP TR_DEOPTS <<<"$(vm_window "$WORK/$s.vm.log" "$from" "$to")"
  read -r TR_GEN_PAUSES TR_GEN_PAUSE_MS TR_GEN_PAUSE_MAX TR_GEN_GCS TR_GEN_JIT TR_GEN_OPS _ TR_GEN_DEOPTS <<<"$(vm_window "$WORK/$s.gen.log" "$from" "$to")"
  read -r TR_ACHIEVED TR_P50 TR_P99 TR_P999 TR_P9999 TR_MAX TR_SP9999 TR_SMAX TR_ERRORS TR_LATE TR_WAITS <<<"$(jq -r \
    '[.steps[0].achieved, .latency.p50, .latency.p99, .latency.p999, .latency.p9999, .latency.max,
      .service.p9999, .service.max, ([.errors[]] | add), .steps[0]["late-sends"], .steps[0]["connection-waits"]]
     | map(tostring) | join(" ")' "$dir/summary.json")"
  TR_OTHER=$(other_pct - "$c0" "$s0" "$c1" "$s1")
  TR_GC=$(gc_name "$gc")
  for v in P99 P999 P9999 MAX; do eval "TAIL_${v}[\$s]=\$TR_$v"; done
  TAIL_PAUSE_MAX[$s]=$TR_PAUSE_MAX; TAIL_GEN_PAUSE_MAX[$s]=$TR_GEN_PAUSE_MAX; TAIL_OTHER[$s]=$TR_OTHER
  TAIL_CAUSE[$s]="$(tail_cause) (server pauses $TR_PAUSES, longest $TR_PAUSE_MAX ms; other load on its core $TR_OTHER%; busiest threads: server $TR_LOOP% ($TR_LOOP_NAME), generator $TR_GEN_LOOP% ($TR_GEN_LOOP_NAME))"
  local line="server=$base gc=$TR_GC rate=$TAIL_RATE achieved=$TR_ACHIEVED p50_ms=$TR_P50 p99_ms=$TR_P99 p999_ms=$TR_P999"
  line="$line p9999_ms=$TR_P9999 max_ms=$TR_MAX service_p9999_ms=$TR_SP9999 service_max_ms=$TR_SMAX errors=$TR_ERRORS"
  line="$line late_sends=$TR_LATE connection_waits=$TR_WAITS server_pauses=$TR_PAUSES server_pause_total_ms=$TR_PAUSE_MS"
  line="$line server_pause_max_ms=$TR_PAUSE_MAX server_pause_ops=$TR_OPS server_ttsp_max_ms=$TR_TTSP gc_cycles=$TR_GCS"
  line="$line jit_compiles=$TR_JIT gen_pauses=$TR_GEN_PAUSES gen_pause_max_ms=$TR_GEN_PAUSE_MAX gen_pause_ops=$TR_GEN_OPS"
  line="$line gen_gc_cycles=$TR_GEN_GCS gen_jit_compiles=$TR_GEN_JIT server_deopts=$TR_DEOPTS gen_deopts=$TR_GEN_DEOPTS server_core_other_pct=$TR_OTHER server_loop_pct=$TR_LOOP gen_loop_pct=$TR_GEN_LOOP load=$(cut -d' ' -f1 /proc/loadavg) cause=$(tail_cause)"
  echo "info tail_run $line" | tee -a "$WORK/tail.lines" >&2
  local gen_note="" gen_cmd=${TR_GEN_CMD:-$TAIL_GEN_CMD}
  [ "$gen_cmd" = "$ROOT/bin/herald-load" ] || gen_note=" generator=$gen_cmd"
  [ -s "$TAIL_RESULTS" ] || echo "timestamp,commit,cores,jvm,gc,options,server,rate,achieved_rps,p50_ms,p99_ms,p999_ms,p9999_ms,max_ms,service_p9999_ms,service_max_ms,errors,late_sends,connection_waits,server_pauses,server_pause_total_ms,server_pause_max_ms,gc_cycles,jit_compiles,gen_pauses,gen_pause_max_ms,gen_jit_compiles,server_core_other_pct,loadavg,server_pause_ops,server_ttsp_max_ms,gen_pause_ops,gen_gc_cycles,server_flags,gen_flags,server_deopts,gen_deopts,server_loop_pct,gen_loop_pct" >"$TAIL_RESULTS"
  echo "$(date -u +%Y-%m-%dT%H:%M:%SZ),$COMMIT,$CORES shared: $PINNING,$JVM_NAME,$TR_GC,-Xmx1g -Xms1g io_threads=$IO_THREADS conns=$TAIL_CONNECTIONS warmup=${TAIL_WARMUP}s duration=${TAIL_SECONDS}s$gen_note,$base,$TAIL_RATE,$TR_ACHIEVED,$TR_P50,$TR_P99,$TR_P999,$TR_P9999,$TR_MAX,$TR_SP9999,$TR_SMAX,$TR_ERRORS,$TR_LATE,$TR_WAITS,$TR_PAUSES,$TR_PAUSE_MS,$TR_PAUSE_MAX,$TR_GCS,$TR_JIT,$TR_GEN_PAUSES,$TR_GEN_PAUSE_MAX,$TR_GEN_JIT,$TR_OTHER,$(cut -d' ' -f1 /proc/loadavg),$TR_OPS,$TR_TTSP,$TR_GEN_OPS,$TR_GEN_GCS,${sx[*]},${TR_GEN_FLAGS-$TAIL_GEN_FLAGS},$TR_DEOPTS,$TR_GEN_DEOPTS,$TR_LOOP,$TR_GEN_LOOP" >>"$TAIL_RESULTS"
}

# tail_cause: what the run's p99.99 (TR_P9999) is mostly made of, from the TR_* figures: "server-pauses" (its
# longest stop-the-world pause is at least half of it), "generator-pauses" (the same for herald-load's JVM),
# "send-waits" (the service time's p99.99 is under half of it: requests waited to be sent, because a server
# stall kept every connection busy or the generator fell behind), else "service" (the server took that long
# to answer without pausing: scheduling, i.e. other processes on its core, or JIT and the code itself)
tail_cause() {
  awk -v p="$TR_P9999" -v sp="$TR_PAUSE_MAX" -v gp="$TR_GEN_PAUSE_MAX" -v sv="$TR_SP9999" 'BEGIN {
    if (p == "" || p == "null") print "none"; else if (sp >= p / 2) print "server-pauses";
    else if (gp >= p / 2) print "generator-pauses"; else if (sv < p / 2) print "send-waits"; else print "service" }'
}

# median_of V...: the median of numbers (the lower middle one for an even count); empty when there are none
median_of() {
  # (grep finds nothing when there is no number: not a failure under `set -o pipefail`, which made a flag A/B
  # without a quiet round exit before its summary)
  printf '%s\n' "$@" | { grep -E '^[0-9.]+$' || true; } | sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'
}

# tail_median NAME: NAME's figures (TAIL_P99.. of NAME) as the medians of its rounds NAME.r1..NAME.rN, each
# percentile on its own; the cause is the round nearest the median p99.99's; prints one line with every round's
tail_median() {
  local n=$1 r v k vals near
  TAIL_BASE[$n]=${TAIL_BASE[$n.r1]}
  for v in P99 P999 P9999 MAX PAUSE_MAX GEN_PAUSE_MAX; do
    vals=()
    for ((r = 1; r <= TAIL_ROUNDS; r++)); do eval "vals+=(\"\${TAIL_$v[\$n.r\$r]}\")"; done
    eval "TAIL_$v[\$n]=\$(median_of \"\${vals[@]}\")"
    [ "$v" = P999 ] && k="p999_ms_rounds=$(IFS=/; echo "${vals[*]}")"
    [ "$v" = P9999 ] && k="$k p9999_ms_rounds=$(IFS=/; echo "${vals[*]}")"
  done
  for ((r = 1; r <= TAIL_ROUNDS; r++)); do
    [ "${TAIL_P9999[$n.r$r]}" = "${TAIL_P9999[$n]}" ] && { near=$n.r$r; break; }
  done
  TAIL_CAUSE[$n]=${TAIL_CAUSE[${near:-$n.r1}]}
  echo "info tail_rounds server=${TAIL_BASE[$n]} rounds=$TAIL_ROUNDS p999_ms=${TAIL_P999[$n]} p9999_ms=${TAIL_P9999[$n]} $k" | tee -a "$WORK/tail.lines" >&2
}

# tail_jitter: MachineJitter (a thread spinning on the clock, no server, no network) pinned to the server's core and
# to the generator's at once for TAIL_JITTER seconds: how long the machine itself keeps a running thread off
# each core (the hypervisor's and the kernel's stalls), the floor under every server's tail. Its lines go to
# WORK/tail.lines (printed again by tail_summary).
tail_jitter() {
  [ "$TAIL_JITTER" -gt 0 ] 2>/dev/null || return 0
  "${ON_SERVER[@]}" "$JAVA_HOME/bin/java" -cp "$CP" herald.http.bench.MachineJitter "$TAIL_JITTER" "server-core" >"$WORK/jitter.server" 2>&1 &
  local p=$!
  "${ON_WRK[@]}" "$JAVA_HOME/bin/java" -cp "$CP" herald.http.bench.MachineJitter "$TAIL_JITTER" "generator-core" >"$WORK/jitter.gen" 2>&1 || true
  wait "$p" || true
  grep -h '^jitter ' "$WORK/jitter.server" "$WORK/jitter.gen" | sed 's/^/info tail_machine /' | tee -a "$WORK/tail.lines" >&2
}

declare -A TAIL_CAUSE
declare -A TAIL_P99 TAIL_P999 TAIL_P9999 TAIL_MAX TAIL_PAUSE_MAX TAIL_GEN_PAUSE_MAX TAIL_OTHER TAIL_BASE

tail_runs() {
  local s gc
  command -v jq >/dev/null || die "jq is missing (apt-get install jq): the tail runs read herald-load's summary.json"
  for s in "${!PID[@]}"; do stop_server "$s"; done
  if [ -z "$TAIL_RATE" ]; then
    TAIL_BASE[tail_max_netty]=netty
    start_server tail_max_netty
    run_wrk tail_max_netty plaintext_np 5 "$TAIL_CONNECTIONS"
    run_wrk tail_max_netty plaintext_np 10 "$TAIL_CONNECTIONS"
    stop_server tail_max_netty
    TAIL_RATE=$(awk -v m="$W_RPS" -v f="$TAIL_SHARE" 'BEGIN {printf "%d", m * f}')
    log "tail: raw Netty's non-pipelined max $W_RPS req/s ($TAIL_CONNECTIONS connections, wrk); rate $TAIL_RATE ($TAIL_SHARE)"
    echo "info tail_max netty_np_rps=$W_RPS connections=$TAIL_CONNECTIONS share=$TAIL_SHARE rate=$TAIL_RATE"
  fi
  # bin/herald-load rebuilds its jar when the load sources are newer: do it now, not inside the first run's warm-up
  "$TAIL_GEN_CMD" --help >/dev/null 2>&1 || log "$TAIL_GEN_CMD --help failed"
  tail_jitter
  if [ -n "$TAIL_FLAGSETS" ]; then tail_flag_runs; return; fi  # the JVM-flag A/B instead (bench/lib/tail_flags.sh)
  local r order
  for ((r = 1; r <= TAIL_ROUNDS; r++)); do
    order="netty herald herald_vt"; ((r % 2 == 0)) && order="herald_vt herald netty"
    for s in $order; do tail_run "tail_$s.r$r" "$s" parallel; done
  done
  for s in netty herald herald_vt; do tail_median "tail_$s"; done
  for gc in $TAIL_GCS; do
    [ "$gc" = parallel ] && continue  # tail_herald ran under ParallelGC
    tail_run "tail_herald_$gc" herald "$gc"
    # raw Netty under the same collector: herald's tail against the yardstick's under each GC, not only ParallelGC
    tail_run "tail_netty_$gc" netty "$gc"
  done
}

tail_summary() {
  if [ -n "$TAIL_FLAGSETS" ]; then tail_flags_summary; return; fi
  local n=tail_netty h=tail_herald v=tail_herald_vt gc s ns best="" bv=""
  [ -f "$WORK/tail.lines" ] && cat "$WORK/tail.lines"
  echo "info tail_vthreads rate=$TAIL_RATE p99_ms=${TAIL_P99[$v]} p999_ms=${TAIL_P999[$v]} p9999_ms=${TAIL_P9999[$v]} max_ms=${TAIL_MAX[$v]} netty_p999_ms=${TAIL_P999[$n]} netty_p9999_ms=${TAIL_P9999[$n]}"
  echo "info tail ratios herald/netty p999=$(ratio "${TAIL_P999[$h]}" "${TAIL_P999[$n]}") p9999=$(ratio "${TAIL_P9999[$h]}" "${TAIL_P9999[$n]}")" \
    "herald_vt/netty p999=$(ratio "${TAIL_P999[$v]}" "${TAIL_P999[$n]}") p9999=$(ratio "${TAIL_P9999[$v]}" "${TAIL_P9999[$n]}")" \
    "(targets: <= 1.1, p999 <= 5 ms, p9999 <= 20 ms); rows in ${TAIL_RESULTS#"$ROOT"/}; herald-load and the server shared the machine's $CORES cores ($PINNING)"
  for gc in $TAIL_GCS; do
    s=tail_herald_$gc; [ "$gc" = parallel ] && s=$h
    ns=tail_netty_$gc; [ "$gc" = parallel ] && ns=$n
    echo "tail_gc gc=$(gc_name "$gc") p9999_ms=${TAIL_P9999[$s]} p999_ms=${TAIL_P999[$s]} p99_ms=${TAIL_P99[$s]} max_ms=${TAIL_MAX[$s]} server_pause_max_ms=${TAIL_PAUSE_MAX[$s]} netty_p9999_ms=${TAIL_P9999[$ns]} netty_p999_ms=${TAIL_P999[$ns]} netty_p99_ms=${TAIL_P99[$ns]}"
    # the best: the lowest p99.99, then the lowest p99.9
    if [ -z "$best" ] || awk -v a="${TAIL_P9999[$s]}" -v b="${TAIL_P9999[$bv]}" -v c="${TAIL_P999[$s]}" -v d="${TAIL_P999[$bv]}" \
      'BEGIN {exit !(a < b || (a == b && c < d))}'; then best=$gc; bv=$s; fi
  done
  echo "info tail_gc_best gc=$(gc_name "$best"): the lowest p99.99 (${TAIL_P9999[$bv]} ms; p99.9 ${TAIL_P999[$bv]} ms) of herald on the event loop;" \
    "what its p99.99 is made of: ${TAIL_CAUSE[$bv]}; a collector's tail differs from another's by its pauses only"\
    "where the cause is server-pauses, otherwise the difference is the machine's, not the collector's"
  echo "tail rate=$TAIL_RATE p99_ms=${TAIL_P99[$h]} p999_ms=${TAIL_P999[$h]} p9999_ms=${TAIL_P9999[$h]} max_ms=${TAIL_MAX[$h]} netty_p999_ms=${TAIL_P999[$n]} netty_p9999_ms=${TAIL_P9999[$n]}"
}
