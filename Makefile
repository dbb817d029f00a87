# placer — build, generate, test.
SHELL := /bin/bash
.DEFAULT_GOAL := build

K8S_VERSION  ?= v1.35.4
ETCD_VERSION ?= v3.6.5
KWOK_VERSION ?= v0.7.0
KARMADA_VERSION ?= v1.18.2

BIN      := $(CURDIR)/bin
K8S_BIN  := $(BIN)/k8s/$(K8S_VERSION)
KWOK_BIN := $(BIN)/kwok/$(KWOK_VERSION)
KARMADA_BIN := $(BIN)/karmada/$(KARMADA_VERSION)
export PLACER_BIN_DIR := $(BIN)

K8S_PKG := k8s.io/component-base/version
# The version ldflags of a Kubernetes binary: /version reports $(1).
k8s_minor   = $(word 2,$(subst ., ,$(1)))
k8s_ldflags = -s -w \
	-X $(K8S_PKG).gitVersion=$(1) \
	-X $(K8S_PKG).gitMajor=1 \
	-X $(K8S_PKG).gitMinor=$(call k8s_minor,$(1)) \
	-X $(K8S_PKG).gitTreeState=clean \
	-X $(K8S_PKG).buildDate=1970-01-01T00:00:00Z \
	-X k8s.io/client-go/pkg/version.gitVersion=$(1) \
	-X k8s.io/client-go/pkg/version.gitMajor=1 \
	-X k8s.io/client-go/pkg/version.gitMinor=$(call k8s_minor,$(1))
K8S_LDFLAGS := $(call k8s_ldflags,$(K8S_VERSION))

# Members of the other supported minor versions (cluster/local.KubernetesVersions),
# and of v1.34, which placer does not support (the tests see it refused),
# each built from a module of its own, hack/kube/1.MINOR: only what the
# tests' members of those versions run (kube-apiserver and
# kube-controller-manager; 'make bin/k8s/v1.37.2/kube-scheduler' builds more).
MEMBER_K8S_VERSIONS := v1.34.4 v1.36.3 v1.37.2
MEMBER_TOOLS := $(foreach v,$(MEMBER_K8S_VERSIONS),$(BIN)/k8s/$(v)/kube-apiserver $(BIN)/k8s/$(v)/kube-controller-manager)


K8S_TOOLS := $(K8S_BIN)/kube-apiserver $(K8S_BIN)/kube-controller-manager $(K8S_BIN)/kube-scheduler
TOOLS     := $(K8S_TOOLS) $(MEMBER_TOOLS) $(K8S_BIN)/etcd $(KWOK_BIN)/kwok

GO_TEST_FLAGS ?= -timeout 60m

.PHONY: build
build: tools bin/placer candidates ## Build placer, its other candidate schedulers and the local-cluster binaries.

# The version placer reports (placer version, --version); a release sets
# it (make release VERSION=v0.1.0), else git describes the checkout.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
PLACER_LDFLAGS := -X main.version=$(VERSION)

.PHONY: bin/placer
bin/placer:
	go build -ldflags "$(PLACER_LDFLAGS)" -o $@ ./cmd/placer

# The candidate schedulers built with other kube-scheduler minors
# (internal/skew.CandidateSchedulers), beside bin/placer as in the image:
# 'placer candidate-scheduler' starts the one a member's version needs.
# Built as the release builds them (release.BuildCandidate), so that the
# tests that build them again (the release's, the end-to-end TestMain)
# only link. They are placer's code: Go's cache decides what is stale.
CANDIDATE_VERSIONS := v1.37.2
CANDIDATES := $(foreach v,$(CANDIDATE_VERSIONS),bin/placer-candidate-1.$(call k8s_minor,$(v)))

.PHONY: candidates $(CANDIDATES)
candidates: $(CANDIDATES) ## Build placer's candidate schedulers of other kube-scheduler minors into bin/.
$(CANDIDATES):
	$(eval v := $(filter v1.$(subst bin/placer-candidate-1.,,$@).%,$(CANDIDATE_VERSIONS)))
	cd hack/candidate/$(subst bin/placer-candidate-,,$@) && CGO_ENABLED=0 go build -trimpath -tags kube$(subst bin/placer-candidate-,,$@) \
	  -ldflags "-s -w $(PLACER_LDFLAGS) -X $(K8S_PKG).gitVersion=$(v) -X $(K8S_PKG).gitMajor=1 -X $(K8S_PKG).gitMinor=$(call k8s_minor,$(v)) -X $(K8S_PKG).gitTreeState=clean -X $(K8S_PKG).buildDate=1970-01-01T00:00:00Z" \
	  -o $(CURDIR)/$@ github.com/placer-dev/placer/cmd/placer-candidate

