#!/usr/bin/env bash
# needs.sh PURPOSE: installs, from Debian's packages, what `make run` (PURPOSE=run) or
# `make test` (PURPOSE=test) needs and the machine lacks, when root on Debian; otherwise
# it names the packages and stops. Sourced or run; Go must already be on PATH.
set -euo pipefail
purpose=${1:-run}
# shellcheck disable=SC2012
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1; }
command -v go >/dev/null || { echo "Go is required (https://go.dev/dl/); it is not on PATH" >&2; exit 1; }
missing=()
# PostgreSQL: make run uses the server on 127.0.0.1:5432 when one answers, else starts its own
[ -n "$(pg_bin)" ] || command -v initdb >/dev/null || missing+=(postgresql)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
if [ "$purpose" = test ]; then
  command -v chromium >/dev/null || [ -x /usr/bin/chromium ] || missing+=(chromium)
  command -v wrk >/dev/null || missing+=(wrk)
  # e2e TestConCatWebhooks runs a webhook receiver in Node with the jose package (npm ci)
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
  # actionlint runs it on the release workflow; deploy/deploytest on the helm test script
  command -v shellcheck >/dev/null || missing+=(shellcheck)
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  printf '\033[1m==> installing %s from Debian'"'"'s packages\033[0m\n' "${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts the freshly installed servers; make run and the tests start their own.
else
  echo "missing: ${missing[*]}" >&2
  echo "install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
