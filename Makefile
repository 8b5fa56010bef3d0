# Accord: accord-scheduler and accord-descheduler from one shared, CRD-backed API.
#   make run     a local cluster with both binaries and sample CRs (Ctrl-C stops it)
#   make test    unit and integration tests (real etcd + kube-apiserver, started in-process)

GO        ?= go
BIN       ?= bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0)
GIT_COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# Stamp component-base's version so --version and /version report the build. component-base requires a
# semantic version and kube-scheduler checks it against the Kubernetes version it emulates, so Accord's
# own version rides as build metadata on the Kubernetes release it is built on.
K8S_VERSION := $(shell sed -n 's/^\tk8s.io\/kubernetes \(v[0-9.]*\)$$/\1/p' go.mod)
VERSION_PKG := k8s.io/component-base/version
LDFLAGS   := -X $(VERSION_PKG).gitVersion=$(K8S_VERSION)+accord.$(VERSION) -X $(VERSION_PKG).gitCommit=$(GIT_COMMIT) \
             -X $(VERSION_PKG).gitTreeState=$(if $(findstring dirty,$(VERSION)),dirty,clean) \
             -X $(VERSION_PKG).buildDate=$(shell date -u +%Y-%m-%dT%H:%M:%SZ) \
             -X $(VERSION_PKG).gitMajor=$(word 1,$(subst ., ,$(patsubst v%,%,$(K8S_VERSION)))) \
             -X $(VERSION_PKG).gitMinor=$(word 2,$(subst ., ,$(patsubst v%,%,$(K8S_VERSION))))
# Integration packages run twice in one process to prove tests and the harness leave nothing behind.
INTEGRATION_COUNT ?= 2
TEST_FLAGS ?=
UNIT_PKGS := ./apis/... ./pkg/... ./cmd/... ./manifests/... ./hack/release/ ./hack/chartdoc/

