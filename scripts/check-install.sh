#!/usr/bin/env bash
# check-install.sh - `cmake --install` of an existing build into temporary directories, checked.
#
#   scripts/check-install.sh [BUILD_DIR]     (default build/release; built first if it has no relay)
#
# Installs BUILD_DIR into a temporary prefix (and once more under a temporary DESTDIR with prefix
# /usr/local) and checks: the binaries, the sample config, the starting config (mode 0640, kept
# when installing again), the docs and the systemd unit are where docs/CONFIG.md says; the
# installed relay answers --version and --help and starts from the installed config (it serves
# /metrics, then stops cleanly on SIGTERM); the unit has the hardening settings, points at the
# installed binary and config, has an ExecReload exactly when the relay handles SIGHUP, and
# passes a plain syntax check and, where systemd-analyze exists, `systemd-analyze verify`.
# Touches nothing outside its temporary directory; enables and starts no service. ~5 s.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
build=${1:-$root/build/release}
if [ ! -x "$build/signalr-relay" ]; then
  echo "check-install: building $build" >&2
  nice cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  nice cmake --build "$build" -j2 --target sr_installable >/dev/null
fi

tmp=$(mktemp -d)
relay_pid=
cleanup() {
  [ -n "$relay_pid" ] && kill -KILL "$relay_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
fail() { echo "check-install: FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "check-install: ok: $*"; }

# --- install into a prefix ---------------------------------------------------------------------------
p=$tmp/prefix
cmake --install "$build" --prefix "$p" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; exit 1; }
unit=$p/lib/systemd/system/signalr-relay.service
conf=$p/etc/signalr-relay/relay.json
for f in bin/signalr-relay share/signalr-relay/relay.json.example etc/signalr-relay/relay.json \
         lib/systemd/system/signalr-relay.service share/doc/signalr-relay/CONFIG.md \
         share/doc/signalr-relay/README.md share/doc/signalr-relay/LICENSE; do
  [ -f "$p/$f" ] || fail "$f was not installed"
done
[ -x "$p/bin/signalr-relay" ] || fail "bin/signalr-relay is not executable"
for tool in signalr-loadgen signalr-replay; do
  if [ -x "$build/$tool" ] || [ -x "$build/tests/bench/loadgen/$tool" ]; then
    [ -x "$p/bin/$tool" ] || fail "bin/$tool was built but not installed"
  fi
done
[ "$(stat -c %a "$conf")" = 640 ] || fail "etc/signalr-relay/relay.json has mode $(stat -c %a "$conf"), not 640"
cmp -s "$conf" "$root/packaging/relay.json.example" || fail "etc/signalr-relay/relay.json is not the sample"
[ $failures -eq 0 ] && ok "files in place under the prefix ($(find "$p" -type f | wc -l) files)"

# --- the installed binary ----------------------------------------------------------------------------
version=$("$p/bin/signalr-relay" --version) && [[ $version == "signalr-relay "* ]] ||
  fail "--version printed '$version'"
# (read whole first: grep -q stops reading at the first match, and the relay, still writing its
# help past the pipe, would die of SIGPIPE under pipefail)
help_text=$("$p/bin/signalr-relay" --help) && grep -q '^Usage: signalr-relay' <<<"$help_text" ||
  fail "--help does not print the usage"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$p/bin/signalr-relay" --config "$conf" --listen "127.0.0.1:$port" 2>"$tmp/relay.log" &
relay_pid=$!
for _ in $(seq 100); do
  grep -q "listening on" "$tmp/relay.log" && break
  kill -0 "$relay_pid" 2>/dev/null || break
  sleep 0.1
done
if ! grep -q "listening on" "$tmp/relay.log"; then
  fail "the installed relay did not start from the installed config:"; cat "$tmp/relay.log"
elif command -v curl >/dev/null && ! grep -q signalr_relay_sessions_active <<<"$(curl -sf "http://127.0.0.1:$port/metrics")"; then
  fail "the installed relay does not serve /metrics"
fi
kill -TERM "$relay_pid" 2>/dev/null || true
status=0; wait "$relay_pid" || status=$?
relay_pid=
[ $status -eq 0 ] || { fail "the installed relay exited with status $status on SIGTERM"; cat "$tmp/relay.log"; }
[ $failures -eq 0 ] && ok "installed relay: $version, --help, starts from etc/signalr-relay/relay.json, stops on SIGTERM"

# --- installing again keeps the operator's config ------------------------------------------------------
echo '{ "hubs": { "mine": "http://127.0.0.1:5000/mine" } }' >"$conf"
cmake --install "$build" --prefix "$p" >"$tmp/install2.log" 2>&1 || { cat "$tmp/install2.log"; exit 1; }
grep -q '"mine"' "$conf" && ok "a second install keeps an edited etc/signalr-relay/relay.json" ||
  fail "a second install overwrote etc/signalr-relay/relay.json"
cmp -s "$p/share/signalr-relay/relay.json.example" "$root/packaging/relay.json.example" ||
  fail "share/signalr-relay/relay.json.example is not the sample"

# --- the systemd unit ----------------------------------------------------------------------------------
for line in "DynamicUser=yes" "NoNewPrivileges=yes" "ProtectSystem=strict" "ProtectHome=yes" "PrivateTmp=yes" \
            "Restart=on-failure" "LoadCredential=relay.json:$conf" \
            "ExecStart=$p/bin/signalr-relay --config %d/relay.json"; do
  grep -qxF "$line" "$unit" || fail "the unit lacks '$line'"
done
grep -qE '^LimitNOFILE=[0-9]+$' "$unit" || fail "the unit sets no numeric LimitNOFILE"
if grep -q '^ExecReload=' "$unit" && ! grep -q 'SIGHUP' "$root"/relay/*.c; then
  fail "the unit has ExecReload but the relay does not handle SIGHUP"
fi
if ! grep -q '^ExecReload=' "$unit" && grep -q 'SIGHUP' "$root"/relay/*.c; then
  echo "check-install: note: relay/ mentions SIGHUP now; if it reloads on SIGHUP, give the unit an ExecReload"
fi
# Plain syntax check, always: sections, Key=Value lines, comments, nothing else; the three sections.
bad=$(grep -nvE '^(#.*|;.*|\[[A-Za-z]+\]|[A-Za-z][A-Za-z0-9]*=.*|[[:space:]]*)$' "$unit" || true)
[ -z "$bad" ] || fail "unit lines that are not Key=Value: $bad"
for s in Unit Service Install; do grep -qx "\[$s\]" "$unit" || fail "unit has no [$s] section"; done
# systemd-analyze verify exits 0 on lines it ignores, so any complaint naming the unit fails too.
if command -v systemd-analyze >/dev/null; then
  if systemd-analyze verify "$unit" >"$tmp/verify.log" 2>&1 && ! grep -q 'signalr-relay.service' "$tmp/verify.log"; then
    ok "unit passes a syntax check and systemd-analyze verify"
  else
    fail "systemd-analyze verify:"; cat "$tmp/verify.log"
  fi
else
  [ $failures -eq 0 ] && ok "unit passes a syntax check (systemd-analyze is not installed)"
fi

# --- DESTDIR: a packager's staging install; paths inside name the final prefix -----------------------
d=$tmp/dest
DESTDIR=$d cmake --install "$build" --prefix /usr/local >"$tmp/install3.log" 2>&1 || { cat "$tmp/install3.log"; exit 1; }
[ -x "$d/usr/local/bin/signalr-relay" ] && [ -f "$d/usr/local/etc/signalr-relay/relay.json" ] &&
  [ -f "$d/usr/local/lib/systemd/system/signalr-relay.service" ] || fail "DESTDIR install incomplete"
grep -qxF "ExecStart=/usr/local/bin/signalr-relay --config %d/relay.json" "$d/usr/local/lib/systemd/system/signalr-relay.service" ||
  fail "DESTDIR install: the unit does not name /usr/local/bin/signalr-relay"
[ ! -e "$d$p" ] || fail "DESTDIR install used the earlier --prefix"
[ $failures -eq 0 ] && ok "DESTDIR=... --prefix /usr/local stages everything under DESTDIR, paths name /usr/local"

# --- scripts/install.sh parses ---------------------------------------------------------------------------
bash -n "$root/scripts/install.sh" || fail "scripts/install.sh has a syntax error"
grep -q -- '--no-systemd' <<<"$("$root/scripts/install.sh" --help)" || fail "scripts/install.sh --help does not describe --no-systemd"

if [ $failures -ne 0 ]; then
  echo "check-install: $failures failure(s)"
  exit 1
fi
echo "check-install: cmake --install of $build checked"
