#!/usr/bin/env python3
"""dns_server.py - a small authoritative-looking DNS server for the resolver tests.

Answers A and AAAA questions over UDP on 127.0.0.1 for the names of a zone
given as JSON, each with its own TTL and delay, and can answer slowly or
never. Python standard library only; one thread; delayed answers wait in a
heap, so a slow name never holds up a fast one.

Zone (--zone JSON text, or --zone-file PATH): {"name": {...}, ...} with, per name,
  "a": ["10.0.0.1", ...]     A records        "aaaa": ["fd00::1", ...]  AAAA records
  "ttl": 60                  record TTL (s)   "delay_ms": 0             answer after this long
  "never": true              never answer     "rcode": 2                answer with this RCODE (2: SERVFAIL)
  "a_counter": true          one A record 10.99.0.N, N = the how-manieth A question for the name
Names are matched case-insensitively, without a final dot. Other names get NXDOMAIN;
a known name without records of the asked type gets an empty NOERROR answer (NODATA).

--port 0 (default) picks a free port; the port is written to --port-file (written
whole, then renamed into place) and printed. --log PATH appends one line per
question ("<name> <A|AAAA|type>") before answering, flushed, so a test can count
the queries that reached the server. --parent PID: exit when that process is gone
(a crashed test leaves no server behind).
"""
import argparse
import heapq
import json
import os
import select
import socket
import struct
import sys
import time

QTYPE_A, QTYPE_AAAA = 1, 28


def parse_question(packet):
    """(id, flags, name, qtype, end of question) or None."""
    if len(packet) < 12:
        return None
    qid, flags, qdcount = struct.unpack("!HHH", packet[:6])
    if qdcount != 1:
        return None
    labels, pos = [], 12
    while True:
        if pos >= len(packet):
            return None
        n = packet[pos]
        pos += 1
        if n == 0:
            break
        if n & 0xC0 or pos + n > len(packet):
            return None
        labels.append(packet[pos:pos + n].decode("ascii", "replace"))
        pos += n
    if pos + 4 > len(packet):
        return None
    qtype, _qclass = struct.unpack("!HH", packet[pos:pos + 4])
    return qid, flags, ".".join(labels).lower(), qtype, pos + 4


def build_answer(packet, parsed, zone, counters):
    qid, flags, name, qtype, qend = parsed
    entry = zone.get(name)
    rcode, records = 0, []
    if entry is None:
        rcode = 3  # NXDOMAIN
    elif entry.get("rcode"):
        rcode = int(entry["rcode"])
    else:
        ttl = int(entry.get("ttl", 60))
        if qtype == QTYPE_A:
            if entry.get("a_counter"):
                addrs = ["10.99.0.%d" % (counters.get(name, 0) % 250 + 1)]
            else:
                addrs = entry.get("a", [])
            records = [(QTYPE_A, ttl, socket.inet_pton(socket.AF_INET, a)) for a in addrs]
        elif qtype == QTYPE_AAAA:
            records = [(QTYPE_AAAA, ttl, socket.inet_pton(socket.AF_INET6, a)) for a in entry.get("aaaa", [])]
    out = struct.pack("!HHHHHH", qid, 0x8000 | 0x0400 | (flags & 0x0100) | 0x0080 | rcode, 1, len(records), 0, 0)
    out += packet[12:qend]
    for rtype, ttl, rdata in records:
        out += struct.pack("!HHHIH", 0xC00C, rtype, 1, ttl, len(rdata)) + rdata
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--zone")
    ap.add_argument("--zone-file")
    ap.add_argument("--log")
    ap.add_argument("--parent", type=int)
    args = ap.parse_args()
    text = args.zone if args.zone else open(args.zone_file).read() if args.zone_file else "{}"
    zone = {k.lower().rstrip("."): v for k, v in json.loads(text).items()}

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", args.port))
    port = sock.getsockname()[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, args.port_file)
    print("dns_server: listening on 127.0.0.1:%d" % port, flush=True)
    log = open(args.log, "a") if args.log else None

    counters = {}  # name -> A questions so far
    later = []     # heap of (due, seq, answer, address)
    seq = 0
    while True:
        if args.parent and not os.path.exists("/proc/%d" % args.parent):
            return 0
        now = time.monotonic()
        while later and later[0][0] <= now:
            _, _, answer, addr = heapq.heappop(later)
            sock.sendto(answer, addr)
        timeout = 0.5 if not later else max(0.0, min(0.5, later[0][0] - now))
        ready, _, _ = select.select([sock], [], [], timeout)
        if not ready:
            continue
        packet, addr = sock.recvfrom(4096)
        parsed = parse_question(packet)
        if not parsed:
            continue
        name, qtype = parsed[2], parsed[3]
        if log:
            log.write("%s %s\n" % (name, {QTYPE_A: "A", QTYPE_AAAA: "AAAA"}.get(qtype, str(qtype))))
            log.flush()
        entry = zone.get(name, {})
        if qtype == QTYPE_A:
            counters[name] = counters.get(name, 0) + 1
        if entry.get("never"):
            continue
        answer = build_answer(packet, parsed, zone, {name: counters.get(name, 1) - 1})
        delay = entry.get("delay_ms", 0) / 1000.0
        if delay <= 0:
            sock.sendto(answer, addr)
        else:
            seq += 1
            heapq.heappush(later, (time.monotonic() + delay, seq, answer, addr))


if __name__ == "__main__":
    sys.exit(main())
