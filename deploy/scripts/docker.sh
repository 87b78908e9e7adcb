#!/usr/bin/env bash
# docker.sh: makes sure a Docker engine, Compose v2 and buildx are there for the
# container tests (`make test-images`, `make test-compose`), then prints, as shell
# assignments, how to build and run the images on this machine:
#
#   eval "$(bash deploy/scripts/docker.sh)"
#
# - The engine: a running one is used; otherwise, as root on Debian, Debian's docker.io
#   is installed when missing and dockerd started in the background (log:
#   /var/log/eventreg-dockerd.log). Otherwise it says what to install and exits 1.
# - Compose v2 and buildx: the installed CLI plugins when they answer; otherwise built
#   from their Go modules into ~/.docker/cli-plugins (about 10 minutes on 2 cores, once).
# - The images: the official images when they are here or can be pulled; otherwise
#   (no registry) local stand-ins from deploy/standins/build.sh, and then it prints
#   COMPOSE_FILE with deploy/standins/compose.yaml and the GO_IMAGE/RUNTIME_IMAGE build
#   arguments. EVENTREG_STANDINS=1 (or 0) decides instead of trying a pull.
# Progress goes to stderr; stdout carries only the assignments.
set -Eeuo pipefail
cd "$(dirname "$0")/../.."
COMPOSE_VERSION=v2.40.3
BUILDX_VERSION=v0.38.2
PLUGINS=${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins
log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# --- the engine ----------------------------------------------------------------
engine() {
  docker info >/dev/null 2>&1 && return
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "no Docker engine answers; install and start one (Debian: apt-get install docker.io)" >&2
    return 1
  fi
  if ! command -v dockerd >/dev/null; then
    log "installing Debian's docker.io"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends docker.io iptables >/dev/null
  fi
  if ! docker info >/dev/null 2>&1; then
    log "starting dockerd (log: /var/log/eventreg-dockerd.log)"
    setsid dockerd >>/var/log/eventreg-dockerd.log 2>&1 </dev/null &
    for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && return; sleep 1; done
    tail -n 20 /var/log/eventreg-dockerd.log >&2
    echo "dockerd did not answer within 60 s" >&2
    return 1
  fi
}

# --- Compose v2 and buildx, from their Go modules ------------------------------
# `go install mod@version` refuses modules with replace or exclude directives (both
# have them), so each is built as the main module from a copy of its source. The
# version is linked in: compose refuses a buildx that reports none.
build_plugin() { # module version package output ldflags
  local mod=$1 ver=$2 pkg=$3 out=$4 ldflags=$5 dir src
  src=$(mktemp -d /tmp/eventreg-plugin.XXXXXX)
  dir=$(go mod download -json "$mod@$ver" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] || { echo "go mod download $mod@$ver failed" >&2; return 1; }
  cp -r "$dir/." "$src"; chmod -R u+w "$src"
  (cd "$src" && GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "$ldflags" -o "$out" "$pkg")
  rm -rf "$src"
}
plugins() {
  mkdir -p "$PLUGINS"
  if ! docker compose version >/dev/null 2>&1; then
    log "building docker compose $COMPOSE_VERSION from its Go module (once; several minutes)"
    build_plugin github.com/docker/compose/v2 "$COMPOSE_VERSION" ./cmd "$PLUGINS/docker-compose" \
      "-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION"
  fi
  if ! docker buildx version >/dev/null 2>&1; then
    log "building docker buildx $BUILDX_VERSION from its Go module (once; several minutes)"
    build_plugin github.com/docker/buildx "$BUILDX_VERSION" ./cmd/buildx "$PLUGINS/docker-buildx" \
      "-s -w -X github.com/docker/buildx/version.Version=$BUILDX_VERSION -X github.com/docker/buildx/version.Revision=eventreg"
  fi
  log "$(docker compose version), $(docker buildx version)"
}

# --- official images or stand-ins ----------------------------------------------
OFFICIAL=(postgres:17.6-alpine redis:7.4.6-alpine nginx:1.28.0 otel/opentelemetry-collector-contrib:0.137.0 jaegertracing/jaeger:2.11.0)
need_standins() {
  case "${EVENTREG_STANDINS:-}" in 1) return 0 ;; 0) return 1 ;; esac
  local img
  for img in "${OFFICIAL[@]}"; do
    docker image inspect "$img" >/dev/null 2>&1 && continue
    log "pulling $img"
    timeout 300 docker pull -q "$img" >/dev/null 2>&1 || { log "$img cannot be pulled here: using local stand-ins"; return 0; }
  done
  return 1
}

engine
plugins
if need_standins; then
  bash deploy/standins/build.sh >&2
  echo "export COMPOSE_FILE=docker-compose.yaml:deploy/standins/compose.yaml"
  echo "export GO_IMAGE=offline/golang:1.26.8-standin RUNTIME_IMAGE=offline/distroless-static:nonroot"
  echo "export EVENTREG_STANDINS=1"
else
  echo "export COMPOSE_FILE=docker-compose.yaml"
  echo "export EVENTREG_STANDINS=0"
fi
