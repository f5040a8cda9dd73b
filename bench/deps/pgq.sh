#!/usr/bin/env bash
# bench/deps/pgq.sh: make PgQ available to bench/pgq, or say why it is not.
#
# bench/pgq compares the route worker and the producers with PgQ. The throwaway cluster
# the bench harness starts uses the local PostgreSQL binaries (`pg_config --bindir`), so
# PgQ must be the Debian package for that same major version: postgresql-<major>-pgq3.
# When it is missing and this runs as root on a machine with apt-get, it installs it;
# otherwise it prints what to install and exits 0 (bench/pgq then skips with the same
# message: a benchmark that cannot run is reported, never faked).
set -u
if ! command -v pg_config >/dev/null 2>&1; then
  echo "bench/deps/pgq.sh: pg_config not found; bench/pgq will skip (apt-get install postgresql)"
  exit 0
fi
major=$(pg_config --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
pkg="postgresql-${major}-pgq3"
sharedir=$(pg_config --sharedir)
if [ -f "$sharedir/extension/pgq.control" ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "bench/deps/pgq.sh: PgQ is not installed; bench/pgq will skip (install ${pkg})"
  exit 0
fi
echo "bench/deps/pgq.sh: installing ${pkg} for bench/pgq"
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg"; }; then
  echo "bench/deps/pgq.sh: could not install ${pkg}; bench/pgq will skip"
fi
exit 0
