#!/usr/bin/env bash
# bench/fuzz.sh: a coverage-guided fuzzing campaign (Jazzer, libFuzzer inside the JVM) of herald.http's codecs and
# herald.json's reader, one JVM per target, each for FUZZ_SECONDS. The targets are the @FuzzTest methods under
# http/src/test/java/herald/http/fuzz and json/src/test/java/herald/json/fuzz (`make test` only replays their
# committed corpus). Prints one line per target:
#   fuzz target=<name> execs=<n> execs_per_s=<n> edges=<n> corpus=<n> findings=<n>
# (edges: libFuzzer's "cov", the instrumented edges covered; corpus: inputs in the generated corpus at the end;
# findings: distinct crashing inputs Jazzer saved, deduplicated by stack trace) and keeps under RESULTS:
#   <target>.log          the Maven/Jazzer output
#   corpus/<target>/      the generated corpus (fed back in on the next run with the same RESULTS)
#   findings/<target>/    crash-<sha1> files: the inputs that broke an invariant (replay one: see bench/README.md)
# Knobs: FUZZ_SECONDS (120 per target), TARGETS (all: http1 http2 websocket json form), RESULTS
# (target/fuzz-results), KEEP_GOING (20: findings to collect before a target stops), TIMEOUT (60: seconds one
# input may take before it counts as a finding; generous because the machine is shared).
# Instrumented: herald.** everywhere; for http2 and websocket also Netty's HTTP/2 and WebSocket codecs, for json
# Jackson's parser.
set -euo pipefail
cd "$(dirname "$0")/.."
export JAVA_HOME="${JAVA_HOME:-$(build/find-jdk.sh)}"
export PATH="$JAVA_HOME/bin:$PATH"
export MAVEN_OPTS="${MAVEN_OPTS:---sun-misc-unsafe-memory-access=allow}"
FUZZ_SECONDS="${FUZZ_SECONDS:-120}"
TARGETS="${TARGETS:-http1 http2 websocket json form}"
RESULTS="$(mkdir -p "${RESULTS:-target/fuzz-results}" && cd "${RESULTS:-target/fuzz-results}" && pwd)"
KEEP_GOING="${KEEP_GOING:-20}"
TIMEOUT="${TIMEOUT:-60}"
MVN="mvn -B -ntp -Dstyle.color=never"

declare -A CLASS=([http1]=Http1DecoderFuzzTest [http2]=Http2FrameFuzzTest [websocket]=WebSocketFrameFuzzTest
                  [json]=JsonReaderFuzzTest [form]=FormDecoderFuzzTest)
# the module and package of each target: the JSON reader is herald-json's, the others herald-http's
declare -A MODULE=([json]=json)
declare -A EXTRA=([http2]='io.netty.handler.codec.http2.**' [websocket]='io.netty.handler.codec.http.websocketx.**'
                  [json]='com.fasterxml.jackson.core.**')

$MVN -q -pl http -am test-compile

for t in $TARGETS; do
  cls="${CLASS[$t]:?unknown target $t (http1 http2 websocket json form)}"
  mkdir -p "$RESULTS/corpus/$t" "$RESULTS/findings/$t"
  instrument="herald.**${EXTRA[$t]:+,${EXTRA[$t]}}"
  # jazzer.internal.arg.N: libFuzzer's command line (argv0, the corpus directory it writes to, flags that win
  # over Jazzer's own: artifacts to the results, a limit per input: TIMEOUT seconds)
  module="${MODULE[$t]:-http}"
  JAZZER_FUZZ=1 $MVN -o -pl "$module" surefire:test -Dtest="herald.$module.fuzz.$cls" -Dsurefire.failIfNoSpecifiedTests=false \
      -DtrimStackTrace=false -Djazzer.max_duration="${FUZZ_SECONDS}s" -Djazzer.keep_going="$KEEP_GOING" \
      -Djazzer.instrument="$instrument" \
      -Djazzer.internal.arg.0=fuzz -Djazzer.internal.arg.1="$RESULTS/corpus/$t" \
      -Djazzer.internal.arg.2="-artifact_prefix=$RESULTS/findings/$t/" -Djazzer.internal.arg.3=-timeout="$TIMEOUT" \
      > "$RESULTS/$t.log" 2>&1 || true
  log="$RESULTS/$t.log"
  execs=$(grep -oE 'Done [0-9]+ runs' "$log" | tail -1 | grep -oE '[0-9]+' || true)
  secs=$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 | grep -oE '[0-9]+ second' | grep -oE '[0-9]+' || true)
  if [ -z "$execs" ]; then  # stopped by a finding without keep_going's summary: the last status line
    execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
  fi
  edges=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
  corpus=$(find "$RESULTS/corpus/$t" -type f | wc -l)
  findings=$(find "$RESULTS/findings/$t" -type f -name 'crash-*' | wc -l)
  rate=$(grep -oE 'exec/s: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
  if [ -n "$execs" ] && [ -n "${secs:-}" ] && [ "$secs" -gt 0 ]; then rate=$((execs / secs)); fi
  echo "fuzz target=$t execs=${execs:-0} execs_per_s=${rate:-0} edges=${edges:-0} corpus=$corpus findings=$findings"
done
