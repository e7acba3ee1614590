# built_once.sh - within one scripts/test.sh run, each .NET project is built once. test.sh exports
# SR_BUILT_ONCE_DIR, a directory of its own; a successful build leaves a mark there named after
# the project's absolute path, and a later build of the same project in the same run is skipped:
# no source changes during a run, and a `dotnet build` with nothing to do still costs seconds
# (it ran a dozen times per run: the backend, the interop and the legacy .NET clients, from several
# scripts). Outside test.sh (SR_BUILT_ONCE_DIR unset or gone) every build runs as before.
# Source this file; nothing runs on load.
#
#   built_once_done DIR   status 0 when DIR was built already in this run
#   built_once_mark DIR   notes that DIR was built

built_once_key() { # DIR -> the mark's path
    local abs
    abs="$(cd "$1" 2>/dev/null && pwd)" || abs=$1
    printf '%s/%s' "$SR_BUILT_ONCE_DIR" "$(printf '%s' "$abs" | tr '/' '_')"
}

built_once_done() {
    [ -n "${SR_BUILT_ONCE_DIR:-}" ] && [ -d "$SR_BUILT_ONCE_DIR" ] && [ -e "$(built_once_key "$1")" ]
}

built_once_mark() {
    if [ -n "${SR_BUILT_ONCE_DIR:-}" ] && [ -d "$SR_BUILT_ONCE_DIR" ]; then
        : >"$(built_once_key "$1")"
    fi
    return 0
}
