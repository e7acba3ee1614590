#!/usr/bin/env bash
# run.sh - the /demo page in headless Chromium (demo.test.mjs) against a running relay started
# with --demo-dir demo in front of the sample backend (hubs chat and ChatHub -> its /chat), as
# scripts/run.sh starts it:
#   DEMO_URL=http://127.0.0.1:8080 tests/legacy/browser/demo/run.sh
# Installs the demo's libraries (demo/) and the browser harness (tests/legacy/browser) with npm ci
# when missing; Debian's chromium must be installed (tests/legacy/run.sh installs it). The
# screenshot goes to DEMO_SCREENSHOT (default build/test-output/demo.png). About 15 s.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
: "${DEMO_URL:?set DEMO_URL to the origin of the relay, e.g. http://127.0.0.1:8080}"
source "$root/scripts/lib/suite.sh"
suite_npm_ci "$root/demo" || exit 1
suite_npm_ci "$root/tests/legacy/browser" || exit 1
tap="$(mktemp "${TMPDIR:-/tmp}/signalr-demo.XXXXXX.tap")"
suite_node "$root/tests/legacy/browser" "$tap" 60 180 demo/demo.test.mjs
echo "demo page: $SUITE_PASSED passed, $SUITE_FAILED failed"
[ "$SUITE_FAILED" -eq 0 ] && [ "$SUITE_STATUS" -eq 0 ]
