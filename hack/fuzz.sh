#!/usr/bin/env bash
# Runs every native Go fuzz test of the repo for FUZZTIME each (default 20s) and prints, per fuzzer,
# the executions, executions per second and corpus size `go test -fuzz` reported last:
#   FUZZ <package> <Fuzzer>: execs=<n> execs/s=<n> corpus=<n> (new interesting <n>)
# (execs/s is the mean over the run, baseline coverage included).
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
  ./pkg/constraints:FuzzUsageEstimator
  ./pkg/console:FuzzControlDecoding
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
  # go test prints the rate of the last 3 s; the mean over the fuzzing time is what a slow input
  # shows.
  elapsed="$(sed -E 's/^fuzz: elapsed: ([^,]+),.*/\1/' <<<"$last" |
    awk '{ s = 0; n = split($0, p, /[hms]/); t = $0; gsub(/[0-9.]+/, "", t);
           for (i = 1; i <= length(t); i++) { u = substr(t, i, 1); v = p[i] + 0;
             s += (u == "h" ? 3600 : (u == "m" ? 60 : 1)) * v }
           printf "%d", s }')"
  rate=$(( execs / (elapsed > 0 ? elapsed : 1) ))
  newi="$(sed -E 's/.*new interesting: ([0-9]+).*/\1/' <<<"$last")"
  total="$(sed -E 's/.*\(total: ([0-9]+)\).*/\1/' <<<"$last")"
  summary+=("FUZZ $pkg $name: execs=$execs execs/s=$rate corpus=$total (new interesting $newi)")
done
printf '%s\n' "${summary[@]}"