# The binaries: cmd/NAME builds bin/accord-NAME, except a kubectl plugin (cmd/kubectl-NAME), which
# builds bin/kubectl-NAME: the name kubectl looks for on PATH.
COMMANDS := $(notdir $(patsubst %/,%,$(dir $(wildcard cmd/*/main.go))))

.PHONY: all build test test-unit test-integration test-reliability test-hack generate verify vendor run clean bench bench-scale bench-console soak kubectl fuzz simulate pgo-profile
.PHONY: static images dockerfiles test-images chart-crds chart-docs monitoring release-kubectl

# Images: every cmd/NAME is a product (bin/images/accord-NAME.tar) except the playground and the
# kubectl plugins (client binaries, run by kubectl on a workstation); the examples live one level
# deeper (cmd/examples/*) and are not matched by COMMANDS.
IMAGE_COMMANDS ?= $(filter-out playground kubectl-%,$(COMMANDS))
ARCH       ?= $(shell $(GO) env GOARCH)
IMAGES_DIR ?= $(BIN)/images
IMAGE_REPOSITORY ?=
IMAGE_SOURCE ?= https://github.com/accord-sched/accord

all: build

build:
	$(GO) build ./...
	@mkdir -p $(BIN)
	@for c in $(COMMANDS); do \
	  case $$c in kubectl-*) b=$$c;; *) b=accord-$$c;; esac; \
	  echo "$(GO) build -o $(BIN)/$$b ./cmd/$$c"; \
	  $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/$$b ./cmd/$$c || exit 1; \
	done

# kubectl from the pinned k8s.io/kubernetes, for poking at the playground.
kubectl:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/kubectl k8s.io/kubernetes/cmd/kubectl

test: test-unit test-integration test-hack test-images

test-unit:
	$(GO) test $(TEST_FLAGS) $(UNIT_PKGS)

# test/reliability (faults, failover, apiserver restart, bursts: ~4 min a run on 2 cores) runs once, in
# test-reliability.
INTEGRATION_PKGS = $(shell $(GO) list ./test/... | grep -v '/test/reliability$$')
# accord-scheduler is built with cmd/scheduler/default.pgo (profile-guided optimisation): its first build
# compiles every dependency again with the profile. Built once here, so the test packages that run the
# binary (harness.BuildBinary) link from the cache instead of compiling it side by side.
test-integration:
	$(GO) build -o /dev/null ./cmd/scheduler
	$(GO) test -count=$(INTEGRATION_COUNT) -timeout 30m $(TEST_FLAGS) $(INTEGRATION_PKGS)

# Reliability under faults on the real control plane; prints the measured figures (FIGURE lines).
RELIABILITY_COUNT ?= 1
test-reliability:
	@log=$$(mktemp); \
	$(GO) test -count=$(RELIABILITY_COUNT) -v -timeout 20m $(TEST_FLAGS) ./test/reliability/ >$$log 2>&1; rc=$$?; \
	grep -E '^(--- |ok|FAIL|panic)|FIGURE |harness:' $$log; \
	if [ $$rc -ne 0 ]; then tail -n 200 $$log; fi; rm -f $$log; exit $$rc

# The repo's own scripts: verify-codegen must catch an API change without regenerated code.
test-hack:
	hack/test-verify-codegen.sh

# Native Go fuzzing: each fuzzer for FUZZTIME (default 20s); prints execs/s and corpus size per fuzzer.
# `make test` runs their seed corpora as unit tests.
FUZZTIME ?= 20s
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) hack/fuzz.sh

# The seeded simulation of the descheduler runtime (test/simulation, issue #35): SIM_CHECKS random runs of
# up to SIM_STEPS actions each, from SIM_SEED (0: a new seed each time, printed on failure; `make test`
# runs ACCORD_SIM_CHECKS=10 runs from seed 35, and the scenarios). A failure prints the seed, the shrunk
# configuration and actions, and the failing run's trace; test/simulation/README.md says how to replay it.
SIM_CHECKS ?= 200
SIM_STEPS  ?= 60
SIM_SEED   ?= 0
simulate:
	ACCORD_SIM_CHECKS=$(SIM_CHECKS) ACCORD_SIM_STEPS=$(SIM_STEPS) ACCORD_SIM_SEED=$(SIM_SEED) \
	  $(GO) test -count=1 -timeout 3h -v -run 'TestSimulation$$' $(TEST_FLAGS) ./test/simulation/

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(TEST_FLAGS) ./pkg/...

# cmd/scheduler/default.pgo, the CPU profile accord-scheduler is built with (profile-guided
# optimisation), taken again from the current code on bench-scale's heterogeneous population
# (hack/pgo-profile.sh, which says its knobs: PGO_NODES, PGO_PODS, PGO_BOUND_PODS, PGO_ROUNDS,
# PGO_SECONDS).
# Commit the new file; `go test ./cmd/` checks it.
pgo-profile:
	GO=$(GO) hack/pgo-profile.sh

# The scale benchmark (test/scale, issues #10 and #24; method and figures in test/scale/README.md): the
# real accord-scheduler and accord-descheduler binaries against a real control plane with NODES nodes of
# each of POPULATIONS (heterogeneous first, then uniform; each on its own control plane):
# kube-scheduler's default profile, then the Accord profile, each binding PODS pending pods; then one
# dry-run accord-descheduler cycle over BOUND_PODS bound pods (UNCAPPED=true adds a cycle without
# eviction limits) and kube-scheduler binding pending copies of that cycle's candidates; then, on a new
# control plane per population with NODES nodes and BOUND_PODS bound pods, the event-triggered
# accord-descheduler: EVENT_TRIALS ClusterScopedResource changes, each on one node, timed to every
# violator's eviction (TestDeschedulerEvent). DESCHEDULER_GOMEMLIMIT (e.g. 600MiB) runs
# accord-descheduler with that GOMEMLIMIT, as the Helm chart sets it from the container's limit.
# DESCHEDULER_GOGC (e.g. default,100) runs TestScale's dry-run cycle once per GOGC value ("default":
# GOGC unset, the binary's own) and TestDeschedulerEvent with the first. SCALE_TESTS picks the tests (e.g.
# SCALE_TESTS=TestDeschedulerEvent); ONLY=scheduler or ONLY=descheduler runs that half of TestScale
# alone (ACCORD_SCALE_ONLY); ACCORD_SCALE_PPROF_DIR=dir saves CPU and heap profiles of the runs.
# The scheduler half runs ROUNDS interleaved rounds of its contenders (each once per round, the order
# rotated) and prints min/median/max over the rounds: kube-scheduler, accord-scheduler, with
# BASELINE=<git rev> accord-scheduler built from that revision (a temporary git worktree), with
# RESERVATIONS=finished,live (e.g. 1000,100) accord-scheduler with that many reservations present
# (both accord contenders then run the Accord profile with the Reservation plugin).
# DESCHEDULER_BASELINE=<binary> runs that accord-descheduler too, after this tree's, on the same
# cluster state (TestScale's descheduler half; TestDeschedulerEvent takes ACCORD_SCALE_DESCHEDULER_BIN).
# Prints the FIGURE lines and their ratios. `make test` runs both tests, both populations, at a small
# size (one round, 30 finished and 5 live reservations).
NODES        ?= 5000
PODS         ?= 10000
BOUND_PODS   ?= 100000
UNCAPPED     ?= false
ONLY         ?=
EVENT_TRIALS ?= 20
POPULATIONS  ?= heterogeneous,uniform
SCALE_TESTS  ?= TestScale|TestDeschedulerEvent
ROUNDS       ?= 3
BASELINE     ?=
RESERVATIONS ?=
DESCHEDULER_GOMEMLIMIT ?=
DESCHEDULER_GOGC ?=
DESCHEDULER_BASELINE ?=
bench-scale:
	@log=$$(mktemp); \
	ACCORD_SCALE=1 ACCORD_SCALE_NODES=$(NODES) ACCORD_SCALE_PODS=$(PODS) ACCORD_SCALE_BOUND_PODS=$(BOUND_PODS) \
	  ACCORD_SCALE_UNCAPPED=$(UNCAPPED) ACCORD_SCALE_ONLY=$(ONLY) ACCORD_SCALE_EVENT_TRIALS=$(EVENT_TRIALS) \
	  ACCORD_SCALE_POPULATIONS=$(POPULATIONS) ACCORD_SCALE_ROUNDS=$(ROUNDS) ACCORD_SCALE_BASELINE=$(BASELINE) \
	  ACCORD_SCALE_RESERVATIONS=$(RESERVATIONS) ACCORD_SCALE_DESCHEDULER_GOMEMLIMIT=$(DESCHEDULER_GOMEMLIMIT) \
	  ACCORD_SCALE_DESCHEDULER_GOGC=$(DESCHEDULER_GOGC) ACCORD_SCALE_DESCHEDULER_BASELINE=$(DESCHEDULER_BASELINE) \
	  $(GO) test -count=1 -v -timeout 120m $(TEST_FLAGS) -run '^($(SCALE_TESTS))$$' ./test/scale/ >$$log 2>&1; rc=$$?; \
	grep -E '^FIGURE |^(--- |ok|FAIL|panic)|scale_test.go:[0-9]+: ([0-9]+ |[a-z-]+: during the run)|event_test.go:[0-9]+: (trial|descheduler per)' $$log; \
	if [ $$rc -ne 0 ]; then tail -n 200 $$log; fi; rm -f $$log; exit $$rc

# The console at scale (test/scale TestConsoleScale, issue #39; figures in test/scale/README.md,
# Console): accord-console on a control plane with NODES nodes and BOUND_PODS bound pods of the
# heterogeneous population, its page in Chromium: first render, an update's repaint, bytes pushed per
# update (FIGURE). `make test` runs it at the smoke size.
bench-console:
	@log=$$(mktemp); \
	ACCORD_SCALE=1 ACCORD_SCALE_NODES=$(NODES) ACCORD_SCALE_BOUND_PODS=$(BOUND_PODS) \
	  $(GO) test -count=1 -v -timeout 60m $(TEST_FLAGS) -run '^TestConsoleScale$$' ./test/scale/ >$$log 2>&1; rc=$$?; \
	grep -E '^FIGURE |^(--- |ok|FAIL|panic)|console_test.go:[0-9]+: ' $$log; \
	if [ $$rc -ne 0 ]; then tail -n 100 $$log; fi; rm -f $$log; exit $$rc

# The soak (test/scale TestSoak, issue #35; method and figures in test/scale/README.md, Soak): the real
# accord-scheduler and accord-descheduler on a local control plane (controllers and the node simulator)
# with SOAK_NODES nodes and SOAK_PODS pods of Deployments, the descheduler every SOAK_INTERVAL, under
# churn (NodeMetric reports and a hot node, ClusterScopedResource changes, a moving NoSchedule taint for
# the soft profile, bursts, PodMigrations, reservation-first evictions), until SOAK_CYCLES cycles or
# SOAK_MAX_DURATION (the whole test, build included); prints each series' slope per 100 cycles (FIGURE).
SOAK_NODES        ?= 500
SOAK_PODS         ?= 10000
SOAK_CYCLES       ?= 1000
SOAK_INTERVAL     ?= 1s
SOAK_MAX_DURATION ?= 25m
soak:
	@log=$$(mktemp); \
	ACCORD_SOAK=1 ACCORD_SOAK_NODES=$(SOAK_NODES) ACCORD_SOAK_PODS=$(SOAK_PODS) ACCORD_SOAK_CYCLES=$(SOAK_CYCLES) \
	  ACCORD_SOAK_INTERVAL=$(SOAK_INTERVAL) ACCORD_SOAK_MAX_DURATION=$(SOAK_MAX_DURATION) \
	  $(GO) test -count=1 -v -timeout 120m $(TEST_FLAGS) -run '^TestSoak$$' ./test/scale/ >$$log 2>&1; rc=$$?; \
	grep -E '^FIGURE |^(--- |ok|FAIL|panic)|soak_test.go:[0-9]+: ' $$log; \
	if [ $$rc -ne 0 ]; then tail -n 100 $$log; fi; rm -f $$log; exit $$rc

# Code from the API types, then what is written from the binaries' defaults (docs, sample YAML, the
# chart's values and its reference: hack/chartdoc).
generate:
	hack/update-codegen.sh
	$(GO) run ./hack/chartdoc manifests/charts/accord

verify:
	hack/verify.sh

vendor:
	$(GO) mod vendor

# The playground: bin/accord-playground (with bin/accord-* and bin/kubectl built for poking at it).
run: build kubectl
	$(BIN)/accord-playground $(RUN_ARGS)

clean:
	rm -rf $(BIN) vendor .playground

# Static linux binaries for the images (no cgo, no local paths), version-stamped like `make build`.
static:
	@mkdir -p $(IMAGES_DIR)/linux_$(ARCH)
	@for c in $(IMAGE_COMMANDS); do \
	  echo "CGO_ENABLED=0 GOOS=linux GOARCH=$(ARCH) $(GO) build -trimpath -o $(IMAGES_DIR)/linux_$(ARCH)/accord-$$c ./cmd/$$c"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$(ARCH) $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(IMAGES_DIR)/linux_$(ARCH)/accord-$$c ./cmd/$$c || exit 1; \
	done

# kubectl-accord's release: static binaries (CGO_ENABLED=0, -trimpath, version-stamped like `make
# build`) for linux, darwin and windows on amd64 and arm64 (manifests/krew's platforms, or
# RELEASE_PLATFORMS=os/arch,...), packed as tar.gz (zip on windows) into $(RELEASE_DIR), with
# SHA256SUMS and the krew manifest accord.yaml (manifests/krew/accord.yaml.tmpl, the sums filled in;
# archives downloaded from RELEASE_URI_BASE). Six cross builds: not part of `make test`.
RELEASE_DIR ?= $(BIN)/release
RELEASE_PLATFORMS ?=
RELEASE_URI_BASE ?= $(IMAGE_SOURCE)/releases/download/$(VERSION)
release-kubectl:
	$(GO) run ./hack/release -out $(RELEASE_DIR) -version $(VERSION) -ldflags "$(LDFLAGS)" \
	  -uri-base $(RELEASE_URI_BASE) -platforms "$(RELEASE_PLATFORMS)"

# OCI image tarballs, packed by hack/imagebuilder (go-containerregistry, pinned in go.mod): no base
# image, no registry, nothing downloaded. Load one with `docker load -i bin/images/accord-scheduler.tar`.
images: static
	$(GO) build -o $(IMAGES_DIR)/imagebuilder ./hack/imagebuilder
	@for c in $(IMAGE_COMMANDS); do \
	  $(IMAGES_DIR)/imagebuilder -binary $(IMAGES_DIR)/linux_$(ARCH)/accord-$$c -name accord-$$c -arch $(ARCH) \
	    -version $(VERSION) -revision $(GIT_COMMIT) -source $(IMAGE_SOURCE) -repository "$(IMAGE_REPOSITORY)" \
	    -out $(IMAGES_DIR)/accord-$$c.tar || exit 1; \
	done

# hack/docker/accord-NAME.Dockerfile for each image: the same image, built with Docker.
dockerfiles:
	@mkdir -p hack/docker
	@for c in $(IMAGE_COMMANDS); do \
	  $(GO) run ./hack/imagebuilder -dockerfile hack/docker/accord-$$c.Dockerfile -name accord-$$c -cmd $$c -source $(IMAGE_SOURCE) || exit 1; \
	done

# Loads every tarball `make images` wrote and checks its configuration and that its binary runs.
test-images: images
	ACCORD_IMAGES_DIR=$(abspath $(IMAGES_DIR)) ACCORD_IMAGE_COMMANDS="$(IMAGE_COMMANDS)" $(GO) test -count=1 $(TEST_FLAGS) ./hack/imagebuilder/

# The Helm chart's crds/ are copies of manifests/crds (one source; a unit test fails when they differ).
chart-crds:
	rm -f manifests/charts/accord/crds/*.yaml
	cp manifests/crds/*.yaml manifests/charts/accord/crds/

# The Grafana dashboard (manifests/monitoring/accord-dashboard.json, generated from package monitoring's
# panels), and the chart's copies of it and of the alert rules (manifests/charts/accord/files/).
monitoring:
	$(GO) run ./hack/monitoring

# The chart's values reference (manifests/charts/accord/README.md), generated from values.schema.json,
# and the defaults regions (part of `make generate`).
chart-docs:
	$(GO) run ./hack/chartdoc manifests/charts/accord
