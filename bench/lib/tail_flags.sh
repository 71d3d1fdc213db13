# bench/lib/tail_flags.sh: the JVM-flag A/B of bench/http.sh's tail part, sourced after bench/lib/tail.sh. With
# TAIL_FLAGSETS set, tail_runs runs this instead of its server rounds: one server (TAIL_FLAGS_SERVER, herald on the
# event loop) under each named set of JVM flags, TAIL_ROUNDS rounds with the sets in alternating order (A B C,
# C B A, ...), each set's figures the median of its rounds; tail_flags_summary prints a `tail_flags` line per set
# and the pick: the lowest median p99.99 (then p99.9) over each set's quiet rounds (TAIL_QUIET_PCT), or none.
# TAIL_FLAGSETS: sets separated by ';', each `name=server flags|generator flags|generator command` (the server's
# are added after -Xmx1g -Xms1g; a collector flag there replaces ParallelGC; the generator's are its whole set,
# TAIL_GEN_FLAGS when there is no '|'; the command, another build's bin/herald-load, TAIL_GEN_CMD when there is
# no second '|'), e.g.
#   TAIL_FLAGSETS='base=|-Xmx1g -XX:+UseParallelGC;pretouch=-XX:+AlwaysPreTouch|-Xmx1g -Xms1g -XX:+AlwaysPreTouch'
#   TAIL_FLAGSETS="old=||/tmp/old-herald/bin/herald-load;new=" (the generator of another revision against this one)

TAIL_FLAGSETS=${TAIL_FLAGSETS:-}
TAIL_FLAGS_SERVER=${TAIL_FLAGS_SERVER:-herald}
# a round counts for the pick only when other processes took at most this share (%) of the server's core
TAIL_QUIET_PCT=${TAIL_QUIET_PCT:-10}
declare -A TAIL_SET_SERVER TAIL_SET_GEN TAIL_SET_CMD
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
    TAIL_SET_GEN[$name]=$TAIL_GEN_FLAGS; TAIL_SET_CMD[$name]=$TAIL_GEN_CMD
    if [[ $flags == *'|'* ]]; then
      flags=${flags#*|}
      TAIL_SET_GEN[$name]=${flags%%|*}
      if [[ $flags == *'|'* ]]; then
        TAIL_SET_CMD[$name]=${flags#*|}
        [ -x "${TAIL_SET_CMD[$name]}" ] || die "TAIL_FLAGSETS: set $name: ${TAIL_SET_CMD[$name]} is not an executable"
        [ -n "${TAIL_SET_GEN[$name]// /}" ] || TAIL_SET_GEN[$name]=$TAIL_GEN_FLAGS
      fi
    fi
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
      TR_SERVER_FLAGS=${TAIL_SET_SERVER[$n]} TR_GEN_FLAGS=${TAIL_SET_GEN[$n]} TR_GEN_CMD=${TAIL_SET_CMD[$n]} \
        tail_run "tail_set_$n.r$r" "$TAIL_FLAGS_SERVER" "$(set_gc "${TAIL_SET_SERVER[$n]}")"
    done
  done
  for n in "${TAIL_SET_NAMES[@]}"; do tail_median "tail_set_$n"; done
}

# quiet_median SET V: the median of TAIL_V over SET's quiet rounds (other load on the server's core at most
# TAIL_QUIET_PCT), empty when it had none
quiet_median() {
  local r vals=()
  for ((r = 1; r <= TAIL_ROUNDS; r++)); do
    awk -v o="${TAIL_OTHER[$1.r$r]:-100}" -v q="$TAIL_QUIET_PCT" 'BEGIN {exit !(o <= q)}' || continue
    eval "vals+=(\"\${TAIL_$2[\$1.r\$r]}\")"
  done
  median_of "${vals[@]}"
}

tail_flags_summary() {
  local n s r q9 q99 quiet best="" b9="" b99=""
  [ -f "$WORK/tail.lines" ] && cat "$WORK/tail.lines"
  for n in "${TAIL_SET_NAMES[@]}"; do
    s=tail_set_$n
    q9=$(quiet_median "$s" P9999); q99=$(quiet_median "$s" P999); quiet=0
    for ((r = 1; r <= TAIL_ROUNDS; r++)); do
      awk -v o="${TAIL_OTHER[$s.r$r]:-100}" -v q="$TAIL_QUIET_PCT" 'BEGIN {exit !(o <= q)}' && quiet=$((quiet + 1))
    done
    echo "tail_flags set=$n p9999_ms=${TAIL_P9999[$s]} p999_ms=${TAIL_P999[$s]} p99_ms=${TAIL_P99[$s]} max_ms=${TAIL_MAX[$s]}" \
      "quiet_rounds=$quiet quiet_p9999_ms=${q9:--} quiet_p999_ms=${q99:--} server_pause_max_ms=${TAIL_PAUSE_MAX[$s]}" \
      "gen_pause_max_ms=${TAIL_GEN_PAUSE_MAX[$s]} server_flags='${TAIL_SET_SERVER[$n]}' gen_flags='${TAIL_SET_GEN[$n]}'" \
      "$([ "${TAIL_SET_CMD[$n]}" = "$TAIL_GEN_CMD" ] || echo "gen_cmd='${TAIL_SET_CMD[$n]}'")"
    [ -n "$q9" ] || continue
    if [ -z "$best" ] || awk -v a="$q9" -v b="$b9" -v c="$q99" -v d="$b99" 'BEGIN {exit !(a < b || (a == b && c < d))}'; then
      best=$n; b9=$q9; b99=$q99
    fi
  done
  if [ -z "$best" ]; then
    echo "info tail_flags_best none: no set had a quiet round (other load on the server's core <= $TAIL_QUIET_PCT%); the machine decided every tail"
    return
  fi
  local cause=${TAIL_CAUSE[tail_set_$best]}
  for ((r = 1; r <= TAIL_ROUNDS; r++)); do
    [ "${TAIL_P9999[tail_set_$best.r$r]}" = "$b9" ] && { cause=${TAIL_CAUSE[tail_set_$best.r$r]}; break; }
  done
  echo "info tail_flags_best set=$best: the lowest median p99.99 over quiet rounds ($b9 ms; p99.9 $b99 ms; rounds with at most" \
    "$TAIL_QUIET_PCT% other load on the server's core) of $TAIL_FLAGS_SERVER at $TAIL_RATE req/s; its tail is made of: $cause;" \
    "a set wins by its flags only where the pauses (server_pause_max_ms, gen_pause_max_ms) make the difference"
}
