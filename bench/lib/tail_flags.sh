# bench/lib/tail_flags.sh: the JVM-flag A/B of bench/http.sh's tail part, sourced after bench/lib/tail.sh. With
# TAIL_FLAGSETS set, tail_runs runs this instead of its server rounds: one server (TAIL_FLAGS_SERVER, herald on the
# event loop) under each named set of JVM flags, TAIL_ROUNDS rounds with the sets in alternating order (A B C,
# C B A, ...), each set's figures the median of its rounds; tail_flags_summary prints a `tail_flags` line per set
# and the pick (the lowest median p99.99, then p99.9), with what the set's tail is made of.
# TAIL_FLAGSETS: sets separated by ';', each `name=server flags|generator flags` (the server's are added after
# -Xmx1g -Xms1g; a collector flag there replaces ParallelGC; the generator's are its whole set, TAIL_GEN_FLAGS
# when there is no '|'), e.g.
#   TAIL_FLAGSETS='base=|-Xmx1g -XX:+UseParallelGC;pretouch=-XX:+AlwaysPreTouch|-Xmx1g -Xms1g -XX:+AlwaysPreTouch'

TAIL_FLAGSETS=${TAIL_FLAGSETS:-}
TAIL_FLAGS_SERVER=${TAIL_FLAGS_SERVER:-herald}
declare -A TAIL_SET_SERVER TAIL_SET_GEN
TAIL_SET_NAMES=()

# tail_flag_sets: TAIL_SET_NAMES, TAIL_SET_SERVER and TAIL_SET_GEN from TAIL_FLAGSETS
tail_flag_sets() {
  local spec name flags
  IFS=';' read -r -a specs <<<"$TAIL_FLAGSETS"
  for spec in "${specs[@]}"; do
    [ -n "${spec// /}" ] || continue
    name=${spec%%=*}; flags=${spec#*=}
    [[ $name =~ ^[a-z0-9_]+$ && $spec == *=* ]] || die "TAIL_FLAGSETS: '$spec' is not name=server flags|generator flags (name: a-z, 0-9, _)"
    TAIL_SET_NAMES+=("$name")
    TAIL_SET_SERVER[$name]=${flags%%|*}
    if [[ $flags == *'|'* ]]; then TAIL_SET_GEN[$name]=${flags#*|}; else TAIL_SET_GEN[$name]=$TAIL_GEN_FLAGS; fi
  done
  [ "${#TAIL_SET_NAMES[@]}" -ge 1 ] || die "TAIL_FLAGSETS names no set"
}

# set_gc FLAGS: the TAIL_GCS name of the collector FLAGS select, parallel when none
set_gc() {
  case " $1 " in
    *" -XX:+UseG1GC "*) echo g1 ;; *" -XX:+UseZGC "*) echo zgc ;; *" -XX:+UseShenandoahGC "*) echo shenandoah ;;
    *) echo parallel ;;
  esac
}

tail_flag_runs() {
  local r i n order=()
  tail_flag_sets
  for ((r = 1; r <= TAIL_ROUNDS; r++)); do
    order=("${TAIL_SET_NAMES[@]}")
    if ((r % 2 == 0)); then order=(); for n in "${TAIL_SET_NAMES[@]}"; do order=("$n" "${order[@]}"); done; fi
    for n in "${order[@]}"; do
      TR_SERVER_FLAGS=${TAIL_SET_SERVER[$n]} TR_GEN_FLAGS=${TAIL_SET_GEN[$n]} \
        tail_run "tail_set_$n.r$r" "$TAIL_FLAGS_SERVER" "$(set_gc "${TAIL_SET_SERVER[$n]}")"
    done
  done
  for n in "${TAIL_SET_NAMES[@]}"; do tail_median "tail_set_$n"; done
}

tail_flags_summary() {
  local n s best="" bs=""
  [ -f "$WORK/tail.lines" ] && cat "$WORK/tail.lines"
  for n in "${TAIL_SET_NAMES[@]}"; do
    s=tail_set_$n
    echo "tail_flags set=$n p9999_ms=${TAIL_P9999[$s]} p999_ms=${TAIL_P999[$s]} p99_ms=${TAIL_P99[$s]} max_ms=${TAIL_MAX[$s]}" \
      "server_pause_max_ms=${TAIL_PAUSE_MAX[$s]} gen_pause_max_ms=${TAIL_GEN_PAUSE_MAX[$s]} server_flags='${TAIL_SET_SERVER[$n]}' gen_flags='${TAIL_SET_GEN[$n]}'"
    if [ -z "$best" ] || awk -v a="${TAIL_P9999[$s]}" -v b="${TAIL_P9999[$bs]}" -v c="${TAIL_P999[$s]}" -v d="${TAIL_P999[$bs]}" \
      'BEGIN {exit !(a < b || (a == b && c < d))}'; then best=$n; bs=$s; fi
  done
  echo "info tail_flags_best set=$best: the lowest median p99.99 (${TAIL_P9999[$bs]} ms; p99.9 ${TAIL_P999[$bs]} ms) of $TAIL_FLAGS_SERVER" \
    "over $TAIL_ROUNDS alternating rounds at $TAIL_RATE req/s; its tail is made of: ${TAIL_CAUSE[$bs]}; a set wins by its flags only" \
    "where the others' cause is server-pauses or generator-pauses and the rounds were quiet (server_core_other_pct near 0)"
}
