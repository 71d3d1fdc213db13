#!/usr/bin/env bash
# Checks that `make repl` starts and answers over its socket: requires every module's public namespace and starts
# and stops a herald.http server from the socket REPL. Prints "make repl: ok ..." and exits 0, or shows the log.
# Not part of `make test` (it compiles every module); run it by hand: build/repl-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
       || echo $((20000 + RANDOM % 20000)))
work=$(mktemp -d)
mkfifo "$work/stdin"
REPL_PORT=$port setsid make -s repl < "$work/stdin" > "$work/log" 2>&1 &
pid=$!
exec 4>"$work/stdin"   # keeps the terminal REPL's stdin open, so the JVM stays up
cleanup() { kill -- -"$pid" 2>/dev/null; wait "$pid" 2>/dev/null; exec 4>&-; rm -rf "$work"; }
trap cleanup EXIT
started=$(date +%s)
until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
  if ! kill -0 "$pid" 2>/dev/null || [ $(($(date +%s) - started)) -gt 600 ]; then
    echo "make repl: no socket REPL on port $port"; cat "$work/log"; exit 1
  fi
  sleep 1
done
up=$(($(date +%s) - started))
exec 3<>"/dev/tcp/127.0.0.1/$port"
cat >&3 <<'FORMS'
(require 'herald.json 'herald.http 'herald.flow 'herald.load 'herald.feed)
(let [s (herald.http/start-server (fn [_] {:status 200 :body "hi"}) {:port 0 :host "127.0.0.1"})
      body (slurp (str "http://127.0.0.1:" (herald.http/server-port s) "/"))]
  @(herald.http/stop-server s)
  (println "ANSWER" body (count (filter #(re-find #"^herald\." (str (ns-name %))) (all-ns)))))
:repl/quit
FORMS
answer=$(timeout 300 cat <&3 | tee "$work/answer" | grep -o -m1 'ANSWER.*')
exec 3>&-
if [ "${answer%% *}" = ANSWER ] && [ "$(echo "$answer" | cut -d' ' -f2)" = hi ]; then
  echo "make repl: ok (socket REPL on port $port after ${up}s; herald.http served a request; $(echo "$answer" | cut -d' ' -f3) herald namespaces loaded)"
else
  echo "make repl: the socket REPL did not answer as expected"; cat "$work/answer"; cat "$work/log"; exit 1
fi
