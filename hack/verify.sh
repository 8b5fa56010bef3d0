#!/usr/bin/env bash
# Everything `make verify` checks: formatting, vet, go.mod tidiness, generated code (from the API
# types, and what hack/chartdoc writes from the binaries' defaults).
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
unformatted=$(git ls-files -co --exclude-standard '*.go' | grep -v '^vendor/' | xargs -r gofmt -l)
if [ -n "$unformatted" ]; then
  echo "verify: gofmt wants changes in:" >&2
  echo "$unformatted" >&2
  status=1
fi
if ! go mod tidy -diff >/tmp/accord-tidy.diff 2>&1; then
  echo "verify: go.mod/go.sum are not tidy; run 'go mod tidy':" >&2
  head -40 /tmp/accord-tidy.diff >&2
  status=1
fi
go vet ./... || status=1
hack/verify-codegen.sh || status=1
go run ./hack/chartdoc -verify manifests/charts/accord || status=1
exit $status
