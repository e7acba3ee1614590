#!/usr/bin/env python3
"""stub_server.py - a minimal ASP.NET Core SignalR look-alike for checking the load generator's
own capacity (e.g. 50,000 connections) where no real server may hold that many sockets.

Speaks just enough Core JSON: POST {path}/negotiate, the WebSocket upgrade, the handshake
({} reply), Echo invocations (Completion with the argument as result), Ping (ignored), Close
message and close frame. And just enough legacy SignalR 2.x over WebSockets (legacy-signalr.md
sections 1.3-1.9, 5, 6): negotiate, connect (init frame with "S":1, then a {} keep-alive),
start, hub invocations answered {"R":..,"I":..}, and abort (which closes the WebSocket). It
checks that the legacy connectionToken comes back intact (it contains '+', '/' and '=').
Not a SignalR implementation and not a benchmark target.

  stub_server.py --port P [--procs N] [--seconds S]

N processes share the port with SO_REUSEPORT (each has its own open-file limit). The server
exits by itself after S seconds (default 600)."""
import argparse
import asyncio
import base64
import hashlib
import json
import os
import resource
import signal
import socket
import struct
import sys
import urllib.parse

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
RS = b"\x1e"


def frame(opcode, payload):
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return head + payload


async def read_frame(reader):
    b0, b1 = await reader.readexactly(2)
    n = b1 & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", await reader.readexactly(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", await reader.readexactly(8))
    mask = await reader.readexactly(4) if b1 & 0x80 else b"\0\0\0\0"
    data = bytearray(await reader.readexactly(n))
    for i in range(n):
        data[i] ^= mask[i & 3]
    return b0 & 0x0F, bytes(data)


async def websocket(reader, writer):
    buf = b""
    handshaken = False
    while True:
        opcode, data = await read_frame(reader)
        if opcode == 0x8:
            writer.write(frame(0x8, data[:2]))
            await writer.drain()
            return
        if opcode == 0x9:
            writer.write(frame(0xA, data))
            continue
        buf += data
        while RS in buf:
            record, buf = buf.split(RS, 1)
            if not handshaken:
                handshaken = True
                writer.write(frame(0x1, b"{}" + RS))
                continue
            msg = json.loads(record)
            if msg.get("type") == 1 and "invocationId" in msg:
                args = msg.get("arguments") or [None]
                reply = {"type": 3, "invocationId": msg["invocationId"], "result": args[0]}
                writer.write(frame(0x1, json.dumps(reply, separators=(",", ":")).encode() + RS))
        await writer.drain()


LEGACY_SOCKETS = {}  # connectionToken -> writer of its WebSocket


def legacy_token(query):
    values = urllib.parse.parse_qs(query).get("connectionToken", [""])
    return values[0]


async def legacy_websocket(reader, writer, token):
    LEGACY_SOCKETS[token] = writer
    try:
        writer.write(frame(0x1, b'{"C":"d-1-A,0","S":1,"M":[]}'))
        writer.write(frame(0x1, b"{}"))
        await writer.drain()
        while True:
            opcode, data = await read_frame(reader)
            if opcode == 0x8:
                writer.write(frame(0x8, data[:2]))
                await writer.drain()
                return
            if opcode == 0x9:
                writer.write(frame(0xA, data))
                continue
            msg = json.loads(data)
            reply = {"I": str(msg["I"])}
            if msg.get("M", "").lower() == "echo":
                reply["R"] = (msg.get("A") or [None])[0]
            writer.write(frame(0x1, json.dumps(reply, separators=(",", ":")).encode()))
            await writer.drain()
    finally:
        LEGACY_SOCKETS.pop(token, None)


def http_json(writer, body):
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=UTF-8\r\n"
                 b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))


async def legacy_http(reader, writer, method, path, query, headers):
    if path.endswith("/negotiate"):
        # 17 bytes starting fb ff: base64 "+/..." ending in one "=".
        token = base64.b64encode(b"\xfb\xff" + os.urandom(15)).decode()
        body = json.dumps({"Url": path[: -len("/negotiate")], "ConnectionToken": token,
                           "ConnectionId": token[:8], "KeepAliveTimeout": 20.0,
                           "DisconnectTimeout": 30.0, "ConnectionTimeout": 110.0, "TryWebSockets": True,
                           "ProtocolVersion": "2.0", "TransportConnectTimeout": 5.0,
                           "LongPollDelay": 0.0}).encode()
        http_json(writer, body)
    elif path.endswith("/start"):
        http_json(writer, b'{ "Response": "started" }')
    elif path.endswith("/abort"):
        ws = LEGACY_SOCKETS.get(legacy_token(query))
        if ws is not None:
            ws.write(frame(0x8, b"\x03\xe8"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n"
                     b"Connection: close\r\n\r\n")
    elif path.endswith("/connect") and headers.get("upgrade", "").lower() == "websocket":
        token = legacy_token(query)
        if not (token.startswith("+/") and token.endswith("=") and len(token) == 24):
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        else:
            key = headers["sec-websocket-key"].encode()
            accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
            writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
            await legacy_websocket(reader, writer, token)
            return
    else:
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    await writer.drain()


async def handle(reader, writer):
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        path, _, query = target.partition("?")
        if path.startswith("/signalr"):
            await legacy_http(reader, writer, method, path, query, headers)
            return
        if method == "POST" and "/negotiate" in target:
            token = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
            body = json.dumps({"negotiateVersion": 1, "connectionId": token, "connectionToken": token,
                               "availableTransports": [{"transport": "WebSockets",
                                                        "transferFormats": ["Text", "Binary"]}]}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n%s" % (len(body), body))
            await writer.drain()
            return
        if headers.get("upgrade", "").lower() == "websocket":
            key = headers["sec-websocket-key"].encode()
            accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
            writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n")
            await websocket(reader, writer)
            return
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError, KeyError):
        pass
    finally:
        writer.close()


async def serve(port, seconds):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(4096)
    server = await asyncio.start_server(handle, sock=sock)
    async with server:
        await asyncio.sleep(seconds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--procs", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=600)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    children = []
    for _ in range(args.procs - 1):
        pid = os.fork()
        if pid == 0:
            asyncio.run(serve(args.port, args.seconds))
            os._exit(0)
        children.append(pid)
    try:
        asyncio.run(serve(args.port, args.seconds))
    except KeyboardInterrupt:
        pass
    for pid in children:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
