#!/usr/bin/env bash
# Stand-in for the official postgres image's entrypoint: the same contract (PGDATA,
# POSTGRES_PASSWORD/_USER/_DB, /docker-entrypoint-initdb.d/*.sql and *.sh run by a
# socket-only temporary server, `host all all all <password_encryption>` in pg_hba.conf,
# step-down from root to "postgres" with gosu).
set -Eeo pipefail
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}" "${POSTGRES_HOST_AUTH_METHOD:=}"
if [ "${1:0:1}" = '-' ]; then set -- postgres "$@"; fi
if [ "$1" = postgres ]; then
  if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA"; chmod 00700 "$PGDATA" || :
    mkdir -p /var/run/postgresql || :; chmod 03775 /var/run/postgresql || :
    find "$PGDATA" \! -user postgres -exec chown postgres '{}' +
    find /var/run/postgresql \! -user postgres -exec chown postgres '{}' +
    exec gosu postgres "${BASH_SOURCE[0]}" "$@"
  fi
  if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "$POSTGRES_PASSWORD" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != trust ]; then
      echo >&2 'Error: Database is uninitialized and superuser password is not specified.'; exit 1
    fi
    eval 'initdb --username="$POSTGRES_USER" --pwfile=<(printf "%s\n" "$POSTGRES_PASSWORD") '"${POSTGRES_INITDB_ARGS:-}"
    shift
    auth="$(postgres -C password_encryption "$@")"
    printf '\nhost all all all %s\n' "${POSTGRES_HOST_AUTH_METHOD:-$auth}" >> "$PGDATA/pg_hba.conf"
    export PGPASSWORD="${PGPASSWORD:-$POSTGRES_PASSWORD}"
    NOTIFY_SOCKET='' PGUSER="$POSTGRES_USER" pg_ctl -D "$PGDATA" -o "$(printf '%q ' "$@" -c listen_addresses='' -p "${PGPORT:-5432}")" -w start
    psqlrun() { PGHOST='' PGHOSTADDR='' psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc "$@"; }
    if [ -z "$(psqlrun --dbname postgres --set db="$POSTGRES_DB" --tuples-only <<<"SELECT 1 FROM pg_database WHERE datname = :'db';")" ]; then
      psqlrun --dbname postgres --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";'
    fi
    for f in /docker-entrypoint-initdb.d/*; do
      case "$f" in
        *.sh) if [ -x "$f" ]; then echo "$0: running $f"; "$f"; else echo "$0: sourcing $f"; # shellcheck disable=SC1090
              . "$f"; fi ;;
        *.sql) echo "$0: running $f"; psqlrun --dbname "$POSTGRES_DB" -f "$f" ;;
        *) [ -e "$f" ] && echo "$0: ignoring $f" ;;
      esac
    done
    PGUSER="$POSTGRES_USER" pg_ctl -D "$PGDATA" -m fast -w stop
    unset PGPASSWORD
    echo 'PostgreSQL init process complete; ready for start up.'
    set -- postgres "$@"
  fi
fi
exec "$@"
