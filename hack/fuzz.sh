#!/usr/bin/env bash
# Runs every native Go fuzz test of the repo for FUZZTIME each (default 20s) and prints, per fuzzer,
# the executions, executions per second and corpus size `go test -fuzz` reported last:
#   FUZZ <package> <Fuzzer>: execs=<n> execs/s=<n> corpus=<n> (new interesting <n>)
# A crash fails the script; go test writes the failing input under the package's testdata/fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-20s}"
GO="${GO:-go}"
# package:Fuzzer
FUZZERS=(
  ./pkg/descheduler/policy:FuzzDecodePolicy
  ./apis/config/scheme:FuzzDecodePluginArgs
  ./pkg/metricsreporter:FuzzDecodeConfig
  ./pkg/constraints:FuzzCompileCRs
)
summary=()
for f in "${FUZZERS[@]}"; do
  pkg="${f%%:*}" name="${f##*:}"
  log="$(mktemp)"
  echo "== $GO test -run '^\$' -fuzz '^${name}\$' -fuzztime $FUZZTIME $pkg"
  if ! "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg" 2>&1 | tee "$log"; then
    echo "fuzz: $name failed" >&2
    rm -f "$log"
    exit 1
  fi
  # fuzz: elapsed: 20s, execs: 81234 (4061/sec), new interesting: 3 (total: 17)
  last="$(grep -E '^fuzz: elapsed: .*execs: ' "$log" | tail -1)"
  rm -f "$log"
  execs="$(sed -E 's/.*execs: ([0-9]+).*/\1/' <<<"$last")"
  rate="$(sed -E 's/.*\(([0-9]+)\/sec\).*/\1/' <<<"$last")"
  newi="$(sed -E 's/.*new interesting: ([0-9]+).*/\1/' <<<"$last")"
  total="$(sed -E 's/.*\(total: ([0-9]+)\).*/\1/' <<<"$last")"
  summary+=("FUZZ $pkg $name: execs=$execs execs/s=$rate corpus=$total (new interesting $newi)")
done
printf '%s\n' "${summary[@]}"
