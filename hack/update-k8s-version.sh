#!/usr/bin/env bash
# Pins k8s.io/kubernetes and every staging module it replaces to one release.
#
#   hack/update-k8s-version.sh v1.36.3
#
# Kubernetes requires its staging modules (k8s.io/api, k8s.io/client-go, ...) as v0.0.0 and
# replaces them with ./staging paths in its own go.mod. A consumer must replace each of them with
# the published v0.X.Y tag. This script reads the list from kubernetes' go.mod for VERSION, so the
# list never drifts from what kubernetes itself uses. The sample-* modules are not published and
# are skipped.
set -euo pipefail

version="${1:?usage: $0 vX.Y.Z (a k8s.io/kubernetes release)}"
case "$version" in v1.*) ;; *) echo "version must look like v1.36.3, got $version" >&2; exit 2 ;; esac
staging="v0.${version#v1.}"

cd "$(dirname "$0")/.."
modfile=$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
[ -f "$modfile" ] || { echo "could not download k8s.io/kubernetes@${version}" >&2; exit 1; }

mods=$(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*#\1#p' "$modfile" | grep -v '^k8s.io/sample-' | sort -u)
[ -n "$mods" ] || { echo "no staging replaces found in $modfile" >&2; exit 1; }

args=(-require="k8s.io/kubernetes@${version}")
for m in $mods; do
  args+=(-replace="${m}=${m}@${staging}")
done
go mod edit "${args[@]}"
echo "pinned k8s.io/kubernetes ${version} and $(echo "$mods" | wc -l) staging modules at ${staging}"
