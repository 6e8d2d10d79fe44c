# ns-doctor: `make demo` and `make test` are the two commands README.md starts with.
SHELL := /bin/bash
GO ?= go
PKG := github.com/ns-doctor/ns-doctor
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -s -w -X $(PKG)/internal/version.version=$(VERSION) -X $(PKG)/internal/version.commit=$(COMMIT) -X $(PKG)/internal/version.date=$(DATE)
CLUSTER_DIR := $(CURDIR)/.cache/cluster

.PHONY: build controlplane test unit test-versions lint fuzz bench demo cluster cluster-down release-check clean

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/kubectl-ns_doctor ./cmd/kubectl-ns_doctor

controlplane:
	@bash hack/build-controlplane.sh

# All tests, unit and against the real control plane, then a bounded fuzz
# run of every parser of outside input. goreleaser is installed first (test/
# distribution would do it too), Prometheus (test/monitoring and
# test/support/prometheus), krew, and the MCP Inspector from npm (test/mcp):
# a cold install takes minutes, which should not count against the test
# timeout or compete with the other packages. Then rescue's hold again with
# kube-controller-manager under its own user name rather than the
# controllers' service accounts: the hold matches both (docs/rescue.md).
test: lint
	@bin_dir=$$(bash hack/build-controlplane.sh) && bash hack/install-goreleaser.sh >/dev/null && \
	bash hack/install-prometheus.sh >/dev/null && bash hack/install-krew.sh >/dev/null && \
	bash hack/install-inspector.sh >/dev/null && \
	NSDOCTOR_CONTROLPLANE_BIN=$$bin_dir $(GO) test -count=1 -timeout 40m ./... && \
	echo "== test/rescue's hold with kube-controller-manager as system:kube-controller-manager (no --use-service-account-credentials)" && \
	NSDOCTOR_CONTROLPLANE_BIN=$$bin_dir NSDOCTOR_KCM_CREDENTIALS=user $(GO) test -count=1 -timeout 10m \
	  -run 'TestRescueHoldsTheNamespaceTheControllerIsDeleting|TestWhatAPolicySeesOfTheControllers|TestRescueKilledBetweenHoldAndSave' ./test/rescue
	@$(MAKE) --no-print-directory fuzz

# Every fast test, no control plane (under two minutes), then the unit
# coverage floors (hack/unit.sh).
unit:
	@bash hack/unit.sh

