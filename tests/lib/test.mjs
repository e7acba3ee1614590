// node:test with a time bound on every test and hook. Node 20 applies --test-timeout to a whole
// test file (the child process), not to each test in it, so a test that never settles would
// only fail when its whole file is stopped, and without its name. Test files import test / it /
// describe / hooks from here instead of node:test: each gets `timeout` (default
// SUITE_TEST_TIMEOUT_S, which scripts/lib/suite.sh sets, else 120 s) unless it names its own, and
// a test that outlives it fails as "test timed out after N ms" under its own name.
import * as nodeTest from "node:test";

export const TEST_TIMEOUT_MS = Math.round(Number(process.env.SUITE_TEST_TIMEOUT_S || 120) * 1000);

// test(name, [options], fn) with options.timeout defaulted.
function bounded(run) {
    return (name, options, fn) => {
        if (typeof name === "function") return run({ timeout: TEST_TIMEOUT_MS }, name);
        if (typeof options === "function") return run(name, { timeout: TEST_TIMEOUT_MS }, options);
        return run(name, { timeout: TEST_TIMEOUT_MS, ...(options ?? {}) }, fn);
    };
}

// before(fn, [options]) and the other hooks with options.timeout defaulted.
function boundedHook(hook) {
    return (fn, options = {}) => hook(fn, { timeout: TEST_TIMEOUT_MS, ...options });
}

export const test = bounded(nodeTest.test);
export const it = bounded(nodeTest.it);
export const describe = nodeTest.describe;
export const before = boundedHook(nodeTest.before);
export const after = boundedHook(nodeTest.after);
export const beforeEach = boundedHook(nodeTest.beforeEach);
export const afterEach = boundedHook(nodeTest.afterEach);
