"""Bulk / paced TCP sender and discarding receiver for the hscc-trace testbed.

Run inside the testbed's network namespaces by ``run.py``; stdlib only, so it runs with any
Python 3.11. The sender chooses the kernel congestion control by name (``TCP_CONGESTION``),
binds a fixed source port (so tracepoint filters and the capture know the flow) and, with
``--app-rate``, writes at a fixed application rate instead of as fast as the socket accepts.
The receiver can shrink its receive buffer (``SO_RCVBUF`` before ``listen``) to make the flow
receive-window-limited. Both write a JSON summary; the sender's includes the kernel's
``TCP_INFO`` counters (bytes_acked, total_retrans, busy/rwnd-limited/sndbuf-limited time).

    python flow.py recv --port 5001 [--rcvbuf BYTES] --out recv.json
    python flow.py send --dst 10.77.0.2 --port 5001 --sport 40001 --cc reno --duration 10
                        [--app-rate BIT_PER_S] [--app-chunk BYTES] --out send.json
"""

from __future__ import annotations

import argparse
import fcntl
import json
import socket
import struct
import threading
import time

TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
TCP_INFO = getattr(socket, "TCP_INFO", 11)
TCP_CC_INFO = getattr(socket, "TCP_CC_INFO", 26)
SIOCOUTQ = 0x5411  # linux/sockios.h (= TIOCOUTQ): unacknowledged bytes of a TCP socket


def tcp_info(sock: socket.socket) -> dict[str, int]:
    """Selected ``struct tcp_info`` fields (linux/tcp.h layout, x86-64)."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 232)
    raw = raw.ljust(232, b"\0")
    u8 = raw[:8]
    (rto, ato, snd_mss, rcv_mss, unacked, sacked, lost, retrans, fackets) = struct.unpack_from("<9I", raw, 8)
    (pmtu, rcv_ssthresh, rtt, rttvar, snd_ssthresh, snd_cwnd, advmss, reordering) = struct.unpack_from("<8I", raw, 60)
    (total_retrans,) = struct.unpack_from("<I", raw, 100)
    (pacing_rate, max_pacing_rate, bytes_acked, bytes_received) = struct.unpack_from("<4Q", raw, 104)
    (segs_out, segs_in, notsent, min_rtt, data_segs_in, data_segs_out) = struct.unpack_from("<6I", raw, 136)
    (delivery_rate, busy_time, rwnd_limited, sndbuf_limited) = struct.unpack_from("<4Q", raw, 160)
    (bytes_sent, bytes_retrans) = struct.unpack_from("<2Q", raw, 200)
    return {
        "state": u8[0],
        "ca_state": u8[1],
        "snd_mss": snd_mss,
        "rcv_mss": rcv_mss,
        "snd_ssthresh": snd_ssthresh,
        "snd_cwnd": snd_cwnd,
        "rtt_us": rtt,
        "min_rtt_us": min_rtt,
        "total_retrans": total_retrans,
        "bytes_acked": bytes_acked,
        "bytes_received": bytes_received,
        "bytes_sent": bytes_sent,
        "bytes_retrans": bytes_retrans,
        "segs_out": segs_out,
        "data_segs_out": data_segs_out,
        "data_segs_in": data_segs_in,
        "delivery_rate_Bps": delivery_rate,
        "delivery_rate_app_limited": u8[7] & 1,
        "busy_time_us": busy_time,
        "rwnd_limited_us": rwnd_limited,
        "sndbuf_limited_us": sndbuf_limited,
    }


def recv(args: argparse.Namespace) -> None:
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if args.rcvbuf:
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
    if args.cc:  # the listener's congestion control is inherited by the accepted socket
        ls.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, args.cc.encode())
    ls.bind(("0.0.0.0", args.port))
    ls.listen(1)
    ls.settimeout(args.timeout)
    conn, peer = ls.accept()
    conn.settimeout(args.timeout)
    total = 0
    t0 = time.time()
    buf = bytearray(1 << 16)
    while True:
        n = conn.recv_into(buf)
        if not n:
            break
        total += n
    t1 = time.time()
    out = {
        "peer": list(peer),
        "bytes": total,
        "seconds": t1 - t0,
        "rcvbuf": conn.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
        "cc": conn.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).rstrip(b"\0").decode(),
        "tcp_info": tcp_info(conn),
    }
    conn.close()
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


def poll_cc_info(sock: socket.socket, every: float, stop: threading.Event, rows: list) -> None:
    """Sample the kernel's BBR state every ``every`` s until ``stop``: ``TCP_CC_INFO`` (struct
    tcp_bbr_info: bw in payload bytes/s, min_rtt µs, pacing/cwnd gain in 1/256) and, from
    ``TCP_INFO``, snd_cwnd, pacing_rate (bytes/s), delivery_rate (bytes/s), bytes_acked; each row
    stamped with CLOCK_REALTIME ns (the capture's clock) taken just before the two calls."""
    while not stop.is_set():
        t = time.clock_gettime_ns(time.CLOCK_REALTIME)
        try:
            cc = sock.getsockopt(socket.IPPROTO_TCP, TCP_CC_INFO, 20).ljust(20, b"\0")
            info = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 232).ljust(232, b"\0")
        except OSError:
            break
        bw_lo, bw_hi, min_rtt, pg, cg = struct.unpack_from("<5I", cc, 0)
        (snd_cwnd,) = struct.unpack_from("<I", info, 80)
        (pacing_rate,) = struct.unpack_from("<Q", info, 104)
        (bytes_acked,) = struct.unpack_from("<Q", info, 120)
        (delivery_rate,) = struct.unpack_from("<Q", info, 160)
        rows.append([t, (bw_hi << 32) | bw_lo, min_rtt, pg, cg, snd_cwnd, pacing_rate, delivery_rate, bytes_acked])
        time.sleep(every)


