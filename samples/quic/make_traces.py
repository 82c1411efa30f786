"""Labelled QUIC traces from aioquic over a simulated link (sans-I/O, simulated clock).

A client and a server (aioquic ``QuicConnection``, no sockets) exchange datagrams through a
simulated link: per direction a bottleneck of ``--rate`` bit/s with a drop-tail queue of
``--queue`` packets, a one-way propagation delay of ``--rtt``/2, and a seeded Bernoulli loss of
``--loss`` on the data direction (server → client). The client opens one bidirectional stream;
the server sends bulk data on it for ``--seconds`` of simulated time with congestion control
``--cc`` (aioquic's ``congestion_control_algorithm``). Both ends log qlog with aioquic's own
``QuicLogger``; its event times (``time.time()`` in aioquic) are read from the simulated clock,
so a 10 s transfer takes the CPU time aioquic needs, not 10 s of wall time, and the trace
times are those of the simulation (starting at 0).

The server's trace (the data sender: its ``recovery:metrics_updated`` window is the truth) is
written to ``OUT`` (gzip when it ends with ``.gz``); ``--client OUT2`` writes the receiver's.

    python samples/quic/make_traces.py --cc reno --loss 0 --queue 60 -o samples/quic/reno-queue.qlog.gz
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import heapq
import json
import random
import sys
from collections import deque
from pathlib import Path

import aioquic.quic.logger as qlogger
from aioquic.buffer import Buffer
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.events import StreamDataReceived
from aioquic.quic.logger import QuicLogger
from aioquic.quic.packet import pull_quic_header
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


class _Clock:
    """Stands in for the ``time`` module inside aioquic's logger: ``time()`` is the simulation's now."""

    now = 0.0

    def time(self) -> float:
        return self.now


CLOCK = _Clock()
qlogger.time = CLOCK  # type: ignore[assignment]


def _certificate() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(start)
        .not_valid_after(start + datetime.timedelta(days=3650))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


class Link:
    """One direction: a drop-tail FIFO served at ``rate`` bit/s, then ``delay`` s of propagation."""

    def __init__(self, rate: float, delay: float, queue: int, loss: float, rng: random.Random) -> None:
        self.rate, self.delay, self.queue, self.loss, self.rng = rate, delay, queue, loss, rng
        self.busy_until = 0.0  # when the bottleneck finishes the last packet accepted
        self.backlog: deque[float] = deque()  # departure times of packets queued or in service
        self.dropped_queue = 0
        self.dropped_random = 0

    def send(self, now: float, size: int) -> float | None:
        """The arrival time of a datagram of ``size`` bytes offered at ``now``, or None if dropped."""
        while self.backlog and self.backlog[0] <= now:
            self.backlog.popleft()
        if len(self.backlog) >= self.queue:
            self.dropped_queue += 1
            return None
        start = max(now, self.busy_until)
        self.busy_until = start + (size + 28) * 8 / self.rate  # + IPv4/UDP headers
        self.backlog.append(self.busy_until)
        if self.loss and self.rng.random() < self.loss:
            self.dropped_random += 1
            return None
        return self.busy_until + self.delay


def run(args: argparse.Namespace) -> dict:
    rng = random.Random(args.seed)
    cert, key = _certificate()
    qc, qs = QuicLogger(), QuicLogger()
    big = 64 * 1024 * 1024  # flow control out of the way: the sender is window-limited by cwnd alone
    common = dict(
        alpn_protocols=["bulk"],
        congestion_control_algorithm=args.cc,
        max_data=big,
        max_stream_data=big,
        idle_timeout=30.0,
    )
    client = QuicConnection(configuration=QuicConfiguration(is_client=True, quic_logger=qc, **common))
    client._configuration.verify_mode = 0  # self-signed
    scfg = QuicConfiguration(is_client=False, quic_logger=qs, **common)
    scfg.certificate, scfg.private_key = cert, key
    server: QuicConnection | None = None
    caddr, saddr = ("10.0.0.1", 4433), ("10.0.0.2", 443)
    down = Link(args.rate, args.rtt / 2, args.queue, args.loss, rng)  # server -> client (data)
    up = Link(args.rate, args.rtt / 2, args.queue, 0.0, rng)  # client -> server (ACKs)
    arrivals: list[tuple[float, int, str, bytes]] = []  # (time, seq, to, datagram)
    seq = 0
    stream_id = None
    sent = 0
    chunk = b"\0" * 65536
    finished = False

    def flush(conn: QuicConnection, now: float, link: Link, to: str) -> None:
        nonlocal seq
        for data, _addr in conn.datagrams_to_send(now=now):
            t = link.send(now, len(data))
            if t is not None:
                seq += 1
                heapq.heappush(arrivals, (t, seq, to, data))

    now = 0.0
    CLOCK.now = now
    client.connect(saddr, now=now)
    flush(client, now, up, "server")
    server_stream = None
    spins = 0  # loop passes in a row that did not move the clock
    while now < args.seconds + 5.0:
        timers = [t for t in (client.get_timer(), server.get_timer() if server else None) if t is not None]
        nxt = min([arrivals[0][0]] + timers if arrivals else timers or [now + 0.01])
        spins = spins + 1 if nxt <= now else 0
        # aioquic's pacer can report a timer at `now` that handling at `now` does not clear (its
        # own float arithmetic puts the next send a hair later): 1 µs on, so the run cannot spin
        now = now + 1e-6 if spins > 3 else max(now, nxt)
        CLOCK.now = now
        while arrivals and arrivals[0][0] <= now:
            _, _, to, data = heapq.heappop(arrivals)
            if to == "server":
                if server is None:  # the server learns the client's ODCID from its first Initial
                    hdr = pull_quic_header(Buffer(data=data), host_cid_length=8)
                    server = QuicConnection(configuration=scfg, original_destination_connection_id=hdr.destination_cid)
                server.receive_datagram(data, caddr, now=now)
            else:
                client.receive_datagram(data, saddr, now=now)
        for conn in (client, server):
            if conn is None:
                continue
            t = conn.get_timer()
            if t is not None and t <= now:
                conn.handle_timer(now=now)
        # application: the client asks once; the server keeps its stream's send buffer topped up
        if stream_id is None and client._handshake_complete:
            stream_id = client.get_next_available_stream_id()
            client.send_stream_data(stream_id, b"GET", end_stream=True)
        if server is not None:
            while (ev := server.next_event()) is not None:
                if isinstance(ev, StreamDataReceived) and server_stream is None:
                    server_stream = ev.stream_id
                    start = now
            if server_stream is not None and not finished:
                stream = server._streams[server_stream]
                while stream.sender._buffer_stop - stream.sender.highest_offset < 1_000_000:  # unsent bytes
                    if now - start >= args.seconds:
                        server.send_stream_data(server_stream, b"", end_stream=True)
                        finished = True
                        break
                    server.send_stream_data(server_stream, chunk)
                    sent += len(chunk)
        while (ev := client.next_event()) is not None:
            pass
        flush(client, now, up, "server")
        if server is not None:
            flush(server, now, down, "client")
        if (
            finished
            and server is not None
            and (server_stream not in server._streams or server._streams[server_stream].sender.is_finished)
        ):
            break
    for conn in (client, server):
        if conn is not None:
            conn.close()
            flush(conn, now, up, "x")
    return {
        "server": qs.to_dict(),
        "client": qc.to_dict(),
        "stats": {
            "queued_drops": down.dropped_queue,
            "random_drops": down.dropped_random,
            "ack_path_drops": up.dropped_queue,
            "bytes_written": sent,
        },
    }


def _write(doc: dict, path: Path) -> None:
    raw = json.dumps(doc, separators=(",", ":")).encode()
    path.write_bytes(gzip.compress(raw, 9, mtime=0) if path.suffix == ".gz" else raw)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cc", choices=("reno", "cubic"), default="reno")
    ap.add_argument("--rate", type=float, default=10e6, help="bottleneck rate, bit/s (default 10e6)")
    ap.add_argument("--rtt", type=float, default=0.04, help="base RTT, s (default 0.04)")
    ap.add_argument("--queue", type=int, default=40, help="drop-tail queue, packets (default 40)")
    ap.add_argument("--loss", type=float, default=0.0, help="random loss on the data direction (default 0)")
    ap.add_argument("--seconds", type=float, default=10.0, help="bulk transfer, simulated s (default 10)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--out", type=Path, required=True, help="server (data sender) qlog")
    ap.add_argument("--client", type=Path, help="also write the client's (receiver's) qlog")
    args = ap.parse_args(argv)
    res = run(args)
    prov = {k: getattr(args, k) for k in ("cc", "rate", "rtt", "queue", "loss", "seconds", "seed")}
    prov["command"] = "python samples/quic/make_traces.py " + " ".join(sys.argv[1:] if argv is None else argv)
    res["server"]["hscc_trace_label"] = {**prov, **res["stats"], "vantage": "server"}
    _write(res["server"], args.out)
    if args.client:
        res["client"]["hscc_trace_label"] = {**prov, **res["stats"], "vantage": "client"}
        _write(res["client"], args.client)
    print(json.dumps({**prov, **res["stats"]}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
