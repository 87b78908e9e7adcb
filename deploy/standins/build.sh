#!/usr/bin/env bash
# build.sh: builds, on a machine with a Docker engine but no container registry, local
# stand-ins for every third-party image the project runs, from Debian's packages and Go
# modules only; images already present are kept (REBUILD=1 builds them again).
#
#   offline/debian:trixie                   debootstrap (minbase): the base of the others
#   offline/postgres:17-standin             postgres:17.6-alpine
#   offline/redis:7-standin                 redis:7.4.6-alpine
#   offline/nginx:1-standin                 nginx:1.28.0
#   offline/busybox:1-standin               busybox:1.37.0 (the chart's helm test pod)
#   offline/golang:1.26.8-standin           GO_IMAGE (golang:1.26.8-alpine)
#   offline/distroless-static:nonroot       RUNTIME_IMAGE (gcr.io/distroless/static-debian13:nonroot)
#   offline/otelcol-contrib:0.137.0-standin otel/opentelemetry-collector-contrib:0.137.0
#   offline/jaeger:2.11.0-standin           jaegertracing/jaeger:2.11.0 (query API, no UI assets)
#
# compose.yaml beside this file swaps them in for `make test-compose`. Each is the
# official image's contract (users and ids, entrypoint, paths), not its bytes: they
# exist only so the tests run where nothing can be pulled (docs/decisions/0088).
#
# usage: build.sh [NAME...]   (names: debian postgres redis nginx busybox golang
#                              distroless otelcol jaeger; default: all)
set -Eeuo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=${STANDINS_WORK:-/tmp/eventreg-standins}
GO_VERSION=1.26.8        # deploy/docker/Dockerfile's GO_VERSION
OTELCOL_VERSION=0.137.0  # docker-compose.yaml's collector
JAEGER_MODULE=v1.74.0    # Jaeger 2.11.0's Go module version
SUITE=trixie             # PostgreSQL 17, Redis 8.0, nginx 1.26 in Debian's packages
LABEL=eventreg.standin=true
MIRROR=${DEBIAN_MIRROR:-$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
  | sed -nE 's#^(URIs:[[:space:]]*|deb[[:space:]]+)(https?://[^[:space:]]+/debian)/?([[:space:]].*)?$#\2#p' | head -1 || true)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
mkdir -p "$WORK"

log() { printf '%s standins: %s\n' "$(date +%T)" "$*" >&2; }
have() { [ -z "${REBUILD:-}" ] && docker image inspect "$1" >/dev/null 2>&1; }
# the legacy builder: these Dockerfiles need nothing newer, and it works on any engine
build() { local tag=$1 dir=$2; shift 2
  DOCKER_BUILDKIT=0 docker build -q --label "$LABEL" -t "$tag" "$@" "$dir" >"$WORK/build.log" 2>&1 \
    || { tail -n 30 "$WORK/build.log" >&2; return 1; }; }
module_dir() { go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'; }

debian() {
  have offline/debian:$SUITE && return
  command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }
  local root=$WORK/rootfs
  rm -rf "$root"
  debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$root" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log" >&2; return 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import --change 'CMD ["bash"]' --change 'ENV LANG=C.UTF-8' \
    --change "LABEL $LABEL" - "offline/debian:$SUITE" >/dev/null
  rm -rf "$root"
}
postgres() { have offline/postgres:17-standin || build offline/postgres:17-standin "$HERE/postgres"; }
redis() { have offline/redis:7-standin || build offline/redis:7-standin "$HERE/redis"; }
nginx() { have offline/nginx:1-standin || build offline/nginx:1-standin "$HERE/nginx"; }
busybox() { have offline/busybox:1-standin || build offline/busybox:1-standin "$HERE/busybox"; }

