#!/usr/bin/env bash
# Proves that hack/verify-codegen.sh catches stale generated code: in a scratch copy of the tree it
# adds a field to an API type without regenerating, and expects the check to fail naming the
# generated file. Run by `make test`.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' | tar --null -T - -cf -) |
  tar -xf - -C "$SCRATCH"
(cd "$SCRATCH" && git init -q && git add -A)

# A new optional field on NodeMetricSpec, as a developer would add it.
sed -i 's|^\tReportIntervalSeconds \*int64 `json:"reportIntervalSeconds,omitempty"`|&\n\t// +optional\n\tAgentVersion string `json:"agentVersion,omitempty"`|' \
  "$SCRATCH/apis/slo/v1alpha1/types.go"
grep -q AgentVersion "$SCRATCH/apis/slo/v1alpha1/types.go" || { echo "test-verify-codegen: could not add the field" >&2; exit 1; }

if out=$("$ROOT/hack/verify-codegen.sh" "$SCRATCH" 2>&1); then
  echo "$out"
  echo "FAIL: verify-codegen passed although apis/slo/v1alpha1 gained a field without 'make generate'" >&2
  exit 1
fi
if ! grep -q "manifests/crds is out of date" <<<"$out" || ! grep -q agentVersion <<<"$out"; then
  echo "$out"
  echo "FAIL: verify-codegen failed, but did not name the stale CRD and field" >&2
  exit 1
fi
echo "ok: verify-codegen rejects an API change without regenerated code"
