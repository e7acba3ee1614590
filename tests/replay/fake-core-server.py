#!/usr/bin/env python3
"""A small ASP.NET Core SignalR server over long polling, JSON protocol only, that answers the
chat hub's `Add` as the test backend does, except where told to differ. tests/replay/run.sh plays
`signalr-replay ab` with the backend as A and this server as B, so that the two differ at known
points: the report must name each of them (a side goes on past a structural difference).

    python3 tests/replay/fake-core-server.py [--no-answer-to ID] [--off-by-one ID]

--no-answer-to ID   the invocation with that invocationId gets no completion at all
--off-by-one ID     the invocation with that invocationId gets its sum + 1

It listens on a free 127.0.0.1 port and prints `listening http://127.0.0.1:PORT` once ready.
Hub path /chat: negotiate (version 1), polls (the first answered at once, empty; the next held
until records are ready or the connection ends: 204), sends (handshake, then invocations), and
DELETE (202; a held poll gets 204). On connect it pushes `welcome` with the connection id, as the
backend's ChatHub does.
"""
import argparse
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

RS = "\x1e"
TRANSPORTS = [{"transport": "WebSockets", "transferFormats": ["Text", "Binary"]},
              {"transport": "ServerSentEvents", "transferFormats": ["Text"]},
              {"transport": "LongPolling", "transferFormats": ["Text", "Binary"]}]


def new_id():
    return secrets.token_urlsafe(16)  # 22 characters of base64url, as the backend's ids


class Connection:
    def __init__(self):
        self.id, self.token = new_id(), new_id()
        self.records, self.polled, self.closed = [], False, False
        self.ready = threading.Condition()

    def push(self, record):
        with self.ready:
            self.records.append(json.dumps(record, separators=(",", ":")) + RS)
            self.ready.notify_all()

    def close(self):
        with self.ready:
            self.closed = True
            self.ready.notify_all()

    def take(self):
        """Blocks until records are ready (returns them) or the connection ended (returns None)."""
        with self.ready:
            while not self.records and not self.closed:
                self.ready.wait(30)
            if self.records:
                out, self.records = "".join(self.records), []
                return out
            return None


def make_handler(opts, connections):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, status, content_type, body=""):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def connection_of(self):
            query = parse_qs(urlsplit(self.path).query)
            return connections.get(query.get("id", [""])[0])

        def do_POST(self):
            url = urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            if url.path == "/chat/negotiate":
                c = Connection()
                connections[c.token] = c
                return self.answer(200, "application/json", json.dumps(
                    {"negotiateVersion": 1, "connectionId": c.id, "connectionToken": c.token,
                     "availableTransports": TRANSPORTS}, separators=(",", ":")))
            c = self.connection_of()
            if url.path != "/chat" or not c:
                return self.answer(404, "text/plain", "No Connection with that ID")
            for text in filter(None, body.split(RS)):
                self.received(c, json.loads(text))
            self.answer(200, "text/plain")

        def received(self, c, message):
            if "protocol" in message:
                c.push({})
                c.push({"type": 1, "target": "welcome", "arguments": [c.id]})
            elif message.get("type") == 1 and message.get("target") == "Add":
                invocation = message.get("invocationId")
                if invocation == opts.no_answer_to:
                    return
                result = sum(message["arguments"]) + (1 if invocation == opts.off_by_one else 0)
                c.push({"type": 3, "invocationId": invocation, "result": result})

        def do_GET(self):
            c = self.connection_of()
            if urlsplit(self.path).path != "/chat" or not c:
                return self.answer(404, "text/plain", "No Connection with that ID")
            if not c.polled:
                c.polled = True
                return self.answer(200, "application/octet-stream")
            records = c.take()
            if records is None:
                return self.answer(204, "text/plain")
            self.answer(200, "application/octet-stream", records)

        def do_DELETE(self):
            c = self.connection_of()
            if not c:
                return self.answer(404, "text/plain", "No Connection with that ID")
            c.close()
            self.answer(202, "text/plain")

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-answer-to", default=None)
    parser.add_argument("--off-by-one", default=None)
    opts = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(opts, {}))
    server.daemon_threads = True
    print(f"listening http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
