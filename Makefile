# The targets the README and .ci/run use. Binaries are static (CGO_ENABLED=0)
# so the same codingagent runs on the host and in the image.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/codeagent/codeagent/internal/cmdutil.version=$(VERSION)
GOFILES := $(shell git ls-files '*.go' 2>/dev/null | grep -v /testdata/)

# golangci-lint is built from the Go module proxy into a cache outside the
# checkout, once per version.
GOLANGCI_VERSION ?= v2.15.0
TOOLS_DIR        ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/codeagent/tools
GOLANGCI         := $(TOOLS_DIR)/golangci-lint-$(GOLANGCI_VERSION)/golangci-lint

.PHONY: build test test-short fmt vet lint bench docs screenshot e2e e2e-k8s image test-images clean

# Containers run Linux: on any other host (macOS, Windows) the codingagent
# they run is cross-built into bin/linux-<arch>/, where planagent looks first.
HOSTOS   := $(shell $(GO) env GOOS)
HOSTARCH := $(shell $(GO) env GOARCH)

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/planagent ./planagent
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/codingagent ./codingagent
ifneq ($(HOSTOS),linux)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(HOSTARCH) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/linux-$(HOSTARCH)/codingagent ./codingagent
endif

# gofmt alone: the first step of test and of vet.
fmt:
	@echo "== gofmt -l"
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt: not formatted:"; echo "$$out"; exit 1; fi

# gofmt and go vet for this host.
vet: fmt
	@echo "== go vet -tags $(TESTTAGS) ./..."
	$(GO) vet -tags $(TESTTAGS) ./...

# vet, then what the README's test command leaves to CI (.ci/run runs lint
# before test): vet with the e2e tag, vet for macOS, where planagent runs on
# the host (the build broke there once, unseen, on Linux-only stat fields;
# it recompiles every dependency for darwin, half an hour on a busy 2-core
# machine), and golangci-lint with .golangci.yml (staticcheck, errorlint,
# unparam, unused, ineffassign, usetesting).
lint: vet $(GOLANGCI)
	@echo "== go vet -tags e2e,$(TESTTAGS) ./..."
	$(GO) vet -tags e2e,$(TESTTAGS) ./...
	@echo "== GOOS=darwin go vet ./..."
	GOOS=darwin $(GO) vet ./...
	@echo "== golangci-lint run ./..."
	$(GOLANGCI) run ./...

$(GOLANGCI):
	GOBIN=$(dir $@) GOFLAGS=-buildvcs=false $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)

# Linking the ~50 test binaries writes over a gigabyte: into a RAM disk when
# there is one with room (on this project's virtual disk that is a fifth of
# the short suite's time); elsewhere go's default.
SHMTMP  := $(shell avail=$$(df -Pk /dev/shm 2>/dev/null | awk 'NR==2 {print $$4}'); [ -w /dev/shm ] && [ "$${avail:-0}" -gt 4194304 ] && echo /dev/shm)
TESTENV := $(if $(SHMTMP),GOTMPDIR=$(SHMTMP))

# Build tags of tests that the edit-test loop leaves out and make test runs.
TESTTAGS := clientgo

# The README's test command: gofmt, then every test that needs no engine,
# cluster or built binaries, with the race detector. -vet=all runs all of go
# vet's checks on each package as go test builds it: a separate go vet ./...
# compiled everything a second time (5 of 17 minutes on a 2-core machine
# without a build cache). The vets of the packages without tests, with the
# e2e tag and for macOS are in lint.
test: fmt
	@echo "== go test -race -vet=all -tags $(TESTTAGS) ./... (every package; each prints ok or FAIL when it ends)"
	$(TESTENV) $(GO) test -race -vet=all -count=1 -tags $(TESTTAGS) ./...

# The edit-test loop: without the slow tests (testing.Short: the git-heavy
# checkpoint tests, the orchestrator's real-checkpoint scenarios whose
# decisions its pure tests check) and without the tests behind TESTTAGS (clientgo: the
# Kubernetes runtime's tests against client-go's clientsets, whose typed
# fakes are most of the runtime test binary's build).
test-short:
	$(TESTENV) $(GO) test -short ./...

bench:
	scripts/bench.sh

# The generated docs: the command reference (docs/reference/*.md, man pages
# in docs/man/) from the cobra commands, and the settings table of
# docs/configuration.md from the config table. TestDocsCurrent in each
# program's cli package regenerates into a temporary dir and fails when
# these are stale.
docs:
	$(GO) run ./planagent/internal/gendocs docs
	$(GO) run ./codingagent/internal/gendocs docs

# The README's picture: the web view of a live run, as the browser test
# (TestE2EViewWebPageLive, headless Chromium) sees it.
screenshot:
	mkdir -p docs/images
	CODEAGENT_E2E=1 CODEAGENT_SCREENSHOT=$(CURDIR)/docs/images/web-view.png $(GO) test -tags e2e -count=1 -timeout 30m -run 'TestE2EViewWebPageLive$$' ./planagent/

# End-to-end tests: planagent and codingagent built and run as subprocesses,
# and the real Docker engine (built images, containers, compose).
e2e: image test-images
	CODEAGENT_E2E=1 CODEAGENT_REQUIRE_DOCKER=1 $(GO) test -tags e2e -race -count=1 -timeout 15m -run 'E2E|Docker' ./...

# End-to-end tests of --runtime kubernetes on a real single-node cluster that
# scripts/k8s-cluster.sh brings up (and takes down) for the test binary.
e2e-k8s: image
	CODEAGENT_E2E=1 CODEAGENT_K8S=1 $(GO) test -tags e2e -count=1 -timeout 15m -run 'E2EKube' ./planagent/

image:
	scripts/image.sh

# Images without codingagent (busybox only; busybox plus the host's Go) that
# the runtime tests run agents and acceptance commands in.
test-images:
	scripts/test-images.sh

clean:
	rm -rf bin bench.out