golang() {
  have "offline/golang:$GO_VERSION-standin" && return
  local d=$WORK/golang dir
  dir=$(module_dir "golang.org/toolchain@v0.0.1-go$GO_VERSION.linux-amd64")
  rm -rf "$d"; mkdir -p "$d/extra-ca"; cp "$HERE/golang/Dockerfile" "$d/"
  cp -r "$dir" "$d/go"; chmod -R u+w "$d/go"
  chmod +x "$d"/go/bin/* "$d"/go/pkg/tool/*/*   # the module zip carries no exec bits
  # the machine's own CAs: a proxy in front of the module proxy may re-sign it
  cp /usr/local/share/ca-certificates/*.crt "$d/extra-ca/" 2>/dev/null || true
  build "offline/golang:$GO_VERSION-standin" "$d" --build-arg GO_VERSION=$GO_VERSION
  rm -rf "$d"
}

distroless() { # no label: the project's images would inherit it
  have offline/distroless-static:nonroot && return
  docker run --rm "offline/debian:$SUITE" sh -ec '
    apt-get update -qq >/dev/null; apt-get install -y -qq --no-install-recommends tzdata >/dev/null
    mkdir -p /out/etc/ssl/certs /out/tmp /out/home/nonroot /out/root /out/usr/share /out/var
    printf "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n" > /out/etc/passwd
    printf "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n" > /out/etc/group
    cp /etc/ssl/certs/ca-certificates.crt /out/etc/ssl/certs/
    cp -a /usr/share/zoneinfo /out/usr/share/
    chmod 1777 /out/tmp; chmod 0700 /out/root; chown 65532:65532 /out/home/nonroot
    tar -C /out -c .' | docker import \
      --change 'USER 65532:65532' --change 'WORKDIR /home/nonroot' \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
      - offline/distroless-static:nonroot >/dev/null
}

# a FROM-scratch layout: the binary, CA certificates, a passwd with user 10001, /tmp
scratch_rootfs() { local d=$1 user=$2
  mkdir -p "$d/etc/ssl/certs" "$d/tmp"
  docker run --rm "offline/debian:$SUITE" cat /etc/ssl/certs/ca-certificates.crt >"$d/etc/ssl/certs/ca-certificates.crt"
  printf 'root:x:0:0:root:/root:/sbin/nologin\n%s:x:10001:10001:%s:/:/sbin/nologin\n' "$user" "$user" >"$d/etc/passwd"
  chmod 1777 "$d/tmp"
}

otelcol() {
  have "offline/otelcol-contrib:$OTELCOL_VERSION-standin" && return
  local d=$WORK/otelcol
  rm -rf "$d"; mkdir -p "$d"
  # the checksum database does not know some collector modules
  export GONOSUMDB=go.opentelemetry.io,github.com/open-telemetry
  GOBIN=$WORK/bin go install "go.opentelemetry.io/collector/cmd/builder@v$OTELCOL_VERSION"
  sed "s/VERSION/$OTELCOL_VERSION/g" "$HERE/otelcol/builder-config.yaml" >"$d/builder-config.yaml"
  (cd "$d" && CGO_ENABLED=0 "$WORK/bin/builder" --config builder-config.yaml >"$WORK/otelcol-builder.log" 2>&1) \
    || { tail -30 "$WORK/otelcol-builder.log" >&2; return 1; }
  scratch_rootfs "$d/rootfs" otel
  cp "$d/out/otelcol-contrib" "$d/rootfs/otelcol-contrib"
  tar -C "$d/rootfs" --owner=0 --group=0 -c . | docker import --change "LABEL $LABEL" --change 'USER 10001' \
    --change 'ENTRYPOINT ["/otelcol-contrib"]' --change 'CMD ["--config", "/etc/otelcol-contrib/config.yaml"]' \
    --change 'EXPOSE 4317 4318 13133' - "offline/otelcol-contrib:$OTELCOL_VERSION-standin" >/dev/null
  rm -rf "$d"
}

jaeger() { # the real Jaeger, cmd/jaeger of its Go module; its go.mod has a replace
           # directive, so it is built as the main module from a copy of the source
  have offline/jaeger:2.11.0-standin && return
  local d=$WORK/jaeger src dir
  dir=$(module_dir "github.com/jaegertracing/jaeger@$JAEGER_MODULE")
  src=$WORK/src/jaeger@$JAEGER_MODULE
  [ -d "$src" ] || { mkdir -p "$WORK/src"; cp -r "$dir" "$src.tmp"; chmod -R u+w "$src.tmp"; mv "$src.tmp" "$src"; }
  rm -rf "$d"; mkdir -p "$d/rootfs/cmd/jaeger"
  scratch_rootfs "$d/rootfs" jaeger
  (cd "$src" && GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags '-s -w' \
    -o "$d/rootfs/cmd/jaeger/jaeger-linux" ./cmd/jaeger)
  cp "$src/cmd/jaeger/sampling-strategies.json" "$d/rootfs/cmd/jaeger/"
  tar -C "$d/rootfs" --owner=0 --group=0 -c . | docker import --change "LABEL $LABEL" --change 'ENV JAEGER_LISTEN_HOST=0.0.0.0' \
    --change 'USER 10001' --change 'VOLUME ["/tmp"]' --change 'ENTRYPOINT ["/cmd/jaeger/jaeger-linux"]' \
    --change 'EXPOSE 4317 4318 16686 13133' - offline/jaeger:2.11.0-standin >/dev/null
  rm -rf "$d"
}

docker info >/dev/null 2>&1 || { log "needs a running Docker engine"; exit 1; }
command -v go >/dev/null || { log "needs Go on PATH (the tools are built from Go modules)"; exit 1; }
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(debian postgres redis nginx busybox golang distroless otelcol jaeger)
for n in "${names[@]}"; do
  case "$n" in debian|postgres|redis|nginx|busybox|golang|distroless|otelcol|jaeger) ;;
    *) log "unknown stand-in $n"; exit 2 ;; esac
  t0=$SECONDS
  [ "$n" = debian ] || debian
  "$n"
  log "$n ready ($((SECONDS - t0)) s)"
done
