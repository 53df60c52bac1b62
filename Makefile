# Tessera — developer entry points. CI (.ci/run) runs `make test` and `make test-failover`, then
# `swift build -c release --static-swift-stdlib` (the container image's build), `make release-smoke` and
# `make test-containers`.

TESSERA_BUILD ?= debug
export TESSERA_BUILD
# Release binaries link the Swift runtime statically, as the container image does (deploy/Dockerfile).
BUILD_FLAGS = -c $(TESSERA_BUILD)$(if $(filter release,$(TESSERA_BUILD)), --static-swift-stdlib)

.PHONY: all build run test test-failover up down status fmt-check clean-stack cleanup-scale bench release-smoke \
	test-containers image

all: build

build:
	scripts/build-deps
	swift build $(BUILD_FLAGS)

## Foreground stack: install what is missing, build, start everything, Ctrl-C stops it.
run:
	scripts/stack run

## Build, unit and PostgreSQL tests, whole-stack tests (see scripts/test).
test:
	scripts/test

up:
	scripts/stack up

down:
	scripts/stack down

status:
	scripts/stack status

## The PostgreSQL failover test (issue 26): an HA stack of its own on port 29599 (TESSERA_PG_HA=1: a
## pg_auto_failover monitor and two nodes), three rounds of losing the primary's host under sign-ups,
## refreshes and password changes, then one between a password change's COMMIT and its answer (issue 37);
## writes test-artifacts/failover/failover.json (scripts/failover-test).
test-failover:
	scripts/build-deps
	swift build $(BUILD_FLAGS)
	scripts/test-venv
	scripts/failover-test --build $(TESSERA_BUILD)

## Scale test of the anonymous cleanup (not in `make test`): 100,000 due accounts in 100 tenants are
## swept on a stack of its own while sign-ins run; prints accounts/s and sign-in latency.
cleanup-scale:
	scripts/test-venv
	scripts/cleanup-scale --build $(TESSERA_BUILD)

## The release binaries (the container image's build) start as a stack of their own on port 29399,
## run their tasks on their event loops and answer a sign-up and a lookup (scripts/release-smoke).
release-smoke:
	scripts/build-deps
	swift build -c release --static-swift-stdlib
	scripts/release-smoke

## The container image (scripts/image: docker if installed, else podman with binaries built here) and its
## name; TESSERA_IMAGE_ARGS are scripts/image's options (e.g. --engine podman --tag tessera:1).
image:
	scripts/build-deps
	scripts/image $(TESSERA_IMAGE_ARGS)

## The image, deploy/compose.yaml and the Kubernetes manifests run with podman (issue 40): sign-ups,
## refreshes, sign-ins and admin calls, health checks and probes, restart policy (scripts/test-containers;
## installs podman, runc, debootstrap and podman-compose). TESSERA_BIN_DIR: release binaries already built.
test-containers:
	scripts/build-deps
	scripts/test-containers

## The benchmark of issue #8 (not in `make test`): release build, a release stack of its own on port
## 29099, every scenario with wrk; writes bench/results/<date>.{json,md} (docs/benchmarks.md).
bench:
	scripts/test-venv
	scripts/bench

## Lints with swift-format when the toolchain has it; otherwise says so and succeeds.
fmt-check:
	@if swift format --version >/dev/null 2>&1; then \
		swift format lint --strict --recursive --parallel Package.swift Shared Services Benchmarks Tests; \
	elif command -v swift-format >/dev/null 2>&1; then \
		swift-format lint --recursive --parallel Package.swift Shared Services Benchmarks Tests; \
	else \
		echo "swift-format not found; skipping fmt-check"; \
	fi

## Stops the default and the test stack, then deletes their directories (database, keys, logs).
clean-stack:
	TESSERA_STACK_DIR=.stack scripts/stack down
	TESSERA_STACK_DIR=.stack-test scripts/stack down
	rm -rf .stack .stack-test
