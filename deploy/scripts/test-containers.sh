#!/usr/bin/env bash
# test-containers.sh images|compose|all: the container tests on a real Docker engine.
#   images   `make images`, then each image run as the chart and compose run it (TestImages)
#   compose  docker-compose.yaml brought up with `docker compose up --build --wait`,
#            driven through its gateway, taken down with `down -v` (TestCompose)
# deploy/scripts/docker.sh prepares the engine, Compose, buildx and, where nothing can
# be pulled, the stand-in images. Ends with one line: `<what>: N passed, M failed`.
set -Eeuo pipefail
cd "$(dirname "$0")/../.."
what=${1:-all}
case "$what" in images) run='^TestImages$' ;; compose) run='^TestCompose$' ;; all) run='^(TestImages|TestCompose)$' ;;
  *) echo "usage: $0 images|compose|all" >&2; exit 2 ;; esac
log() { printf '\033[1m==> %s\033[0m\n' "$*"; }

t0=$SECONDS
eval "$(bash deploy/scripts/docker.sh)"
export EVENTREG_TAG=${EVENTREG_TAG:-test} EVENTREG_TEST_CONTAINERS=1
log "tools and base images ready ($((SECONDS - t0)) s; stand-ins: $EVENTREG_STANDINS)"
t0=$SECONDS
# TestImages runs the images `make images` builds; TestCompose builds its own (`up --build`)
[ "$what" = compose ] || make --no-print-directory images IMAGE_TAG="$EVENTREG_TAG" GO_IMAGE="${GO_IMAGE:-}" RUNTIME_IMAGE="${RUNTIME_IMAGE:-}" >/tmp/eventreg-images-build.log 2>&1 \
  || { tail -n 40 /tmp/eventreg-images-build.log; echo "make images failed (log: /tmp/eventreg-images-build.log)" >&2; exit 1; }
[ "$what" = compose ] || log "the images built ($((SECONDS - t0)) s)"

out=$(mktemp)
set +e
(cd e2e && go test -count=1 -timeout 30m -v -run "$run" .) 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
set -e
passed=$(grep -cE '^\s*--- PASS' "$out" || true)
failed=$(grep -cE '^\s*--- FAIL' "$out" || true)
skipped=$(grep -cE '^\s*--- SKIP' "$out" || true)
rm -f "$out"
# the images a rebuild replaced (make images, then compose's own build), and only those
docker image prune -f --filter label=org.opencontainers.image.source=https://github.com/eventreg/eventreg >/dev/null || true
echo "containers ($what): $passed passed, $failed failed, $skipped skipped"
exit "$rc"
