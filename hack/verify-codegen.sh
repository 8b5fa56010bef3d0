#!/usr/bin/env bash
# Fails when the committed generated code (deepcopy, conversion, defaults, clientset, listers,
# informers, apply configurations, CRD YAML) differs from what hack/update-codegen.sh produces from
# the current apis/. It regenerates into a scratch copy of the tree, so the work tree is not touched.
#
#   hack/verify-codegen.sh [DIR]    (DIR: the tree to check, default the repo)
set -euo pipefail

SRC=$(cd "${1:-$(dirname "$0")/..}" && pwd)
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT

# Copy the files git knows (tracked and untracked-not-ignored) into the scratch tree.
(cd "$SRC" && git ls-files -z --cached --others --exclude-standard | xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' | tar --null -T - -cf -) |
  tar -xf - -C "$SCRATCH"
mkdir -p "$SCRATCH/bin" && [ -d "$SRC/bin/tools" ] && cp -r "$SRC/bin/tools" "$SCRATCH/bin/" || true

(cd "$SCRATCH" && hack/update-codegen.sh >/dev/null 2>"$SCRATCH/.codegen.log") || {
  cat "$SCRATCH/.codegen.log" >&2
  echo "verify-codegen: code generation failed" >&2
  exit 1
}

status=0
for d in apis pkg/constraints pkg/generated manifests/crds pkg/descheduler/framework/plugins cmd/examples; do
  if ! diff -ruN "$SRC/$d" "$SCRATCH/$d" >"$SCRATCH/.diff" 2>&1; then
    echo "verify-codegen: $d is out of date; run 'make generate' and commit the result:" >&2
    head -40 "$SCRATCH/.diff" >&2
    status=1
  fi
done
[ $status -eq 0 ] && echo "verify-codegen: generated code is up to date"
exit $status
