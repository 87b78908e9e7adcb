#!/usr/bin/env bash
# The test command (`make test`): installs what the tests need when it is
# missing, starts a throwaway PostgreSQL when none answers, then runs every
# test of every module: unit, integration and end-to-end.
#
#   make test                 everything
#   TEST_ARGS="-run Foo" make test
#   FUZZTIME=30s make test    longer fuzzing (default 5s per target)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
log() { printf '\033[1m==> %s\033[0m\n' "$*"; }

# --- 1. tools -----------------------------------------------------------------
bash deploy/scripts/needs.sh test
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1; }
export PATH="$PATH:/usr/sbin"

# --- 2. PostgreSQL ------------------------------------------------------------
pg_ready() { timeout 3 "$(pg_bin)/pg_isready" -q -d "$1" 2>/dev/null; }
if [ -z "${TEST_DATABASE_URL:-}" ]; then
  default="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
  if pg_ready "$default"; then
    export TEST_DATABASE_URL="$default"
  else
    log "no PostgreSQL on 127.0.0.1:5432: starting a throwaway one"
    pgdir=$(mktemp -d /tmp/eventreg-test-pg.XXXXXX)
    chmod 755 "$pgdir"
    runas=()
    if [ "$(id -u)" = 0 ]; then chown postgres: "$pgdir"; runas=(runuser -u postgres --); fi
    "${runas[@]}" "$(pg_bin)/initdb" -D "$pgdir/data" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
    "${runas[@]}" "$(pg_bin)/pg_ctl" -D "$pgdir/data" -l "$pgdir/log" -w \
      -o "-p 55432 -h 127.0.0.1 -k $pgdir -c fsync=off -c synchronous_commit=off -c max_connections=400" start >/dev/null
    trap '"${runas[@]}" "$(pg_bin)/pg_ctl" -D "$pgdir/data" -m immediate stop >/dev/null 2>&1; rm -rf "$pgdir"' EXIT
    export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable"
  fi
fi
log "PostgreSQL for tests: ${TEST_DATABASE_URL%%\?*}"

# --- 3. tests -----------------------------------------------------------------
mapfile -t modules < <(go list -m -f '{{.Dir}}')
patterns=()
for m in "${modules[@]}"; do
  rel=".${m#"$root"}"
  if [ -n "$(go list "$rel/..." 2>/dev/null)" ]; then patterns+=("$rel/..."); fi
done
log "go vet ${patterns[*]}"
go vet "${patterns[@]}"
log "go test ${patterns[*]}"
# shellcheck disable=SC2086
go test -count=1 -timeout 40m ${TEST_ARGS:-} "${patterns[@]}"

# --- 4. fuzzing (a short run of every fuzz target) ----------------------------
fuzztime=${FUZZTIME:-5s}
fuzzlog=$(mktemp) # not a trap: the EXIT trap above may stop a PostgreSQL it started
log "fuzzing each target for $fuzztime"
for m in "${patterns[@]}"; do
  while read -r pkg dir; do
    for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
      # A failing input is written under testdata/fuzz and fails the run. A
      # failure without one is the fuzzing engine's (a worker that did not
      # answer in time on a loaded machine): show it and try once more.
      ok=
      for attempt in 1 2; do
        if (cd "$dir" && go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" . >"$fuzzlog" 2>&1); then
          ok=1; break
        fi
        tail -n 30 "$fuzzlog" >&2
        if grep -q 'Failing input written to' "$fuzzlog"; then break; fi
        echo "fuzz target $pkg.$target: the engine failed without a failing input (attempt $attempt)" >&2
      done
      [ -n "$ok" ] || { echo "fuzz target $pkg.$target failed" >&2; rm -f "$fuzzlog"; exit 1; }
      echo "fuzz $pkg $target ok"
    done
  done < <(go list -f '{{.ImportPath}} {{.Dir}}' "$m")
done
rm -f "$fuzzlog"

# --- 5. containers: the images and docker compose, on a real Docker engine -----
if [ "${EVENTREG_SKIP_CONTAINERS:-}" = 1 ]; then
  log "container tests skipped (EVENTREG_SKIP_CONTAINERS=1)"
elif [ "$(id -u)" = 0 ] || docker info >/dev/null 2>&1; then
  log "container tests: the images, then docker compose"
  bash deploy/scripts/test-containers.sh all
else
  log "container tests skipped: no Docker engine answers and, not being root, this script cannot start one (make test-images, make test-compose)"
fi
log "all tests passed"
