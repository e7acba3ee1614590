// A small MessagePack codec that keeps what the wire says: maps as ordered [key, value] entries
// (repeated keys survive), bin apart from str, ext apart from both. Enough for the Azure SignalR
// service protocol and the SignalR MessagePack hub protocol; no dependency.

export class Bin {
    constructor(bytes) { this.bytes = Buffer.from(bytes); }
}
export class Ext {
    constructor(type, bytes) { this.type = type; this.bytes = Buffer.from(bytes); }
}
export class MpMap {
    constructor(entries = []) { this.entries = entries; }
    get(key) { const e = this.entries.find(([k]) => k === key); return e ? e[1] : undefined; }
    getAll(key) { return this.entries.filter(([k]) => k === key).map(([, v]) => v); }
}
export const map = (entries) => new MpMap(entries);

export class Truncated extends Error {}

// Decodes one value at `pos`; returns [value, nextPos]. Throws Truncated when the buffer ends.
export function decodeAt(buf, pos) {
    const need = (n) => { if (pos + n > buf.length) throw new Truncated(); };
    need(1);
    const b = buf[pos++];
    const str = (n) => { need(n); const s = buf.toString("utf8", pos, pos + n); pos += n; return s; };
    const bin = (n) => { need(n); const v = new Bin(buf.subarray(pos, pos + n)); pos += n; return v; };
    const arr = (n) => { const a = []; for (let i = 0; i < n; i++) { const [v, p] = decodeAt(buf, pos); a.push(v); pos = p; } return a; };
    const mp = (n) => {
        const m = new MpMap();
        for (let i = 0; i < n; i++) {
            const [k, p1] = decodeAt(buf, pos); const [v, p2] = decodeAt(buf, p1);
            m.entries.push([k, v]); pos = p2;
        }
        return m;
    };
    const ext = (n) => { need(1 + n); const t = buf.readInt8(pos); const v = new Ext(t, buf.subarray(pos + 1, pos + 1 + n)); pos += 1 + n; return v; };
    const u = (n) => { need(n); let v; if (n === 1) v = buf.readUInt8(pos); else if (n === 2) v = buf.readUInt16BE(pos); else if (n === 4) v = buf.readUInt32BE(pos); else { v = buf.readBigUInt64BE(pos); if (v <= BigInt(Number.MAX_SAFE_INTEGER)) v = Number(v); } pos += n; return v; };
    const i = (n) => { need(n); let v; if (n === 1) v = buf.readInt8(pos); else if (n === 2) v = buf.readInt16BE(pos); else if (n === 4) v = buf.readInt32BE(pos); else { v = buf.readBigInt64BE(pos); if (v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER)) v = Number(v); } pos += n; return v; };
    let v;
    if (b <= 0x7f) v = b;
    else if (b <= 0x8f) v = mp(b & 0x0f);
    else if (b <= 0x9f) v = arr(b & 0x0f);
    else if (b <= 0xbf) v = str(b & 0x1f);
    else if (b >= 0xe0) v = b - 0x100;
    else switch (b) {
        case 0xc0: v = null; break;
        case 0xc2: v = false; break;
        case 0xc3: v = true; break;
        case 0xc4: v = bin(u(1)); break;
        case 0xc5: v = bin(u(2)); break;
        case 0xc6: v = bin(u(4)); break;
        case 0xc7: v = ext(u(1)); break;
        case 0xc8: v = ext(u(2)); break;
        case 0xc9: v = ext(u(4)); break;
        case 0xca: need(4); v = buf.readFloatBE(pos); pos += 4; break;
        case 0xcb: need(8); v = buf.readDoubleBE(pos); pos += 8; break;
        case 0xcc: v = u(1); break;
        case 0xcd: v = u(2); break;
        case 0xce: v = u(4); break;
        case 0xcf: v = u(8); break;
        case 0xd0: v = i(1); break;
        case 0xd1: v = i(2); break;
        case 0xd2: v = i(4); break;
        case 0xd3: v = i(8); break;
        case 0xd4: v = ext(1); break;
        case 0xd5: v = ext(2); break;
        case 0xd6: v = ext(4); break;
        case 0xd7: v = ext(8); break;
        case 0xd8: v = ext(16); break;
        case 0xd9: v = str(u(1)); break;
        case 0xda: v = str(u(2)); break;
        case 0xdb: v = str(u(4)); break;
        case 0xdc: v = arr(u(2)); break;
        case 0xdd: v = arr(u(4)); break;
        case 0xde: v = mp(u(2)); break;
        case 0xdf: v = mp(u(4)); break;
        default: throw new Error(`msgpack: bad byte 0x${b.toString(16)}`);
    }
    return [v, pos];
}

