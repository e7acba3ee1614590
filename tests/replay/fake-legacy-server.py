#!/usr/bin/env python3
"""A small ASP.NET SignalR 2.x endpoint (/signalr) over longPolling and serverSentEvents that
batches messages as it is told, for the replay's batching tests (tests/replay/run.sh with the
hand-written sessions of tests/replay/legacy/): a /send answers {"I":"0","R":"ok"} and queues
three pushes (note 1, 2, 3); the pushes then go out in batches of the given sizes, each batch one
poll answer or one event, each with its cursor C "c-N" (N: the messages sent so far). Every
/connect starts a connection of its own, batched from the start of the list again.

    python3 tests/replay/fake-legacy-server.py [--batches 2,1] [--change N]

--batches LIST  the sizes of the batches (default 1,1,1: one push per poll or event)
--change N      push N carries 40 + N instead of N (a server that differs)

It listens on a free 127.0.0.1 port and prints `listening http://127.0.0.1:PORT` once ready.
"""
import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class Queue:
    """The pushes of the one connection, handed out in batches."""

    def __init__(self, batches, change):
        self.batches, self.change = list(batches), change
        self.pending, self.sent = [], 0
        self.ready = threading.Condition()

    def send(self):
        with self.ready:
            for n in (1, 2, 3):
                self.pending.append({"H": "h", "M": "note", "A": [40 + n if n == self.change else n]})
            self.ready.notify_all()

    def next_batch(self, timeout):
        """The next batch as a PersistentResponse, None when nothing came within timeout."""
        with self.ready:
            if not self.ready.wait_for(lambda: self.pending, timeout):
                return None
            size = self.batches.pop(0) if self.batches else len(self.pending)
            out, self.pending = self.pending[:size], self.pending[size:]
            self.sent += len(out)
            return {"C": f"c-{self.sent}", "M": out}


def make_handler(opts):
    current = {"queue": None}  # the latest connection's (one client at a time)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def json(self, value):
            data = json.dumps(value, separators=(",", ":")).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def route(self):
            url = urlsplit(self.path)
            if url.path == "/signalr/connect":
                current["queue"] = Queue(opts.batches, opts.change)
            queue = current["queue"]
            transport = parse_qs(url.query).get("transport", [""])[0]
            if url.path == "/signalr/negotiate":
                return self.json({"Url": "/signalr", "ConnectionToken": "tok-1", "ConnectionId": "cid-1"})
            if url.path == "/signalr/connect" and transport == "serverSentEvents":
                return self.event_stream(queue)
            if url.path == "/signalr/connect":
                return self.json({"C": "c-0", "S": 1, "M": []})
            if url.path == "/signalr/send":
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.json({"I": "0", "R": "ok"})
                return queue.send()
            if url.path == "/signalr/poll":
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                return self.json(queue.next_batch(60) or {"C": f"c-{queue.sent}", "M": []})
            self.send_error(404)

        def event_stream(self, queue):
            self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"data: initialized\n\n")
            self.wfile.write(b'data: {"C":"c-0","S":1,"M":[]}\n\n')
            self.wfile.flush()
            while True:
                batch = queue.next_batch(60)
                if batch is None:
                    return
                self.wfile.write(b"data: " + json.dumps(batch, separators=(",", ":")).encode() + b"\n\n")
                self.wfile.flush()

        do_GET = do_POST = route

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", default="1,1,1")
    parser.add_argument("--change", type=int, default=0)
    opts = parser.parse_args()
    opts.batches = [int(n) for n in opts.batches.split(",") if n]
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(opts))
    server.daemon_threads = True
    print(f"listening http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except (BrokenPipeError, ConnectionResetError):
        pass


if __name__ == "__main__":
    main()
