# The event registration system: see README.md.
SERVICES      := auth users volunteers registrations dealers
MODULES        = $(shell go list -m -f '{{.Dir}}' | sed "s|^$(CURDIR)|.|")
STATICCHECK   := honnef.co/go/tools/cmd/staticcheck@v0.8.2
VERSION       ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS       := -s -w -X github.com/eventreg/eventreg/libs/service.Version=$(VERSION)

.PHONY: help build test test-short test-cluster lint endpoint-check run import images bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build every service binary into bin/
	@mkdir -p bin
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/ $(addprefix ./services/,$(SERVICES))

test: ## every test (unit, integration, end-to-end, short fuzzing); installs what is missing
	bash deploy/scripts/test.sh

test-images: ## run each service image as the chart runs it (Docker engine; builds what is missing)
	bash deploy/scripts/test-containers.sh images

test-compose: ## docker-compose.yaml up for real, driven through its gateway, then down -v
	bash deploy/scripts/test-containers.sh compose

test-short: ## unit tests only: nothing needs to run
	go test -short $(addsuffix /...,$(MODULES))

test-cluster: ## the Helm chart on a real cluster (KUBECONFIG, EVENTREG_LOAD_IMAGE; docs/deployment.md)
	bash deploy/scripts/test-cluster.sh

lint: ## gofmt, go vet, staticcheck
	@test -z "$$(gofmt -l $(MODULES))" || { gofmt -l $(MODULES); echo 'gofmt: files above need formatting'; exit 1; }
	go vet $(addsuffix /...,$(MODULES))
	go run $(STATICCHECK) $(addsuffix /...,$(MODULES))

# the packages whose TestEndpointChecklist hands libs/testkit/routecheck the routes server.Mount registers
ENDPOINT_TESTS = $(sort $(dir $(shell grep -rl --include='*_test.go' 'routecheck\.Check' services)))
endpoint-check: ## for every route a service registers, the places that lack it (docs/architecture.md#adding-an-endpoint; PostgreSQL and Redis as for the integration tests)
	go test -count=1 -run '^TestEndpointChecklist$$' $(addprefix ./,$(ENDPOINT_TESTS))

run: ## run the whole system with demo data (Ctrl-C stops it); installs what is missing when root
	@bash deploy/scripts/needs.sh run
	go run ./e2e/cmd/devstack $(ARGS)

import: ## load a fixture into the running system: make import FILE=path.json
	@test -n "$(FILE)" || { echo 'usage: make import FILE=path.json'; exit 2; }
	go run ./e2e/cmd/devstack import $(FILE)

IMAGE_TAG ?= dev
# base images (deploy/docker/Dockerfile): empty keeps the Dockerfile's defaults; a machine
# without a registry names the stand-ins `deploy/standins/build.sh` makes
GO_IMAGE      ?=
RUNTIME_IMAGE ?=
IMAGE_ARGS     = --build-arg VERSION=$(VERSION) $(if $(GO_IMAGE),--build-arg GO_IMAGE=$(GO_IMAGE)) $(if $(RUNTIME_IMAGE),--build-arg RUNTIME_IMAGE=$(RUNTIME_IMAGE))
images: ## build the five service images ghcr.io/eventreg/eventreg-<svc>:$(IMAGE_TAG) (needs a Docker engine with BuildKit)
	@docker info >/dev/null 2>&1 || { echo 'make images needs a running Docker engine'; exit 1; }
	for s in $(SERVICES); do DOCKER_BUILDKIT=1 docker build -f deploy/docker/Dockerfile --target $$s $(IMAGE_ARGS) -t ghcr.io/eventreg/eventreg-$$s:$(IMAGE_TAG) . || exit 1; done

bench: ## the benchmark suite against the real binaries behind nginx; prints a report (bench/results/)
	go run ./bench/cmd/bench $(ARGS)

clean: ## remove build output and the local run's state (.run/)
	rm -rf bin .run