def send(args: argparse.Namespace) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, args.cc.encode())
    s.bind(("0.0.0.0", args.sport))
    s.connect((args.dst, args.port))
    cc = s.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).rstrip(b"\0").decode()
    poller, stop, rows = None, threading.Event(), []
    if args.cc_info_out and cc == "bbr":
        poller = threading.Thread(target=poll_cc_info, args=(s, args.cc_info_every, stop, rows), daemon=True)
        poller.start()
    t0 = time.monotonic()
    end = t0 + args.duration
    sent = 0
    if args.app_rate:
        chunk = b"\xa5" * args.app_chunk
        period = args.app_chunk * 8.0 / args.app_rate
        nxt = t0
        while True:
            now = time.monotonic()
            if now >= end:
                break
            if now < nxt:
                time.sleep(nxt - now)
                continue
            s.sendall(chunk)
            sent += len(chunk)
            nxt += period
    else:
        chunk = b"\x5a" * (1 << 16)
        s.settimeout(0.2)
        while time.monotonic() < end:
            try:
                sent += s.send(chunk)
            except TimeoutError:
                pass
        s.settimeout(None)
    info_before_close = tcp_info(s)
    if poller is not None:
        stop.set()
        poller.join()
        cols = [
            "ts_ns",
            "bbr_bw_Bps",
            "bbr_min_rtt_us",
            "bbr_pacing_gain",
            "bbr_cwnd_gain",
            "snd_cwnd",
            "pacing_rate_Bps",
            "delivery_rate_Bps",
            "bytes_acked",
        ]
        with open(args.cc_info_out, "w") as f:
            json.dump({"columns": cols, "rows": rows}, f)
    if args.wait_acked:
        # keep the connection established until everything written is acknowledged (SIOCOUTQ:
        # bytes not yet acked), so that tcp_probe — which stops at shutdown (FIN_WAIT1) — covers
        # the whole transfer, including the send buffer's drain
        deadline = time.monotonic() + args.drain_timeout
        while time.monotonic() < deadline:
            left = struct.unpack("i", fcntl.ioctl(s.fileno(), SIOCOUTQ, b"\0" * 4))[0]
            if left == 0:
                break
            time.sleep(0.005)
    s.shutdown(socket.SHUT_WR)
    s.settimeout(args.drain_timeout)
    try:
        while s.recv(4096):
            pass
    except TimeoutError:
        pass
    t1 = time.monotonic()
    out = {
        "cc": cc,
        "bytes_written": sent,
        "seconds_writing": args.duration,
        "seconds_total": t1 - t0,
        "tcp_info_at_end_of_writing": info_before_close,
        "tcp_info_final": tcp_info(s),
    }
    s.close()
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--rcvbuf", type=int, default=0, help="SO_RCVBUF in bytes (0 = kernel autotuning)")
    r.add_argument("--timeout", type=float, default=60.0)
    r.add_argument("--cc", default="", help="receiver's congestion control (DCTCP's ECE echo needs it)")
    r.add_argument("--out", required=True)
    s = sub.add_parser("send")
    s.add_argument("--dst", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--sport", type=int, required=True)
    s.add_argument("--cc", required=True)
    s.add_argument("--duration", type=float, required=True, help="seconds of writing")
    s.add_argument("--app-rate", type=float, default=0.0, help="application write rate, bit/s (0 = bulk)")
    s.add_argument("--app-chunk", type=int, default=1448, help="bytes per paced write")
    s.add_argument("--drain-timeout", type=float, default=10.0)
    s.add_argument("--wait-acked", action="store_true", help="shut down only when everything written is acknowledged")
    s.add_argument("--out", required=True)
    s.add_argument("--cc-info-out", default="", help="with cc bbr: poll TCP_CC_INFO/TCP_INFO into this JSON file")
    s.add_argument("--cc-info-every", type=float, default=0.002, help="seconds between polls")
    a = p.parse_args()
    recv(a) if a.cmd == "recv" else send(a)


if __name__ == "__main__":
    main()
