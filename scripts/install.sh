#!/usr/bin/env bash
# install.sh - builds signalr-relay (Release) and installs it, with its sample config and systemd unit.
#
#   scripts/install.sh [--prefix DIR] [--sysconfdir DIR] [--no-systemd]
#
#   --prefix DIR      where binaries and data go (default /usr/local): DIR/bin/signalr-relay,
#                     DIR/bin/signalr-loadgen, DIR/share/signalr-relay/relay.json.example,
#                     DIR/share/doc/signalr-relay/
#   --sysconfdir DIR  where signalr-relay/relay.json goes (default /etc for the prefixes /usr and
#                     /usr/local, DIR/etc for any other prefix). An existing relay.json is kept.
#   --no-systemd      do not install the systemd unit
#   --help            this text
#   DESTDIR=DIR       (environment) stage everything under DIR, as packagers do; nothing is
#                     installed on this machine and systemd is not told
#
# The unit goes to PREFIX/lib/systemd/system for the prefixes /usr and /usr/local (both searched
# by systemd) and to /etc/systemd/system for any other. This script never enables or starts the
# service; it prints how to.
# On a fresh Debian machine run it as root or with sudo available: it installs the build
# dependencies through scripts/install-deps.sh. Running it again rebuilds what changed and
# reinstalls; it never overwrites relay.json.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
prefix=/usr/local
sysconfdir=
systemd=ON
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || { echo "install.sh: --prefix needs a directory" >&2; exit 2; }; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#*=}; shift ;;
    --sysconfdir) [ $# -ge 2 ] || { echo "install.sh: --sysconfdir needs a directory" >&2; exit 2; }; sysconfdir=$2; shift 2 ;;
    --sysconfdir=*) sysconfdir=${1#*=}; shift ;;
    --no-systemd) systemd=OFF; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$prefix" in /*) ;; *) prefix=$(pwd -P)/$prefix ;; esac
prefix=${prefix%/}; [ -n "$prefix" ] || prefix=/
case "$prefix" in
  /usr|/usr/local) : "${sysconfdir:=/etc}"; unit_dir=$prefix/lib/systemd/system ;;
  *) : "${sysconfdir:=$prefix/etc}"; unit_dir=/etc/systemd/system ;;
esac

# Root (or sudo) only where the destination is not writable by this user.
as_root=()
needs_root() {
  local d=$1
  while [ ! -e "$d" ]; do d=$(dirname "$d"); done
  [ ! -w "$d" ]
}
if [ "$(id -u)" -ne 0 ]; then
  dests=("$prefix" "$sysconfdir")
  [ "$systemd" = ON ] && dests+=("$unit_dir")
  for d in "${dests[@]}"; do
    if needs_root "$d"; then as_root=(sudo); break; fi
  done
fi

echo "install.sh: build dependencies"
scripts/install-deps.sh

build=$root/build/install
echo "install.sh: building Release in $build"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DCMAKE_INSTALL_SYSCONFDIR="$sysconfdir" -DSR_INSTALL_SYSTEMD="$systemd" -DSR_SYSTEMD_UNIT_DIR="$unit_dir" >/dev/null
nice cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target sr_installable >/dev/null

echo "install.sh: installing into ${DESTDIR:-}$prefix"
if [ -n "${DESTDIR:-}" ]; then
  as_root=()
  [ "$(id -u)" -eq 0 ] || ! needs_root "$DESTDIR" || as_root=(sudo)
fi
"${as_root[@]}" env DESTDIR="${DESTDIR:-}" cmake --install "$build"

config=$sysconfdir/signalr-relay/relay.json
echo
echo "signalr-relay $("$build/signalr-relay" --version | awk '{print $2}') is installed${DESTDIR:+ under $DESTDIR}:"
echo "  binary:  $prefix/bin/signalr-relay   (--help lists every flag; docs: $prefix/share/doc/signalr-relay/CONFIG.md)"
echo "  config:  $config   (sample with the defaults: $prefix/share/signalr-relay/relay.json.example)"
if [ "$systemd" = ON ]; then
  echo "  unit:    $unit_dir/signalr-relay.service"
  if [ -z "${DESTDIR:-}" ] && [ -d /run/systemd/system ]; then
    "${as_root[@]}" systemctl daemon-reload
  fi
  cat <<TXT

Next: point "hubs" in $config at your ASP.NET Core hubs, then
  systemctl enable --now signalr-relay     # start it now and at every boot
  journalctl -u signalr-relay -f           # its log
  systemctl restart signalr-relay          # after editing the config (there is no reload)
TXT
else
  cat <<TXT

Next: point "hubs" in $config at your ASP.NET Core hubs, then
  $prefix/bin/signalr-relay --config $config
TXT
fi
