#!/bin/sh
# systemd.sh BINARY UNIT... — checks systemd units with the tools operators use:
#   systemd-analyze verify                       (syntax, directives, the ExecStart binary)
#   systemd-analyze security --offline=true      overall exposure at most 2.0 per service
# Works without a running systemd (a container, CI). verify wants ExecStart's binary to
# exist, so each unit is checked as a copy whose /usr/local/bin/iu-runner is BINARY;
# nothing else is changed.
set -eu
bin=$1; shift
[ -x "$bin" ] || { echo "systemd.sh: $bin is not an executable" >&2; exit 2; }
command -v systemd-analyze >/dev/null || { echo "systemd.sh: systemd-analyze not found (apt-get install systemd)" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for u in "$@"; do
  sed "s|/usr/local/bin/iu-runner|$bin|g" "$u" > "$tmp/$(basename "$u")"
done
rc=0
systemd-analyze verify "$tmp"/* || { echo "systemd.sh: systemd-analyze verify failed" >&2; rc=1; }
for u in "$tmp"/*.service; do
  [ -e "$u" ] || continue
  # --threshold is in tenths of the displayed score: 20 = 2.0
  if ! out=$(systemd-analyze security --offline=true --threshold=20 "$u" 2>&1); then
    echo "systemd.sh: $(basename "$u"): exposure above 2.0; $(echo "$out" | grep -c '^✗') checks open (systemd-analyze security --offline=true $(basename "$u") lists them)" >&2
    rc=1
  fi
  echo "$out" | grep 'Overall exposure'
done
exit $rc
