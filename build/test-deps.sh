#!/usr/bin/env bash
# Installs what integration tests use, when it is missing: the Debian packages (Ring and Compojure jars, wrk, and
# the servers bin/herald-cluster starts: haproxy, redis-server, postgresql; headless Chromium and chromedriver for the
# dashboard's browser test) when we are root, and h2spec (HTTP/2 conformance, herald.http's h2spec test), built with
# the machine's Go from the Go module proxy into ~/.cache/herald/bin.
# Never fails the build: a test whose tool is missing reports itself skipped with the reason.
set -u
H2SPEC_MODULE=github.com/summerwind/h2spec/cmd/h2spec@v2.2.1+incompatible
h2spec_bin="$HOME/.cache/herald/bin/h2spec"
if [ ! -x "$h2spec_bin" ]; then
  if command -v go >/dev/null; then
    echo "test-deps: building h2spec ($H2SPEC_MODULE)"
    GOBIN=$(dirname "$h2spec_bin") GOFLAGS=-mod=mod timeout 600 go install "$H2SPEC_MODULE" >/tmp/herald-h2spec.log 2>&1 \
      || echo "test-deps: h2spec did not build (see /tmp/herald-h2spec.log); its test will be skipped"
  else
    echo "test-deps: no go command to build h2spec; its test will be skipped"
  fi
fi

want=(libring-core-clojure libcompojure-clojure wrk haproxy redis-server postgresql chromium chromium-driver)
missing=()
for p in "${want[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "test-deps: cannot install ${missing[*]} (not root or no apt-get); dependent tests will be skipped"; exit 0
fi
echo "test-deps: installing ${missing[*]}"
( apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" ) >/tmp/herald-test-deps.log 2>&1 \
  || echo "test-deps: apt-get failed (see /tmp/herald-test-deps.log); dependent tests will be skipped"
exit 0
