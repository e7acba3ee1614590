#!/usr/bin/env bash
# Replays the Core sessions (tests/replay/core, hand-written; fixtures/core, recorded by the relay's
# --capture, when there are any) with signalr-replay: against the ASP.NET Core backend straight,
# through the relay, and `ab` relay vs backend (also on a changed session, which both differ from
# alike); then checks that a session whose recorded answer
# was changed (a result, a Close record) fails against the backend (the comparison is live, not
# vacuous); then Core long polls recorded in other batches than the server sends them (pass) and
# with a record missing, extra or changed, or another status (fail); and ab against a fake Core
# server that differs from the backend at two points: both reported; and legacy long polls and
# event streams batched otherwise than recorded (fake-legacy-server.py). Prints
# `core replay: N passed, M failed`.
#
#   RELAY_URL=http://127.0.0.1:8080 BACKEND_URL=http://127.0.0.1:5000 tests/replay/run.sh
#
# The relay must serve the backend's hub "chat" at /chat (scripts/lib/relay.sh does).
# SIGNALR_REPLAY_BIN=path uses that signalr-replay; otherwise build/asan's is built (incrementally).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
: "${RELAY_URL:?set RELAY_URL (the relay's origin)}" "${BACKEND_URL:?set BACKEND_URL (the backend's origin)}"
if [ -z "${SIGNALR_REPLAY_BIN:-}" ]; then
    if [ ! -f "$root/build/asan/CMakeCache.txt" ]; then
        cmake -S "$root" -B "$root/build/asan" -DCMAKE_BUILD_TYPE=Debug -DSR_SANITIZE=ON >/dev/null
    fi
    timeout 900 nice cmake --build "$root/build/asan" -j2 --target signalr-replay >/dev/null ||
        { echo "core replay: 0 passed, 1 failed (building signalr-replay)"; exit 1; }
    SIGNALR_REPLAY_BIN="$root/build/asan/tools/replay/signalr-replay"
