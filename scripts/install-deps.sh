#!/usr/bin/env bash
# install-deps.sh - installs what signalr-relay needs to build and test, and only what is missing.
#
# Debian packages: compiler, CMake, pkg-config, libwebsockets, OpenSSL, cJSON, msgpack-c,
# clang + its runtime (libFuzzer, sanitizers), libev + lws' libev plugin (the relay's event loop),
# c-ares (its asynchronous DNS resolver), nginx-light and valgrind (scripts/bench); with
# SR_WITH_BROWSER=1 chromium, with SR_WITH_MONO=1 mono-devel (tests/legacy-ref).
# Idempotent: a second run installs nothing.
# The .NET SDK and Node.js are expected on the machine (they are on ours and CI's); this
# script says so clearly if they are not.
set -euo pipefail

packages=(build-essential cmake pkg-config libwebsockets-dev libssl-dev libcjson-dev libmsgpack-dev
          clang libclang-rt-14-dev python3 curl nginx-light valgrind libev-dev libwebsockets-evlib-ev
          libc-ares-dev)
[ "${SR_WITH_BROWSER:-0}" = 1 ] && packages+=(chromium)
# tests/legacy-ref (the real ASP.NET SignalR 2.4.1 server on Mono) needs Mono's runtime and C#
# compiler: a large install (mono-devel alone is ~115 MB), so only on request.
[ "${SR_WITH_MONO:-0}" = 1 ] && packages+=(mono-devel)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi

for tool in dotnet node npm; do
  command -v "$tool" >/dev/null || echo "install-deps: warning: '$tool' is not installed; the interop tests need it" >&2
done
exit 0
