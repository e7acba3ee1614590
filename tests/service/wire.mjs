// The service protocol and its tokens, as a fake app server needs them: JWTs minted as the SDK
// mints them (HS256 keyed with the AccessKey's UTF-8 bytes, aud without a port) and the varint +
// MessagePack framing. Shared by test/fake-app.test.mjs and bench/idle-clients.mjs.
import crypto from "node:crypto";
import { encode, decode } from "@msgpack/msgpack";

function b64url(data) {
    return Buffer.from(data).toString("base64url");
}

export function jwt(key, claims, kind, hub) {
    const now = Math.floor(Date.now() / 1000);
    const header = b64url(JSON.stringify({ alg: "HS256", typ: "JWT", kid: "-1" }));
    const payload = b64url(JSON.stringify({ ...claims, nbf: now, exp: now + 3600, iat: now, iss: "azure-signalr",
        aud: `http://127.0.0.1/${kind}/?hub=${hub}` }));
    const sig = crypto.createHmac("sha256", Buffer.from(key, "utf8")).update(`${header}.${payload}`).digest();
    return `${header}.${payload}.${b64url(sig)}`;
}

export function frame(message) {
    const body = encode(message);
    const prefix = [];
    let n = body.length;
    do {
        let b = n & 0x7f;
        n >>>= 7;
        if (n) b |= 0x80;
        prefix.push(b);
    } while (n);
    return Buffer.concat([Buffer.from(prefix), Buffer.from(body)]);
}

export function unframe(buf) {
    const out = [];
    let i = 0;
    while (i < buf.length) {
        let len = 0, shift = 0, b;
        do {
            b = buf[i++];
            len |= (b & 0x7f) << shift;
            shift += 7;
        } while (b & 0x80);
        out.push(decode(buf.subarray(i, i + len)));
        i += len;
    }
    return out;
}

export const ext = (entries = []) => new Map(entries);