export function decode(buf) {
    const [v, p] = decodeAt(Buffer.from(buf), 0);
    if (p !== buf.length) throw new Error(`msgpack: ${buf.length - p} trailing bytes`);
    return v;
}

// JS -> MessagePack: null, boolean, integer (smallest form), other number (float64), bigint,
// string (str), Buffer/Uint8Array/Bin (bin), Array, MpMap or plain object (map), Ext.
export function encode(value) {
    const out = [];
    const push = (...bytes) => out.push(Buffer.from(bytes));
    const be = (n, width) => { const b = Buffer.alloc(width); if (width === 1) b.writeUInt8(n); else if (width === 2) b.writeUInt16BE(n); else b.writeUInt32BE(n); return b; };
    const lenHdr = (n, fix, fixMax, c8, c16, c32) => {
        if (fix !== null && n <= fixMax) push(fix | n);
        else if (c8 !== null && n <= 0xff) { push(c8); out.push(be(n, 1)); }
        else if (n <= 0xffff) { push(c16); out.push(be(n, 2)); }
        else { push(c32); out.push(be(n, 4)); }
    };
    const enc = (v) => {
        if (v === null || v === undefined) push(0xc0);
        else if (v === false) push(0xc2);
        else if (v === true) push(0xc3);
        else if (typeof v === "bigint") { const b = Buffer.alloc(9); if (v < 0n) { b[0] = 0xd3; b.writeBigInt64BE(v, 1); } else { b[0] = 0xcf; b.writeBigUInt64BE(v, 1); } out.push(b); }
        else if (typeof v === "number" && Number.isInteger(v)) {
            if (v >= 0 && v <= 0x7f) push(v);
            else if (v < 0 && v >= -32) push(v + 0x100);
            else if (v >= 0 && v <= 0xff) push(0xcc, v);
            else if (v >= 0 && v <= 0xffff) { push(0xcd); out.push(be(v, 2)); }
            else if (v >= 0 && v <= 0xffffffff) { push(0xce); out.push(be(v, 4)); }
            else if (v >= -128 && v < 0) { const b = Buffer.alloc(2); b[0] = 0xd0; b.writeInt8(v, 1); out.push(b); }
            else if (v >= -32768 && v < 0) { const b = Buffer.alloc(3); b[0] = 0xd1; b.writeInt16BE(v, 1); out.push(b); }
            else if (v >= -2147483648 && v < 0) { const b = Buffer.alloc(5); b[0] = 0xd2; b.writeInt32BE(v, 1); out.push(b); }
            else enc(BigInt(v));
        }
        else if (typeof v === "number") { const b = Buffer.alloc(9); b[0] = 0xcb; b.writeDoubleBE(v, 1); out.push(b); }
        else if (typeof v === "string") { const s = Buffer.from(v, "utf8"); lenHdr(s.length, 0xa0, 31, 0xd9, 0xda, 0xdb); out.push(s); }
        else if (v instanceof Bin || Buffer.isBuffer(v) || v instanceof Uint8Array) { const s = v instanceof Bin ? v.bytes : Buffer.from(v); lenHdr(s.length, null, 0, 0xc4, 0xc5, 0xc6); out.push(s); }
        else if (Array.isArray(v)) { lenHdr(v.length, 0x90, 15, null, 0xdc, 0xdd); v.forEach(enc); }
        else if (v instanceof MpMap) { lenHdr(v.entries.length, 0x80, 15, null, 0xde, 0xdf); for (const [k, x] of v.entries) { enc(k); enc(x); } }
        else if (v instanceof Ext) { push(0xc7, v.bytes.length); const t = Buffer.alloc(1); t.writeInt8(v.type); out.push(t, v.bytes); }
        else if (typeof v === "object") { const e = Object.entries(v); lenHdr(e.length, 0x80, 15, null, 0xde, 0xdf); for (const [k, x] of e) { enc(k); enc(x); } }
        else throw new Error(`msgpack: cannot encode ${typeof v}`);
    };
    enc(value);
    return Buffer.concat(out);
}