.PHONY: tools
tools: $(TOOLS) ## Build kube-apiserver, kube-controller-manager, kube-scheduler (of each member version), etcd and kwok into bin/.

# Each binary is built once per version from the module versions pinned in go.mod.
$(K8S_BIN)/kube-%:
	@echo ">> building kube-$* $(K8S_VERSION) (first build takes a few minutes)"
	@mkdir -p $(K8S_BIN)
	go build -trimpath -ldflags "$(K8S_LDFLAGS)" -o $@.tmp k8s.io/kubernetes/cmd/kube-$* && mv $@.tmp $@

# Those of the other member versions, each from its own module.
define member_k8s
$(BIN)/k8s/$(1)/kube-%:
	@echo ">> building kube-$$* $(1) from hack/kube/1.$(call k8s_minor,$(1)) (first build takes a few minutes)"
	@mkdir -p $$(@D)
	cd hack/kube/1.$(call k8s_minor,$(1)) && go build -trimpath -ldflags "$(call k8s_ldflags,$(1))" -o $$@.tmp k8s.io/kubernetes/cmd/kube-$$* && mv $$@.tmp $$@
endef
$(foreach v,$(MEMBER_K8S_VERSIONS),$(eval $(call member_k8s,$(v))))

$(K8S_BIN)/etcd:
	@echo ">> building etcd $(ETCD_VERSION)"
	@mkdir -p $(K8S_BIN)
	go build -trimpath -ldflags "-s -w" -o $@.tmp go.etcd.io/etcd/server/v3 && mv $@.tmp $@

# Karmada's control plane, the benchmark's peer (make bench), built from the
# modules test/karmada pins; its CRDs beside the binaries. The tests need
# none of it.
KARMADA_TOOLS := $(addprefix $(KARMADA_BIN)/karmada-,aggregated-apiserver controller-manager scheduler webhook) $(KARMADA_BIN)/crds

.PHONY: karmada
karmada: $(KARMADA_TOOLS) ## Build Karmada's API server, controller manager, scheduler and webhook into bin/karmada/, for 'make bench'.

$(KARMADA_BIN)/karmada-%:
	@echo ">> building karmada-$* $(KARMADA_VERSION) (first build takes a few minutes)"
	@mkdir -p $(@D)
	@cd test/karmada && go mod tidy -diff >/dev/null || { echo "test/karmada is not tidy: cd test/karmada && go mod tidy"; exit 1; }
	cd test/karmada && go build -trimpath -ldflags "-s -w" -o $@.tmp github.com/karmada-io/karmada/cmd/$* && mv $@.tmp $@

$(KARMADA_BIN)/crds:
	@mkdir -p $@.tmp
	src=$$(cd test/karmada && go mod download -json github.com/karmada-io/karmada | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
	  find $$src/charts/karmada/_crds/bases -name '*.yaml' -exec cp {} $@.tmp/ \; && chmod -R u+w $@.tmp && mv $@.tmp $@

$(KWOK_BIN)/kwok:
	@echo ">> installing kwok $(KWOK_VERSION)"
	@mkdir -p $(KWOK_BIN)
	cd $(KWOK_BIN) && GOFLAGS= GOBIN=$(KWOK_BIN) go install sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)

.PHONY: generate
generate: ## Generate deepcopy, CRDs and RBAC with controller-gen.
	go tool controller-gen object paths=./apis/...
	go tool controller-gen crd:crdVersions=v1,generateEmbeddedObjectMeta=true paths=./apis/compute/... output:crd:artifacts:config=config/crd/management
	go tool controller-gen crd:crdVersions=v1,generateEmbeddedObjectMeta=true paths=./apis/multicluster/... output:crd:artifacts:config=config/crd/member
	@# The standard cluster inventory's ClusterProfile and PlacementDecision,
	@# from its module's types, for a management cluster that lacks them.
	go tool controller-gen crd:crdVersions=v1 paths=sigs.k8s.io/cluster-inventory-api/apis/v1alpha1 output:crd:artifacts:config=config/crd/inventory
	@# Kubernetes' own types keep their documentation with Kubernetes: with it
	@# the Workload CRD is too large for client-side 'kubectl apply'.
	go run ./hack/crdtrim -path spec.targetDeployment.template -path spec.targetDeployment.selector -path spec.targetDeployment.strategy -path spec.targetService config/crd/management/compute.placer.dev_workloads.yaml
	go run ./hack/crdtrim -path spec -path status config/crd/member/multicluster.placer.dev_podchaperons.yaml
	go tool controller-gen rbac:roleName=placer-manager paths=./controllers/... output:rbac:artifacts:config=config/rbac
	go tool controller-gen rbac:roleName=placer-agent paths=./member/agent output:rbac:artifacts:config=config/rbac/agent
	@# The Helm charts' CRDs and untemplated objects, from the kustomizations.
	go run ./hack/chartgen