fi
shopt -s nullglob
fixtures=("$here"/core/*.jsonl "$root"/fixtures/core/*.jsonl)
passed=0 failed=0
step() { # NAME COMMAND...
    local name=$1
    shift
    echo "== $name"
    if timeout 300 "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; fi
}
step "Core sessions against the backend straight ($BACKEND_URL)" "$SIGNALR_REPLAY_BIN" check --target "$BACKEND_URL" "${fixtures[@]}"
step "Core sessions through the relay ($RELAY_URL)" "$SIGNALR_REPLAY_BIN" check --target "$RELAY_URL" "${fixtures[@]}"
step "Core sessions, ab: relay vs backend" "$SIGNALR_REPLAY_BIN" ab --a "$RELAY_URL" --b "$BACKEND_URL" "${fixtures[@]}"

# A recorded answer changed (Add's 5 becomes 6): the replay must fail, exit 1, naming the line.
work="$(mktemp -d "${TMPDIR:-/tmp}/signalr-core-replay.XXXXXX")"
sed 's/\\"result\\":5}/\\"result\\":6}/' "$here/core/core-json-websockets-echo.jsonl" >"$work/changed.jsonl"
echo "== a changed answer is reported"
out="$("$SIGNALR_REPLAY_BIN" check --target "$BACKEND_URL" "$work/changed.jsonl")"
code=$?
printf '%s\n' "$out"
if [ "$code" -eq 1 ] && grep -q 'expected 6, got 5' <<<"$out"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAILED: a changed answer was not reported (exit $code)"; fi
# ab on the same changed session: relay and backend both answer 5 where the recording has 6, so
# they are the same (the recording is only the script), exit 0.
echo "== ab: relay and backend differ from the recording alike"
out="$("$SIGNALR_REPLAY_BIN" ab --a "$RELAY_URL" --b "$BACKEND_URL" "$work/changed.jsonl")"
code=$?
printf '%s\n' "$out"
if [ "$code" -eq 0 ] && grep -q 'both differ from the recording the same way at 1 point' <<<"$out"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAILED: ab did not find relay and backend alike (exit $code)"; fi
# A Close record the server did not send that way (allowReconnect added): must fail too.
sed 's/{\\"type\\":7}/{\\"type\\":7,\\"allowReconnect\\":true}/' "$here/core/core-json-websockets-abort.jsonl" >"$work/close.jsonl"
echo "== a changed Close record is reported"
out="$("$SIGNALR_REPLAY_BIN" check --target "$BACKEND_URL" "$work/close.jsonl")"
code=$?
printf '%s\n' "$out"
if [ "$code" -eq 1 ] && grep -q 'missing \["allowReconnect"\]' <<<"$out"; then passed=$((passed + 1)); else
    failed=$((failed + 1)); echo "FAILED: a changed Close record was not reported (exit $code)"; fi

# Core long polling is compared as one stream of records over the polls: a recording whose poll
# answers batch the records otherwise than the server does passes; a record missing, extra or
# changed, or another status, fails (tests/replay/vary-core-polls.py writes the variants).
expect_fail() { # NAME PATTERN FILE [TIMEOUT-MS]: check against the backend must exit 1 saying PATTERN
    local out code
    echo "== $1"
    out="$("$SIGNALR_REPLAY_BIN" check --timeout "${4:-10000}" --target "$BACKEND_URL" "$3")"
    code=$?
    printf '%s\n' "$out"
    if [ "$code" -eq 1 ] && grep -aqF "$2" <<<"$out"; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAILED: $1 (exit $code)"; fi
}
lp=("$root"/fixtures/core/js-*-json-LongPolling-add.jsonl)
if [ "${#lp[@]}" -gt 0 ]; then
    mkdir -p "$work/lp"
    python3 "$here/vary-core-polls.py" "${lp[0]}" "$work/lp"
    step "Core long polls batched otherwise than recorded (backend)" "$SIGNALR_REPLAY_BIN" check --target "$BACKEND_URL" \
        "$work/lp/moved.jsonl" "$work/lp/spread.jsonl"
    step "Core long polls batched otherwise than recorded, ab: relay vs backend" "$SIGNALR_REPLAY_BIN" ab \
        --a "$RELAY_URL" --b "$BACKEND_URL" "$work/lp/moved.jsonl" "$work/lp/spread.jsonl"
    expect_fail "a record missing from the recording is reported" 'got {"type":1,"target":"welcome"' "$work/lp/missing.jsonl"
    expect_fail "a record the server never sends is reported" 'timed out after 2000 ms waiting for line' "$work/lp/extra.jsonl" 2000
    expect_fail "a changed record across polls is reported" 'expected 43, got 42' "$work/lp/changed.jsonl"
    expect_fail "another status of the last poll is reported" 'recorded 404' "$work/lp/status.jsonl"
else
    failed=$((failed + 1))
    echo "FAILED: no fixtures/core/js-*-json-LongPolling-add.jsonl to vary"
fi

# ab goes on past a structural difference: B, a small Core server (fake-core-server.py) that
# answers as the backend does but for no answer to invocation 0 and a wrong sum for invocation 1,
# differs from A (the backend) at both points, the second one reached too.
FAKES=0
fake_start() { # SCRIPT FLAGS...: starts a fake server, sets FAKE_PID and FAKE_URL once it listens
    local script=$1 out
    shift
    FAKES=$((FAKES + 1))
    out="$work/fake-$FAKES.out" # a file of its own: the last one's URL is never read for this one
    : >"$out"
    python3 "$here/$script" "$@" >"$out" 2>&1 &
    FAKE_PID=$! FAKE_URL=
    for _ in $(seq 1 300); do
        FAKE_URL="$(sed -n 's/^listening //p' "$out")"
        [ -n "$FAKE_URL" ] && return 0
        kill -0 "$FAKE_PID" 2>/dev/null || break
        sleep 0.1
    done
    cat "$out"
    return 1
}
fake_stop() { [ -n "${FAKE_PID:-}" ] && kill "$FAKE_PID" 2>/dev/null && wait "$FAKE_PID" 2>/dev/null; FAKE_PID=; }
trap fake_stop EXIT
if [ "${#lp[@]}" -gt 0 ] && fake_start fake-core-server.py; then
    step "ab: the backend and a faithful fake Core server are the same" "$SIGNALR_REPLAY_BIN" ab \
        --a "$BACKEND_URL" --b "$FAKE_URL" "${lp[0]}"
    fake_stop
fi
if [ "${#lp[@]}" -gt 0 ] && fake_start fake-core-server.py --no-answer-to 0 --off-by-one 1; then
    echo "== ab: a side goes on past a missing answer (both differences reported)"
    out="$("$SIGNALR_REPLAY_BIN" ab --timeout 5000 --a "$BACKEND_URL" --b "$FAKE_URL" "${lp[0]}")"
    code=$?
    printf '%s\n' "$out"
    fake_stop
    if [ "$code" -eq 1 ] && grep -q 'differ at 2 points' <<<"$out" &&
        grep -q 'b: timed out after 5000 ms waiting for line' <<<"$out" &&
        grep -q 'b: line [0-9]*: response [0-9]* (200): got {"type":3,"invocationId":"1","result":-1}: $.result: expected -2, got -1' <<<"$out" &&
        ! grep -q 'not reached' <<<"$out"; then passed=$((passed + 1)); else
        failed=$((failed + 1)); echo "FAILED: ab did not report both differences (exit $code)"; fi
else
    failed=$((failed + 1))
    echo "FAILED: the fake Core server did not start"
fi

# Legacy long polls and event streams batched otherwise than recorded: fake-legacy-server.py sends
# the three pushes of tests/replay/legacy/*.jsonl (recorded as one, then two) in the batches it is
# told; every batching passes (messages beyond a recorded answer carried to the next), a changed
# push that came carried still fails, naming the recorded answer.
legacy=("$here"/legacy/lp-batched.jsonl "$here"/legacy/sse-batched.jsonl)
for batches in 1,1,1 2,1 3; do
    if fake_start fake-legacy-server.py --batches "$batches"; then
        step "legacy long polls and event streams in batches $batches" "$SIGNALR_REPLAY_BIN" check --grace 100 \
            --target "$FAKE_URL" "${legacy[@]}"
    else
        failed=$((failed + 1)); echo "FAILED: the fake legacy server did not start"
    fi
    fake_stop
done
if fake_start fake-legacy-server.py --batches 3 --change 3; then
    echo "== a changed push that came carried is reported"
    out="$("$SIGNALR_REPLAY_BIN" check --grace 100 --target "$FAKE_URL" "${legacy[@]}")"
    code=$?
    printf '%s\n' "$out"
    if [ "$code" -eq 1 ] && grep -q "response 5 (200): body (the previous poll's answer had it): \$.M\[1\].A\[0\]: expected 3, got 43" <<<"$out" &&
        grep -q 'event 4 of stream 2: .*(the previous event had it): \$.M\[1\].A\[0\]: expected 3, got 43' <<<"$out"; then
        passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: a changed carried push was not reported (exit $code)"; fi
else
    failed=$((failed + 1)); echo "FAILED: the fake legacy server did not start"
fi
fake_stop
rm -rf "$work"
echo "core replay: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
