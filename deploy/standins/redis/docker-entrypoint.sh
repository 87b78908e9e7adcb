#!/bin/sh
# Stand-in for the official redis image's entrypoint: own /data, step down to "redis";
# protected mode off, which the official image compiles in as the default (Debian's does not).
set -e
case "$1" in -*|*.conf) set -- redis-server "$@" ;; esac
if [ "$1" = redis-server ] && [ "$(id -u)" = 0 ]; then
  find . \! -user redis -exec chown redis '{}' +
  exec gosu redis "$0" "$@"
fi
if [ "$1" = redis-server ]; then
  case " $* " in *" --protected-mode "*) ;; *) set -- "$@" --protected-mode no ;; esac
fi
umask 0077
exec "$@"