# The oracle tests (test/oracle) and rescue's (test/rescue: the window
# ordered deletion leaves, or not) against the namespace controller of each
# Kubernetes version the test bed builds, one after another: MINOR or
# MINOR:FEATURE_GATES (docs/compatibility.md). Cold, each version's build
# takes about 10 minutes on 2 cores; warm, each run about 2. 1.38
# (hack/controlplane/1.38, v1.38.0-beta.0) is not listed: the module proxy
# does not serve two of its staging modules (docs/compatibility.md).
ORACLE_VERSIONS ?= 1.33:OrderedNamespaceDeletion=false 1.33 1.34 1.35 1.36 1.37
VERSION_PACKAGES ?= ./test/oracle ./test/rescue
test-versions:
	@set -e; for v in $(ORACLE_VERSIONS); do \
	  minor=$${v%%:*}; gates=""; [ "$$v" = "$$minor" ] || gates=$${v#*:}; \
	  echo "== $(VERSION_PACKAGES) on Kubernetes $$minor $${gates:+with --feature-gates=$$gates}"; \
	  bash hack/build-controlplane.sh $$minor >/dev/null; \
	  NSDOCTOR_K8S=$$minor NSDOCTOR_KCM_FEATURE_GATES=$$gates $(GO) test -count=1 -timeout 20m $(VERSION_PACKAGES); \
	done

# gofmt over every file, golangci-lint (pinned; go vet, staticcheck,
# errcheck, unused, ineffassign: .golangci.yml) over every package, then
# actionlint (pinned) over .github/workflows.
lint:
	@unformatted=$$(gofmt -l cmd internal test hack); \
	if [ -n "$$unformatted" ]; then echo "gofmt -w these files: $$unformatted"; exit 1; fi
	@lint=$$(bash hack/install-golangci-lint.sh) && $$lint run ./...
	@actionlint=$$(bash hack/install-actionlint.sh) && $$actionlint -color=false

# Each fuzz target with a budget of executions, sized to about 10 s here
# (2 cores). A count, not a duration: with -fuzztime=10s Go 1.26's
# coordinator can report its own deadline as the target's failure
# ("context deadline exceeded", no input written; golang/go#75804, fixed in
# Go 1.27), which failed CI once. FUZZTIME=30s (or 5000x) overrides every
# budget.
FUZZ_TARGETS := FuzzRun:./internal/cli:8000 FuzzReappliable:./internal/backup:150000 \
	FuzzDiscover:./internal/kube:2000 FuzzMatchRules:./internal/diagnose:12000 \
	FuzzHumanPrinter:./internal/printer:1500 FuzzClassifyMessage:./internal/apierror:20000
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  name=$${t%%:*}; rest=$${t#*:}; pkg=$${rest%%:*}; budget=$${FUZZTIME:-$${rest#*:}x}; \
	  echo "$(GO) test -run '^$$' -fuzz '^$$name$$' -fuzztime $$budget $$pkg"; \
	  $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$budget $$pkg; \
	done

# Benchmarks on the local control plane (about 50 min on 2 cores, the 1,000-namespace
# phases purge-1000 and watch and the guard's included); writes docs/benchmarks.json and renders
# docs/benchmarks.md from it. BENCH_FLAGS='-sizes small,medium' skips the large fixture;
# BENCH_FLAGS='-sizes small -scale 0.1 -runs 1' runs every phase once, small (~10 min);
# BENCH_FLAGS='-phases rescue' runs one phase and merges it into docs/benchmarks.json (the
# other phases' results kept, the new section marked with its own run).
bench:
	@bin_dir=$$(bash hack/build-controlplane.sh) && \
	NSDOCTOR_CONTROLPLANE_BIN=$$bin_dir $(GO) run ./hack/bench -out docs/benchmarks.md $(BENCH_FLAGS)

# Builds everything, starts a control plane, makes a stuck namespace and
# explains it through the real kubectl, then tears down.
demo: build
	@bin_dir=$$(bash hack/build-controlplane.sh) && \
	NSDOCTOR_CONTROLPLANE_BIN=$$bin_dir $(GO) run ./hack/demo -plugin-dir bin

# A control plane for humans, in the background; `make cluster-down` stops it.
cluster:
	@mkdir -p $(CLUSTER_DIR) && rm -f $(CLUSTER_DIR)/kubeconfig && \
	bin_dir=$$(bash hack/build-controlplane.sh) && $(GO) build -o $(CLUSTER_DIR)/cluster ./hack/cluster && \
	(NSDOCTOR_CONTROLPLANE_BIN=$$bin_dir nohup $(CLUSTER_DIR)/cluster -kubeconfig $(CLUSTER_DIR)/kubeconfig \
		> $(CLUSTER_DIR)/cluster.log 2>&1 & echo $$! > $(CLUSTER_DIR)/pid) && \
	for i in $$(seq 1 120); do [ -s $(CLUSTER_DIR)/kubeconfig ] && break; sleep 0.5; done; \
	if [ -s $(CLUSTER_DIR)/kubeconfig ]; then echo "export KUBECONFIG=$(CLUSTER_DIR)/kubeconfig"; \
	else echo "cluster did not start, see $(CLUSTER_DIR)/cluster.log" >&2; exit 1; fi

cluster-down:
	@if [ -f $(CLUSTER_DIR)/pid ]; then kill $$(cat $(CLUSTER_DIR)/pid) 2>/dev/null || true; \
	while kill -0 $$(cat $(CLUSTER_DIR)/pid) 2>/dev/null; do sleep 0.2; done; rm -f $(CLUSTER_DIR)/pid $(CLUSTER_DIR)/kubeconfig; fi

# goreleaser v2 at the pinned version (hack/install-goreleaser.sh): the
# config, then the six archives and checksums.txt in dist/ (`release
# --snapshot` publishes nothing). Then test/distribution's snapshot test
# over every platform (NSDOCTOR_RELEASE_MATRIX=all): each platform of the
# krew manifest has its archive and checksum, krew-index's validator
# installs them all, and the real krew installs each one. `make test` runs
# that test on two platforms only: this machine's and windows.
release-check:
	@gr=$$(bash hack/install-goreleaser.sh) && $$gr check && $$gr release --snapshot --clean --skip=docker
	@bin_dir=$$(bash hack/build-controlplane.sh) && bash hack/install-krew.sh >/dev/null && \
	NSDOCTOR_CONTROLPLANE_BIN=$$bin_dir NSDOCTOR_RELEASE_MATRIX=all $(GO) test -count=1 -timeout 60m -run '^TestSnapshotInstallsLikeKrew$$' ./test/distribution

clean:
	rm -rf bin dist
