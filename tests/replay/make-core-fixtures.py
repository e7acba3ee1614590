#!/usr/bin/env python3
"""Writes the hand-written Core fixtures of tests/replay/core/ (format: docs/FIXTURES.md,
signalr-capture version 2, door core): one session of the test backend's chat hub over WebSockets
in JSON and one in MessagePack, as @microsoft/signalr would play them. Hand-written because they
must hold on both sides of the relay (ab: relay vs backend straight): the welcome push carries the
backend's connection id, so it is <backendId:1> (also inside MessagePack strings).

    python3 tests/replay/make-core-fixtures.py     # rewrites tests/replay/core/*.jsonl
"""
import base64
import json
import os

RS = "\x1e"
HERE = os.path.dirname(os.path.abspath(__file__))


# --- a little MessagePack writer (only what these messages need)
def mp(v):
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if 0 <= v < 2**64:
            return b"\xcf" + v.to_bytes(8, "big")
        raise ValueError(v)
    if isinstance(v, str):
        b = v.encode()
        assert len(b) < 32
        return bytes([0xA0 | len(b)]) + b
    if isinstance(v, list):
        assert len(v) < 16
        return bytes([0x90 | len(v)]) + b"".join(mp(x) for x in v)
    if isinstance(v, dict):
        assert len(v) < 16
        return bytes([0x80 | len(v)]) + b"".join(mp(k) + mp(x) for k, x in v.items())
    raise TypeError(v)


def record(v):
    body = mp(v)
    n, prefix = len(body), b""
    while True:
        b = n & 0x7F
        n >>= 7
        prefix += bytes([b | (0x80 if n else 0)])
        if not n:
            return prefix + body


def b64(*values):
    return base64.b64encode(b"".join(record(v) for v in values)).decode()


def lines(protocol, frames):
    t = [0]

    def at():
        t[0] += 5
        return t[0]

    out = [
        {"type": "session", "format": "signalr-capture", "version": 2, "door": "core",
         "label": f"hand-written: chat hub over WebSockets, {protocol} (tests/replay/make-core-fixtures.py)",
         "upstream": "http://<upstream>"},
        {"type": "http-request", "id": 1, "t": at(), "method": "POST", "path": "/chat/negotiate",
         "rawQuery": "negotiateVersion=1", "query": [["negotiateVersion", "1"]],
         "headers": {"content-type": "text/plain;charset=UTF-8", "user-agent": "signalr-replay test"}, "body": ""},
        {"type": "http-response", "id": 1, "t": at(), "tEnd": t[0], "status": 200,
         "headers": {"content-type": "application/json"},
         "body": json.dumps({"negotiateVersion": 1, "connectionId": "<connectionId>", "connectionToken": "<connectionToken>",
                             "availableTransports": [
                                 {"transport": "WebSockets", "transferFormats": ["Text", "Binary"]},
                                 {"transport": "ServerSentEvents", "transferFormats": ["Text"]},
                                 {"transport": "LongPolling", "transferFormats": ["Text", "Binary"]}]},
                            separators=(",", ":"))},
        {"type": "ws-open", "ws": 1, "t": at(), "path": "/chat", "rawQuery": "id=<connectionToken>",
         "query": [["id", "<connectionToken>"]], "headers": {"user-agent": "signalr-replay test"}},
        {"type": "ws-accepted", "ws": 1, "t": at(), "status": 101},
    ]
    for direction, frame in frames:
        line = {"type": "ws-frame", "ws": 1, "t": at(), "dir": direction}
        line.update(frame)
        out.append(line)
    if frames is ABORT_FRAMES:
        out.append({"type": "ws-close", "ws": 1, "t": at(), "by": "server", "code": 1000, "reason": ""})
    else:
        out.append({"type": "ws-close", "ws": 1, "t": at(), "by": "client", "code": 1000, "reason": ""})
    out.append({"type": "end", "t": at(), "placeholders": ["<connectionId>", "<connectionToken>", "<backendId:1>"]})
    return out


def text(*values):
    return {"text": "".join(json.dumps(v, separators=(",", ":")) + RS for v in values)}


JSON_FRAMES = [
    ("c2s", text({"protocol": "json", "version": 1})),
    ("s2c", text({})),
    ("s2c", text({"type": 1, "target": "welcome", "arguments": ["<backendId:1>"]})),
    # Two invocations in one frame; answers compared by value (member order left out), numbers exact.
    ("c2s", {"text": '{"type":1,"invocationId":"1","target":"Echo","arguments":[{"b":9007199254740993,"a":[true,null,"x",1.5]}]}' + RS
             + '{"type":1,"invocationId":"2","target":"Add","arguments":[2,3]}' + RS}),
    ("s2c", {"text": '{"type":3,"invocationId":"1","result":{"b":9007199254740993,"a":[true,null,"x",1.5]}}' + RS}),
    ("s2c", text({"type": 3, "invocationId": "2", "result": 5})),
    ("c2s", text({"type": 1, "invocationId": "3", "target": "ThrowHubException", "arguments": ["nope"]})),
    ("s2c", text({"type": 3, "invocationId": "3",
                  "error": "An unexpected error occurred invoking 'ThrowHubException' on the server. HubException: nope"})),
    ("c2s", text({"type": 6})),
]

MSGPACK_FRAMES = [
    ("c2s", text({"protocol": "messagepack", "version": 1})),
    ("s2c", text({})),
    ("s2c", {"binary": b64([1, {}, None, "welcome", ["<backendId:1>"], []])}),
    ("c2s", {"binary": b64([1, {}, "1", "Echo", ["hi"], []], [1, {}, "2", "Add", [2, 3], []])}),
    ("s2c", {"binary": b64([3, {}, "1", 3, "hi"])}),
    ("s2c", {"binary": b64([3, {}, "2", 3, 5])}),
    ("c2s", {"binary": b64([6])}),
]

# The server ends the connection (AbortMe: Context.Abort()): its Close record, compared by error and
# allowReconnect, then its close of the socket.
ABORT_FRAMES = [
    ("c2s", text({"protocol": "json", "version": 1})),
    ("s2c", text({})),
    ("s2c", text({"type": 1, "target": "welcome", "arguments": ["<backendId:1>"]})),
    ("c2s", text({"type": 1, "invocationId": "1", "target": "AbortMe", "arguments": []})),
    ("s2c", text({"type": 7})),
]

for name, protocol, frames in [("core-json-websockets-abort", "json", ABORT_FRAMES),
                               ("core-json-websockets-echo", "json", JSON_FRAMES),
                               ("core-messagepack-websockets-echo", "messagepack", MSGPACK_FRAMES)]:
    with open(os.path.join(HERE, "core", f"{name}.jsonl"), "w") as f:
        for line in lines(protocol, frames):
            f.write(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n")
