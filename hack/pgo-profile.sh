#!/usr/bin/env bash
# Regenerates cmd/scheduler/default.pgo, the CPU profile the Go toolchain uses to build accord-scheduler
# with profile-guided optimisation (every `go build` of ./cmd/scheduler picks it up: -pgo=auto).
#
# The profile is accord-scheduler's own, taken by `make bench-scale` while it schedules the
# heterogeneous population (test/scale: per-node CR scores, LoadAware thresholds, affinity, spread,
# tolerations, NodeMetric updates during the run) with the shipped profile
# (manifests/scheduler/config.yaml). The uniform population is left out on purpose: it is the one the
# profile's effect is measured on (test/scale/README.md, "Profile-guided optimisation").
#
#   make pgo-profile                         # 2000 nodes / 6000 pods / 40k bound pods, 2 rounds (~5 min)
#   make pgo-profile PGO_NODES=5000 PGO_PODS=10000 PGO_BOUND_PODS=100000 PGO_ROUNDS=3
#   (PGO_SECONDS: the seconds of each round's CPU profile, default 30)
#
# It runs kube-scheduler beside accord-scheduler (bench-scale's reference) and prints their figures;
# only accord-scheduler's profiles are kept. A loaded machine changes the figures, hardly the profile
# (its samples are shares). Then commit the file; `go test ./cmd/` checks it (TestSchedulerPGOProfile).
set -euo pipefail
cd "$(dirname "$0")/.."

NODES=${PGO_NODES:-2000}
PODS=${PGO_PODS:-6000}
BOUND_PODS=${PGO_BOUND_PODS:-40000}
ROUNDS=${PGO_ROUNDS:-2}
SECONDS_PER_ROUND=${PGO_SECONDS:-30}
GO=${GO:-go}

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "pgo-profile: profiling accord-scheduler on the heterogeneous population ($NODES nodes, $PODS pods, $ROUNDS rounds) into $dir"
ACCORD_SCALE_PPROF_DIR="$dir" ACCORD_SCALE_PPROF_SECONDS="$SECONDS_PER_ROUND" \
  make bench-scale GO="$GO" ONLY=scheduler SCALE_TESTS=TestScale POPULATIONS=heterogeneous \
  NODES="$NODES" PODS="$PODS" BOUND_PODS="$BOUND_PODS" ROUNDS="$ROUNDS"

shopt -s nullglob
profiles=("$dir"/heterogeneous-accord-r*.cpu.pprof)
if [ ${#profiles[@]} -eq 0 ]; then
  echo "pgo-profile: no accord-scheduler CPU profile in $dir:" >&2
  ls -l "$dir" >&2
  exit 1
fi
out=cmd/scheduler/default.pgo
"$GO" tool pprof -proto "${profiles[@]}" >"$out.tmp"
mv "$out.tmp" "$out"
echo "pgo-profile: wrote $out from ${#profiles[@]} profiles ($(wc -c <"$out") bytes); check it with: $GO test ./cmd/ -run TestSchedulerPGOProfile -v"