GENERATED_FILES = apis/*/*/zz_generated.deepcopy.go config/crd/*/*.placer.dev_*.yaml config/crd/inventory/*.x-k8s.io_*.yaml config/rbac/role.yaml config/rbac/agent/role.yaml charts/*/crds/*.yaml charts/*/templates/zz_generated.yaml
GENERATED = $(shell ls $(GENERATED_FILES) 2>/dev/null)

.PHONY: verify-generate
verify-generate: ## Fail when generated files are stale.
	@before=$$(cat $(GENERATED) | sha256sum); \
	$(MAKE) --no-print-directory generate >/dev/null; \
	after=$$(cat $$(ls $(GENERATED_FILES)) | sha256sum); \
	if [ "$$before" != "$$after" ]; then echo "generated files were stale: 'make generate' updated them; commit the result"; exit 1; fi

.PHONY: vet
vet: ## gofmt and go vet.
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	go vet ./...
	@# The modules of other Kubernetes versions (placer's own go.mod feeds
	@# hack/candidate's): tidy, or their builds fail on a missing go.sum line.
	@for m in $(dir $(wildcard hack/kube/*/go.mod hack/candidate/*/go.mod)); do \
	  (cd $$m && go mod tidy -diff >/dev/null) || { echo "$$m is not tidy: cd $$m && go mod tidy"; exit 1; }; done

# The CLI is released for macOS and Windows too (make release): every
# package must build there, though the tests run on Linux.
CROSS_PLATFORMS ?= darwin/arm64 windows/amd64

.PHONY: cross
cross: ## Build every package for macOS and Windows.
	@for p in $(CROSS_PLATFORMS); do echo ">> go build ./... for $$p"; CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} go build -trimpath ./... || exit 1; done

.PHONY: test
# LONG_TESTS wait for something real that takes long and uses little CPU
# (a member token's expiry: ten minutes, the TokenRequest API's shortest):
# they run beside the others, which skip them, not after them; alone they
# run only with PLACER_LONG_TESTS=1.
LONG_TESTS := ^TestTokenRenewedAcrossExpiry$$
LONG_TEST_PKGS := ./controllers/cluster

test: tools candidates verify-generate vet cross ## Unit, controller and end-to-end tests.
	@long=$$(mktemp); \
	PLACER_LONG_TESTS=1 go test $(GO_TEST_FLAGS) -run '$(LONG_TESTS)' $(LONG_TEST_PKGS) > $$long 2>&1 & pid=$$!; \
	go test $(GO_TEST_FLAGS) -skip '$(LONG_TESTS)' ./...; rc=$$?; \
	wait $$pid; lrc=$$?; echo ">> $(LONG_TESTS) in $(LONG_TEST_PKGS):"; cat $$long; rm -f $$long; \
	[ $$rc -eq 0 ] && [ $$lrc -eq 0 ]

# BENCH_FLAGS for the end-to-end benchmark, e.g. BENCH_FLAGS="-nodes 100 -workloads 200".
BENCH_FLAGS ?=

.PHONY: bench
bench: tools bin/placer karmada ## Scheduling-cycle microbenchmarks, then the end-to-end benchmark against the single-cluster baselines and Karmada (results in _output/bench).
	go test -run '^$$' -bench . -benchtime 2s -count 1 ./scheduler/...
	go run ./test/bench -bin-dir $(BIN) -placer bin/placer -karmada $(BENCH_FLAGS)

.PHONY: sandbox
sandbox: tools bin/placer ## Start a management cluster and 3 members, run placer, apply examples/ and print where each landed.
	bin/placer sandbox --bin-dir $(BIN) $(SANDBOX_FLAGS)

# A release, into _output/release/$(VERSION): the CLI for linux, darwin and
# windows on amd64 and arm64 (archives and a krew manifest), the image for
# linux/amd64 and linux/arm64 as an OCI layout (no container engine), the
# manifests pinned to the image's digest, an SPDX SBOM and the checksums.
# VERSION must be a semantic version: make release VERSION=v0.1.0;
# RELEASE_FLAGS=--repository=registry.example.com/placer names your registry.
.PHONY: release
release: ## Build a release (VERSION=vX.Y.Z) into _output/release/VERSION; publishes nothing.
	go run ./hack/release -version $(VERSION) $(RELEASE_FLAGS)

.PHONY: clean
clean:
	rm -rf bin/placer
