// Values every suite sends through Echo: the JS Core suite (tests/interop/js) and the jQuery suite
// (tests/legacy/browser) use the same list, so a value one of them covers the other covers too.
// Each is [what, value]; null is not in the list (the legacy protocol leaves a null result out,
// so each suite checks null on its own).
export const ECHO_VALUES = [
    ["ascii string", "hello"],
    ["empty string", ""],
    ["unicode string", "h\u00e9llo w\u00f6rld \u2014 \u65e5\u672c\u8a9e \u{1F389} \u2028\u2029"],
    ["control characters and quotes", "tab\t nl\n rs\u001e nul\u0000 \"q\" back\\slash </script> +&=%"],
    ["zero", 0],
    ["small int", 42],
    ["negative int", -7],
    ["int32 max", 2147483647],
    ["int32 min", -2147483648],
    ["uint32 max + 1", 4294967296],
    ["2^40", 2 ** 40],
    ["max safe integer", Number.MAX_SAFE_INTEGER],
    ["min safe integer", -Number.MAX_SAFE_INTEGER],
    ["double", 3.141592653589793],
    ["negative double", -0.5],
    ["huge double", 1e300],
    ["tiny double", 2.5e-300],
    ["true", true],
    ["false", false],
    ["empty array", []],
    ["empty object", {}],
    ["mixed array", [1, "two", null, true, 2.5, [3, [4]]]],
    ["nested object", { name: "n", list: [1, "two", { three: 3 }], inner: { deep: { deeper: [null, false] } } }],
    ["object with legacy field names", { H: "x", M: "y", A: [1], I: "0", R: 1, E: "e", C: "c", S: 1 }],
];

// Exactly `bytes` bytes of UTF-8 mixing 1-, 2-, 3- and 4-byte sequences (whole code points only:
// a lone surrogate is invalid UTF-16, and a JSON server closes the connection on one).
export function bigString(bytes) {
    const unit = "0123456789abcdef\u00e9\u20ac\u{1F600}";
    const unitBytes = Buffer.byteLength(unit);
    const whole = Math.floor(bytes / unitBytes);
    const text = unit.repeat(whole) + "x".repeat(bytes - whole * unitBytes);
    if (Buffer.byteLength(text) !== bytes) throw new Error(`bigString(${bytes}) made ${Buffer.byteLength(text)} bytes`);
    return text;
}
