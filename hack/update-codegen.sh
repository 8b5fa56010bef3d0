#!/usr/bin/env bash
# Regenerates everything derived from the API types: deepcopy, defaulters and conversions (for every
# package under apis/, pkg/constraints (the rules' shared args), pkg/descheduler/framework/plugins/
# and cmd/examples/ that asks for them), the
# typed clientset, listers, informers and apply configurations of the CRD groups into pkg/generated/,
# and the CRD manifests into manifests/crds/.
#
# The generators come from the k8s.io/code-generator and sigs.k8s.io/controller-tools versions pinned
# in go.mod; nothing is downloaded but Go modules.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
MODULE=$(go list -m)
BOILERPLATE="$ROOT/hack/boilerplate.go.txt"

CODEGEN_VERSION=$(go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' k8s.io/code-generator)
CODEGEN_DIR=$(go mod download -json "k8s.io/code-generator@${CODEGEN_VERSION}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -f "$CODEGEN_DIR/kube_codegen.sh" ] || { echo "kube_codegen.sh not found in k8s.io/code-generator@${CODEGEN_VERSION}" >&2; exit 1; }

# The generators are built into a repo-local, git-ignored directory.
export GOBIN="$ROOT/bin/tools/code-generator-${CODEGEN_VERSION}"
mkdir -p "$GOBIN"
# kube_codegen.sh builds inside the module cache, which is read-only: keep the workspace flags out.
export GOFLAGS="${GOFLAGS:-} -mod=mod"
export GOWORK=off

# shellcheck source=/dev/null
source "$CODEGEN_DIR/kube_codegen.sh"

# Deepcopy/defaulter/conversion wherever a package asks for it: the API types, and the args types
# that descheduler plugins (in-tree and the out-of-tree example) keep in their own folders.
for dir in apis pkg/constraints pkg/descheduler/framework/plugins cmd/examples; do
  [ -d "$ROOT/$dir" ] || continue
  kube::codegen::gen_helpers \
    --boilerplate "$BOILERPLATE" \
    "$ROOT/$dir"
done

kube::codegen::gen_client \
  --with-watch \
  --with-applyconfig \
  --output-dir "$ROOT/pkg/generated" \
  --output-pkg "$MODULE/pkg/generated" \
  --boilerplate "$BOILERPLATE" \
  "$ROOT/apis"

rm -rf "$ROOT/manifests/crds"
go tool controller-gen crd:crdVersions=v1 \
  paths="./apis/scheduling/..." paths="./apis/slo/..." \
  output:crd:artifacts:config="$ROOT/manifests/crds"
echo "codegen done"
