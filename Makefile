# The event registration system: see README.md.
SERVICES      := auth users volunteers registrations
MODULES        = $(shell go list -m -f '{{.Dir}}' | sed "s|^$(CURDIR)|.|")
STATICCHECK   := honnef.co/go/tools/cmd/staticcheck@v0.8.2
VERSION       ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS       := -s -w -X github.com/eventreg/eventreg/libs/service.Version=$(VERSION)

.PHONY: help build test test-short lint run import images bench clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build every service binary into bin/
	@mkdir -p bin
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/ $(addprefix ./services/,$(SERVICES))

test: ## every test (unit, integration, end-to-end, short fuzzing); installs what is missing
	bash deploy/scripts/test.sh

test-short: ## unit tests only: nothing needs to run
	go test -short $(addsuffix /...,$(MODULES))

lint: ## gofmt, go vet, staticcheck
	@test -z "$$(gofmt -l $(MODULES))" || { gofmt -l $(MODULES); echo 'gofmt: files above need formatting'; exit 1; }
	go vet $(addsuffix /...,$(MODULES))
	go run $(STATICCHECK) $(addsuffix /...,$(MODULES))

run: ## run the whole system with demo data (Ctrl-C stops it)
	go run ./e2e/cmd/devstack $(ARGS)

import: ## load a fixture into the running system: make import FILE=path.json
	@test -n "$(FILE)" || { echo 'usage: make import FILE=path.json'; exit 2; }
	go run ./e2e/cmd/devstack import $(FILE)

IMAGE_TAG ?= dev
images: ## build the four service images ghcr.io/eventreg/eventreg-<svc>:$(IMAGE_TAG) (needs a Docker engine)
	@docker info >/dev/null 2>&1 || { echo 'make images needs a running Docker engine'; exit 1; }
	for s in $(SERVICES); do docker build -f deploy/docker/Dockerfile --target $$s --build-arg VERSION=$(VERSION) -t ghcr.io/eventreg/eventreg-$$s:$(IMAGE_TAG) . || exit 1; done

bench: ## the benchmark suite against the real binaries behind nginx; prints a report (bench/results/)
	go run ./bench/cmd/bench $(ARGS)

clean: ## remove build output and the local run's state (.run/)
	rm -rf bin .run
