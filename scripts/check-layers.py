#!/usr/bin/env python3
"""check-layers.py - fails when an #include breaks the source tree's layering.

The rules (docs/ARCHITECTURE.md, "Layers"):
  containers/  includes nothing of ours outside containers/
  protocol/    may include containers/
  hub/         may include protocol/ and containers/
  relay/       may include anything of ours; inside relay/ a file is in one of three layers:
               bottom (event loop, clock, config, logging, HTTP and WebSocket message helpers),
               middle (hub channels and backend connections), top (sessions, endpoints, routing,
               the process); a layer includes only its own and the ones below.
  containers/, protocol/ and hub/ never include relay/ headers, libwebsockets or libev; protocol/
  includes OpenSSL only in convert.c, and only <openssl/evp.h> (base64, see docs/ARCHITECTURE.md).
And among relay/ modules (x.c and x.h together are module x) no include cycle at all.

A relay/ file not named in RELAY_LAYERS below counts as top; give a new file its layer here.
Prints each violation and exits 1, or prints a one-line summary and exits 0.
Usage: scripts/check-layers.py [SOURCE_ROOT]
"""
import os
import re
import sys

FOLDERS = ("containers", "protocol", "hub", "relay")
MAY_INCLUDE = {
    "containers": {"containers"},
    "protocol": {"protocol", "containers"},
    "hub": {"hub", "protocol", "containers"},
    "relay": {"relay", "hub", "protocol", "containers"},
}
FORBIDDEN_SYSTEM = {"libwebsockets.h", "ev.h"}  # only relay/ touches sockets and the loop
# protocol/ is pure codecs: OpenSSL only for base64 in the JSON <-> MessagePack conversion.
OPENSSL_ALLOWED_IN_PROTOCOL = {"protocol/convert.c": {"openssl/evp.h"}}

BOTTOM, MIDDLE, TOP = 0, 1, 2
LAYER_NAMES = {BOTTOM: "bottom", MIDDLE: "middle", TOP: "top"}
RELAY_LAYERS = {
    "clock": BOTTOM, "clock32": BOTTOM, "log": BOTTOM, "config": BOTTOM, "loop": BOTTOM, "listener": BOTTOM, "wsmsg": BOTTOM,
    "http": BOTTOM, "wsi_role": BOTTOM, "tls": BOTTOM, "resolver": BOTTOM, "ares_ev": BOTTOM,
    "config_backends": BOTTOM, "config_help": BOTTOM, "config_restart": BOTTOM, "demo": BOTTOM,
    "capture": BOTTOM, "capture_events": BOTTOM, "capture_file": BOTTOM, "capture_mask": BOTTOM,
    "capture_request": BOTTOM, "capture_writer": BOTTOM, "config_capture": BOTTOM, "config_file": BOTTOM,
    "http_limits": BOTTOM, "request_head": BOTTOM, "tls_head": BOTTOM, "tls_next_head": BOTTOM, "next_head": BOTTOM, "request_body": BOTTOM, "linger": BOTTOM, "lws_memory": BOTTOM,
    "hub_channel": MIDDLE, "backend": MIDDLE, "backend_conn": MIDDLE, "backend_pool": MIDDLE,
    "backend_probe": MIDDLE, "proxy_channel": MIDDLE,
    "service": MIDDLE, "service_channel": MIDDLE, "service_server": MIDDLE,
    "core_negotiate": TOP, "core_session": TOP, "core_client_copy": TOP, "core_sessions": TOP, "core_session_extra": TOP, "core_stateful": TOP, "core_ws": TOP, "legacy": TOP, "legacy_session": TOP, "legacy_session_links": TOP, "legacy_invoke": TOP, "legacy_table": TOP, "legacy_link": TOP, "legacy_identity": TOP,
    "legacy_start": TOP, "legacy_authorize": TOP, "relay": TOP, "relay_admin": TOP, "relay_reload": TOP, "main": TOP, "service_client": TOP,
}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield n, m.group(1) == "<", m.group(2)


def find_cycle(graph):
    """One cycle in a dict node -> set(nodes), as a list of nodes, or None."""
    WHITE, GREY, BLACK = 0, 1, 2
    color = {n: WHITE for n in graph}
    stack = []

    def visit(n):
        color[n] = GREY
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if color.get(m, WHITE) == GREY:
                return stack[stack.index(m):] + [m]
            if color.get(m, WHITE) == WHITE:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        color[n] = BLACK
        return None

    for n in sorted(graph):
        if color[n] == WHITE:
            found = visit(n)
            if found:
                return found
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    problems = []
    modules = {}  # relay module -> set of relay modules it includes
    files = 0
    for folder in FOLDERS:
        base = os.path.join(root, folder)
        for name in sorted(os.listdir(base)):
            if not name.endswith((".c", ".h")):
                continue
            files += 1
            rel = f"{folder}/{name}"
            module = os.path.splitext(name)[0]
            if folder == "relay":
                modules.setdefault(module, set())
            for line, system, target in includes(os.path.join(base, name)):
                where = f"{rel}:{line}"
                if system:
                    if folder != "relay" and target in FORBIDDEN_SYSTEM:
                        problems.append(f"{where}: {folder}/ must not include <{target}> (only relay/ does I/O)")
                    if (folder == "protocol" and target.startswith("openssl/")
                            and target not in OPENSSL_ALLOWED_IN_PROTOCOL.get(rel, ())):
                        problems.append(f"{where}: protocol/ uses OpenSSL only for base64 in convert.c, "
                                        f"not <{target}> here")
                    continue
                top = target.split("/", 1)[0] if "/" in target else None
                if top not in FOLDERS:
                    problems.append(f'{where}: "{target}" does not name its folder (write "folder/file.h")')
                    continue
                if top not in MAY_INCLUDE[folder]:
                    problems.append(f'{where}: {folder}/ must not include "{target}" ({folder} is below {top})')
                    continue
                if folder == "relay" and top == "relay":
                    other = os.path.splitext(target.split("/", 1)[1])[0]
                    if other != module:
                        modules[module].add(other)
                    mine, theirs = RELAY_LAYERS.get(module, TOP), RELAY_LAYERS.get(other, TOP)
                    if theirs > mine:
                        problems.append(f'{where}: relay/{module} ({LAYER_NAMES[mine]} layer) must not include '
                                        f'"{target}" ({LAYER_NAMES[theirs]} layer)')
    cycle = find_cycle(modules)
    if cycle:
        problems.append("include cycle among relay/ modules: " + " -> ".join(cycle))
    if problems:
        for p in problems:
            print(p)
        print(f"check-layers: {len(problems)} problem(s) in {files} files")
        return 1
    print(f"check-layers: {files} files, {len(modules)} relay/ modules, no cycle, every include in its layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