// Varint (little-endian base-128) length prefix, as both the service protocol and the SignalR
// MessagePack hub protocol frame their messages.
export function varint(n) {
    const bytes = [];
    do { let b = n & 0x7f; n >>>= 7; if (n) b |= 0x80; bytes.push(b); } while (n);
    return Buffer.from(bytes);
}

export function frame(body) { return Buffer.concat([varint(body.length), body]); }

// Splits complete varint-framed messages off the front of buf: returns [bodies, rest].
export function unframe(buf) {
    const bodies = [];
    let pos = 0;
    for (;;) {
        let len = 0, shift = 0, p = pos, done = false;
        while (p < buf.length && shift <= 28) {
            const b = buf[p++];
            len |= (b & 0x7f) << shift;
            if (!(b & 0x80)) { done = true; break; }
            shift += 7;
        }
        if (!done || p + len > buf.length) break;
        bodies.push(buf.subarray(p, p + len));
        pos = p + len;
    }
    return [bodies, buf.subarray(pos)];
}

function printable(s) { return !/[\x00-\x08\x0b\x0c\x0e-\x1d\x1f\x7f\ufffd]/.test(s); }

// One-line rendering that shows wire types: str as "..", bin as b".." (text) or mp:[..] (varint-
// framed MessagePack) or hex, maps as {k:v}, nil as nil, ext as ext(type,hex).
export function render(v, maxBin = 400) {
    if (v === null || v === undefined) return "nil";
    if (typeof v === "string") return JSON.stringify(v);
    if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
    if (Array.isArray(v)) return "[" + v.map((x) => render(x, maxBin)).join(",") + "]";
    if (v instanceof MpMap) return "{" + v.entries.map(([k, x]) => `${render(k, maxBin)}:${render(x, maxBin)}`).join(",") + "}";
    if (v instanceof Ext) {
        if (v.type === -1) return `timestamp(${timestamp(v)})`;
        return `ext(${v.type},${v.bytes.toString("hex")})`;
    }
    if (v instanceof Bin) {
        const bytes = v.bytes;
        const text = bytes.toString("utf8");
        const cut = (s) => (s.length > maxBin ? s.slice(0, maxBin) + `…(+${s.length - maxBin})` : s);
        if (bytes.length > 0 && printable(text)) return `b${JSON.stringify(cut(text))}`;
        try {
            const [bodies, rest] = unframe(bytes);
            if (bodies.length && rest.length === 0)
                return `mp:${cut(bodies.map((b) => render(decode(b), maxBin)).join(" "))}`;
        } catch { /* not MessagePack */ }
        return `hex(${bytes.length}):${cut(bytes.toString("hex"))}`;
    }
    return JSON.stringify(v);
}

function timestamp(e) {
    const b = e.bytes;
    let sec, ns = 0;
    if (b.length === 4) sec = b.readUInt32BE(0);
    else if (b.length === 8) { const v = b.readBigUInt64BE(0); ns = Number(v >> 34n); sec = Number(v & 0x3ffffffffn); }
    else if (b.length === 12) { ns = b.readUInt32BE(0); sec = Number(b.readBigInt64BE(4)); }
    else return b.toString("hex");
    return new Date(sec * 1000 + ns / 1e6).toISOString();
}
