"""A qlog trace → one QUIC connection's event streams, from the data sender's point of view.

Each trace (one vantage point) is split by ``group_id`` into connections. Per connection, in
event order (stable by time), the events that matter are mapped from the names stacks write —
``transport:`` / ``recovery:`` (qlog 0.3/0.4, draft-00/01) and ``quic:`` (the IETF quic-events
drafts, which renamed ``recovery:metrics_updated`` to ``quic:recovery_metrics_updated``) — to:

* ``sent``: every packet this endpoint sent (``packet_sent``): packet number, packet-number
  space (RFC 9000 §12.3: Initial, Handshake, application data for 0-RTT and 1-RTT), size in bytes
  (``raw.length``, else the draft-01 ``header.packet_size``), ack-eliciting (RFC 9002 §2: a frame
  other than ACK, PADDING or CONNECTION_CLOSE) and in flight (ack-eliciting or PADDING);
* ``acks``: every ACK frame it received (in a ``packet_received``), with its space (that of the
  packet carrying it), ``acked_ranges``, ``ack_delay`` and ECN counts; and, computed here as RFC
  9002 defines them: the packets and bytes it newly acknowledges, the RTT sample (§5.1: only
  when the largest acknowledged packet is newly acknowledged and at least one newly acknowledged
  packet is ack-eliciting) and the estimator after it (§5.2 min_rtt, §5.3 smoothed_rtt /
  rttvar, the ack delay ignored in the Initial space and capped by the peer's max_ack_delay once
  the handshake is confirmed), our own loss detection (§6.1: packet threshold 3, time threshold
  9/8 · max(smoothed_rtt, latest_rtt), at least 1 ms granularity, with the loss timer of §6.1.2
  fired between events) and the bytes in flight that follow;
* ``lost``: the stack's own ``packet_lost`` events, and ``detected``: ours, with the time each
  was declared — the two compared (``loss_check``);
* ``metrics``: the stack's ``metrics_updated`` values (``cwnd`` or ``congestion_window``,
  ``bytes_in_flight``, ``ssthresh``, the RTTs), forward-filled, since stacks log a field only when
  it changes: the sender's own truth.

Times are seconds from the trace's first event; sizes bytes. Packets lost and acknowledged later
(a spurious loss) stay lost, as in RFC 9002 (the sender forgot them).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from hscc_trace.errors import InputError, Warn
from hscc_trace.qlog.reader import Event, QlogFile, Trace, read

#: RFC 9002 §6.1.1 kPacketThreshold (packets)
PACKET_THRESHOLD = 3
#: RFC 9002 §6.1.2 kTimeThreshold (× max(smoothed_rtt, latest_rtt))
TIME_THRESHOLD = 9 / 8
#: RFC 9002 §6.1.2 kGranularity (s)
GRANULARITY = 0.001
#: RFC 9002 §6.2.2 kInitialRtt (s), used before the first RTT sample
INITIAL_RTT = 0.333
#: RFC 9000 §18.2 defaults: ack_delay_exponent 3, max_ack_delay 25 ms
DEFAULT_ACK_DELAY_EXPONENT = 3
DEFAULT_MAX_ACK_DELAY = 0.025
#: RFC 9000 §14.1: the smallest maximum datagram size, the default when the trace names none (bytes)
DEFAULT_MAX_DATAGRAM_SIZE = 1200

SPACES = ("initial", "handshake", "application_data")
_SPACE_OF = {
    "initial": 0,
    "handshake": 1,
    "0rtt": 2,
    "1rtt": 2,
    "onertt": 2,
    "zerortt": 2,
    "application": 2,
    "application_data": 2,
    "short": 2,
}
#: frames that do not make a packet ack-eliciting (RFC 9002 §2)
_NOT_ELICITING = {"ack", "ack_ecn", "padding", "connection_close"}

_METRIC_KEYS = {
    "cwnd": "cwnd",
    "congestion_window": "cwnd",
    "bytes_in_flight": "bytes_in_flight",
    "ssthresh": "ssthresh",
    "smoothed_rtt": "smoothed_rtt",
    "min_rtt": "min_rtt",
    "latest_rtt": "latest_rtt",
    "rtt_variance": "rtt_variance",
    "pacing_rate": "pacing_rate",
}
METRICS = ("cwnd", "bytes_in_flight", "ssthresh", "smoothed_rtt", "min_rtt", "latest_rtt", "rtt_variance")


def kind_of(name: str) -> str | None:
    """The canonical event a qlog name stands for, or None: ``transport:packet_sent``,
    ``quic:packet_sent`` → ``packet_sent``; ``recovery:metrics_updated``,
    ``quic:recovery_metrics_updated``, draft-00 ``recovery:metric_update`` → ``metrics_updated``."""
    ev = name.rsplit(":", 1)[-1]
    if ev in ("packet_sent", "packet_received", "packet_lost", "parameters_set"):
        return ev
    if ev in ("metrics_updated", "metric_update", "recovery_metrics_updated", "metrics_update"):
        return "metrics_updated"
    if ev in ("congestion_state_updated", "recovery_congestion_state_updated"):
        return "congestion_state_updated"
    if ev in ("transport_parameters_set",):
        return "parameters_set"
    return None


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            return None
        return x if math.isfinite(x) else None
    return None


def _int(v: Any) -> int | None:
    x = _num(v)
    return None if x is None or x != int(x) else int(x)


def _obj(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _space(data: dict[str, Any]) -> int:
    hdr = _obj(data.get("header"))
    for v in (
        data.get("packet_number_space"),
        hdr.get("packet_number_space"),
        hdr.get("packet_type"),
        data.get("packet_type"),
        data.get("type"),
    ):
        if isinstance(v, str) and v.lower() in _SPACE_OF:
            return _SPACE_OF[v.lower()]
    return 2


def _pn(data: dict[str, Any]) -> int | None:
    hdr = _obj(data.get("header"))
    pn = _int(hdr.get("packet_number"))
    return pn if pn is not None else _int(data.get("packet_number"))


def _size(data: dict[str, Any]) -> int | None:
    raw = _obj(data.get("raw"))
    hdr = _obj(data.get("header"))
    for v in (raw.get("length"), hdr.get("packet_size"), data.get("packet_size"), data.get("length")):
        n = _int(v)
        if n is not None and n >= 0:
            return n
    return None


def _frames(data: dict[str, Any]) -> list[dict[str, Any]] | None:
    fr = data.get("frames")
    if not isinstance(fr, list):
        return None
    return [f for f in fr if isinstance(f, dict)]


def _ranges(frame: dict[str, Any]) -> list[tuple[int, int]]:
    out = []
    for r in frame.get("acked_ranges") or []:
        if isinstance(r, list | tuple) and r:
            a = _int(r[0])
            b = _int(r[-1])
            if a is not None and b is not None and 0 <= a <= b:
                out.append((a, b))
    return out


@dataclass
class _Sent:
    pn: int
    space: int
    t: float
    size: int
    eliciting: bool
    in_flight: bool
    state: int = 0  # 0 outstanding, 1 acked, 2 lost (ours), 3 discarded


@dataclass
class Connection:
    """One QUIC connection of a qlog (one trace, one group id), from the logging endpoint."""

    path: str
    trace: int
    group: str | None
    vantage: str  # the logging endpoint: client / server / network / unknown
    data_sender: str  # "this endpoint" side name: the vantage when it sent more than it received, else its peer
    is_sender: bool  # the logging endpoint is the data sender (its window is the one logged)
    max_datagram_size: int
    peer_ack_delay_exponent: int
    peer_max_ack_delay_s: float
    handshake_confirmed_s: float | None
    sent: pl.DataFrame  # t_s, pn, space, size, ack_eliciting, in_flight, acked_s, lost_s (ours), lost_logged_s
    acks: pl.DataFrame  # one row per ACK frame received, see streams docstring
    lost: pl.DataFrame  # the stack's packet_lost: t_s, pn, space, trigger, event
    detected: pl.DataFrame  # our RFC 9002 §6.1 detection: t_s, pn, space, rule
    metrics: pl.DataFrame  # the stack's logged values per metrics event, forward-filled
    timeline: list[tuple] = field(default_factory=list, repr=False)  # replay input (hscc_trace.qlog.replay)
    warnings: list[Warn] = field(default_factory=list)
    bytes_sent: int = 0
    bytes_received: int = 0

    def loss_check(self) -> dict[str, Any]:
        """The stack's losses against ours (RFC 9002 §6.1), application-data space: counts of
        packets both declared, only the stack, only ours, and the median delay of ours after the
        stack's on the common ones (s)."""
        a = self.lost.filter(pl.col("space") == "application_data")
        b = self.detected.filter(pl.col("space") == "application_data")
        sa = dict(zip(a["pn"].to_list(), a["t_s"].to_list(), strict=True))
        sb = dict(zip(b["pn"].to_list(), b["t_s"].to_list(), strict=True))
        both = sorted(set(sa) & set(sb))
        dt = sorted(sb[p] - sa[p] for p in both)
        return {
            "stack": len(sa),
            "ours": len(sb),
            "both": len(both),
            "stack_only": len(set(sa) - set(sb)),
            "ours_only": len(set(sb) - set(sa)),
            "median_delay_s": dt[len(dt) // 2] if dt else None,
        }


def connections(path: str, qf: QlogFile | None = None) -> tuple[list[Connection], list[Warn]]:
    """Every connection of a qlog file (:func:`hscc_trace.qlog.reader.read`), with the warnings."""
    qf = qf if qf is not None else read(path)
    warns = list(qf.warnings)
    out: list[Connection] = []
    for tr in qf.traces:
        groups: dict[str | None, list[Event]] = {}
        for ev in tr.events:
            groups.setdefault(ev.group, []).append(ev)
        for g, evs in groups.items():
            c = _connection(qf.path, tr, g, evs)
            if c is not None:
                out.append(c)
                warns += c.warnings
    if not out:
        raise InputError(f"{path}: qlog without a QUIC connection (no packet_sent or packet_received events)")
    return out, warns


def _connection(path: str, tr: Trace, group: str | None, evs: list[Event]) -> Connection | None:
    evs = sorted(evs, key=lambda e: e.time_ms)  # stable: the stack's order among equal times
    warn: dict[str, int] = {}

    def w(msg: str) -> None:
        warn[msg] = warn.get(msg, 0) + 1

    exp = DEFAULT_ACK_DELAY_EXPONENT
    mad = DEFAULT_MAX_ACK_DELAY
    mds = None
    for e in evs:
        if kind_of(e.name) == "parameters_set":
            owner = str(e.data.get("owner", "")).lower()
            if owner == "remote":
                v = _int(e.data.get("ack_delay_exponent"))
                exp = v if v is not None and 0 <= v <= 20 else exp
                m = _num(e.data.get("max_ack_delay"))
                mad = m / 1000.0 if m is not None and 0 <= m < 2**14 else mad
            elif owner in ("local", ""):
                v = _int(e.data.get("max_udp_payload_size") or e.data.get("max_datagram_size"))
                mds = v if v is not None and v >= 1200 else mds

    sent: dict[int, dict[int, _Sent]] = {0: {}, 1: {}, 2: {}}
    order: dict[int, list[int]] = {0: [], 1: [], 2: []}  # outstanding packet numbers, ascending
    rows_sent: list[_Sent] = []
    ack_rows: list[dict[str, Any]] = []
    lost_rows: list[dict[str, Any]] = []
    det_rows: list[dict[str, Any]] = []
    met_rows: list[dict[str, Any]] = []
    timeline: list[tuple] = []
    cur: dict[str, float | None] = dict.fromkeys(METRICS)
    largest_acked = {0: -1, 1: -1, 2: -1}
    loss_time: dict[int, float | None] = {0: None, 1: None, 2: None}
    rtt: dict[str, float] = {"latest": 0.0, "min": math.inf, "smoothed": INITIAL_RTT, "var": INITIAL_RTT / 2}
    have_rtt = False
    confirmed: float | None = None
    in_flight = 0
    bytes_sent = bytes_received = 0
    logged_lost: dict[tuple[int, int], float] = {}

    def remove(sp: int, pn: int) -> None:
        lst = order[sp]
        i = bisect.bisect_left(lst, pn)
        if i < len(lst) and lst[i] == pn:
            del lst[i]

    def detect(sp: int, now: float, rule_timer: bool) -> list[_Sent]:
        """RFC 9002 §6.1 (Appendix A.10 DetectAndRemoveLostPackets) in space ``sp`` at ``now``."""
        nonlocal in_flight
        la = largest_acked[sp]
        loss_time[sp] = None
        if la < 0:
            return []
        delay = TIME_THRESHOLD * (max(rtt["latest"], rtt["smoothed"]) if have_rtt else INITIAL_RTT)
        delay = max(delay, GRANULARITY)
        lost: list[_Sent] = []
        for pn in list(order[sp]):
            if pn > la:
                break
            p = sent[sp][pn]
            if p.t + delay <= now or la >= pn + PACKET_THRESHOLD:  # (the timer's own sum: no rounding loop)
                lost.append(p)
            else:
                lt = p.t + delay
                cur_lt = loss_time[sp]
                if cur_lt is None or lt < cur_lt:
                    loss_time[sp] = lt
        for p in lost:
            p.state = 2
            remove(sp, p.pn)
            if p.in_flight:
                in_flight -= p.size
            rule = "packet" if la >= p.pn + PACKET_THRESHOLD else "time"
            det_rows.append(
                {"t_s": now, "pn": p.pn, "space": SPACES[sp], "rule": rule + ("_timer" if rule_timer else "")}
            )
        return lost

    def fire_timers(now: float) -> None:
        while True:
            due = [(lt, sp) for sp, lt in loss_time.items() if lt is not None and lt <= now]  # (lt: float)
            if not due:
                return
            lt, sp = min(due)
            lost = detect(sp, lt, True)
            if lost:
                timeline.append(("lost_ours", lt, [(p.pn, p.t, p.size, p.in_flight, p.eliciting) for p in lost], sp))

    for idx, e in enumerate(evs):
        k = kind_of(e.name)
        if k is None:
            continue
        now = e.time_ms / 1000.0
        d = e.data
        fire_timers(now)
        if k == "packet_sent":
            pn = _pn(d)
            if pn is None:
                w("packet_sent without a packet number: skipped")
                continue
            sp = _space(d)
            size = _size(d)
            if size is None:
                w("packet_sent without a size: counted as 0 bytes")
                size = 0
            fr = _frames(d)
            if fr is None:
                eliciting = in_fl = True
                w("packet_sent without frames: taken as ack-eliciting")
            else:
                types = {str(f.get("frame_type", "")).lower() for f in fr}
                eliciting = bool(types - _NOT_ELICITING)
                in_fl = eliciting or "padding" in types
                if "handshake_done" in types and confirmed is None:
                    confirmed = now
            if pn in sent[sp]:
                w("packet number sent twice in one space: the later kept")
                remove(sp, pn)
            p = _Sent(pn, sp, now, size, eliciting, in_fl)
            sent[sp][pn] = p
            bisect.insort(order[sp], pn)
            rows_sent.append(p)
            if in_fl:
                in_flight += size
            if sp == 2:
                bytes_sent += size
            timeline.append(("sent", now, pn, size, in_fl, eliciting, sp, idx))
        elif k == "packet_received":
            sp = _space(d)
            fr = _frames(d) or []
            size = _size(d) or 0
            if sp == 2:
                bytes_received += size
            types = {str(f.get("frame_type", "")).lower() for f in fr}
            if "handshake_done" in types and confirmed is None:
                confirmed = now
            for f in fr:
                if str(f.get("frame_type", "")).lower() not in ("ack", "ack_ecn"):
                    continue
                ranges = _ranges(f)
                if not ranges:
                    w("ACK frame without acked_ranges: skipped")
                    continue
                if confirmed is None and sp == 2:
                    confirmed = now  # fallback: the first 1-RTT ACK (RFC 9001 §4.1.2 needs HANDSHAKE_DONE)
                delay_ms = _num(f.get("ack_delay"))
                delay_ms = None if delay_ms is None else delay_ms * tr.duration_ms
                raw_delay = _int(f.get("raw_ack_delay"))
                if delay_ms is None and raw_delay is not None:  # the encoded field: × 2^exponent µs
                    delay_ms = raw_delay * (2**exp) / 1000.0
                ack_delay = max(delay_ms or 0.0, 0.0) / 1000.0
                largest = max(b for _, b in ranges)
                newly: list[_Sent] = []
                lst = order[sp]
                for a, b in ranges:
                    i = bisect.bisect_left(lst, a)
                    j = bisect.bisect_right(lst, b)
                    newly += [sent[sp][pn] for pn in lst[i:j]]
                    del lst[i:j]
                newly.sort(key=lambda p: p.pn)
                for p in newly:
                    p.state = 1
                    if p.in_flight:
                        in_flight -= p.size
                if largest > largest_acked[sp]:
                    largest_acked[sp] = largest
                sample = None
                adj = None
                if newly and newly[-1].pn == largest and any(p.eliciting for p in newly):
                    latest = now - newly[-1].t
                    if latest >= 0:
                        sample = latest
                        rtt["latest"] = latest
                        if not have_rtt:  # RFC 9002 §5.3, the first sample
                            have_rtt = True
                            rtt["min"] = latest
                            rtt["smoothed"] = latest
                            rtt["var"] = latest / 2
                            adj = latest
                        else:
                            rtt["min"] = min(rtt["min"], latest)
                            ad = 0.0 if sp == 0 else ack_delay  # §5.3: Initial's ack delay ignored
                            if confirmed is not None and now >= confirmed:
                                ad = min(ad, mad)
                            adj = latest - ad if latest >= rtt["min"] + ad else latest
                            rtt["var"] = 0.75 * rtt["var"] + 0.25 * abs(rtt["smoothed"] - adj)
                            rtt["smoothed"] = 0.875 * rtt["smoothed"] + 0.125 * adj
                    else:
                        w("ACK before the packet it acknowledges was sent (clock): no RTT sample")
                timeline.append(
                    (
                        "ack",
                        now,
                        [(p.pn, p.t, p.size, p.in_flight, p.eliciting) for p in newly],
                        sp,
                        sample,
                        rtt["smoothed"] if have_rtt else None,
                        rtt["min"] if have_rtt else None,
                        idx,
                        _int(f.get("ce")),  # the ECN-CE count (RFC 9000 §19.3.2), None without ECN
                    )
                )
                lost = detect(sp, now, False) if newly else []
                if lost:
                    timeline.append(
                        ("lost_ours", now, [(p.pn, p.t, p.size, p.in_flight, p.eliciting) for p in lost], sp)
                    )
                ack_rows.append(
                    {
                        "t_s": now,
                        "space": SPACES[sp],
                        "largest": largest,
                        "ranges": len(ranges),
                        "ack_delay_s": ack_delay,
                        "ect0": _int(f.get("ect0")),
                        "ect1": _int(f.get("ect1")),
                        "ce": _int(f.get("ce")),
                        "newly_acked": len(newly),
                        "newly_acked_bytes": sum(p.size for p in newly if p.in_flight),
                        "rtt_sample_s": sample,
                        "adjusted_rtt_s": adj if sample is not None else None,
                        "min_rtt_s": rtt["min"] if have_rtt else None,
                        "smoothed_rtt_s": rtt["smoothed"] if have_rtt else None,
                        "rttvar_s": rtt["var"] if have_rtt else None,
                        "lost_ours": len(lost),
                        "bytes_in_flight": in_flight,
                        "event": idx,
                    }
                )
        elif k == "packet_lost":
            pn = _pn(d)
            if pn is None:
                w("packet_lost without a packet number: skipped")
                continue
            sp = _space(d)
            trig = d.get("trigger")
            lost_rows.append(
                {
                    "t_s": now,
                    "pn": pn,
                    "space": SPACES[sp],
                    "trigger": None if trig is None else str(trig),
                    "event": idx,
                }
            )
            logged_lost[(sp, pn)] = now
            q = sent[sp].get(pn)
            timeline.append(
                (
                    "lost_stack",
                    now,
                    pn,
                    sp,
                    None if q is None else (q.t, q.size, q.in_flight, q.eliciting),
                    largest_acked[sp],
                    idx,
                )
            )
        elif k == "metrics_updated":
            for key, v in d.items():
                name = _METRIC_KEYS.get(key)
                x = _num(v)
                if name is not None and x is not None:
                    cur[name] = x * tr.duration_ms if name.endswith("rtt") or name == "rtt_variance" else x
            met_rows.append({"t_s": now, "event": idx, **cur})
            timeline.append(("metrics", now, dict(cur), idx))
        if confirmed is not None and (sent[0] or sent[1]) and now >= confirmed:
            # RFC 9001 §4.9: Initial and Handshake keys are gone by now; their packets leave the flight
            for sp in (0, 1):
                for pn in order[sp]:
                    p = sent[sp][pn]
                    p.state = 3
                    if p.in_flight:
                        in_flight -= p.size
                order[sp] = []
                sent[sp] = {}
                loss_time[sp] = None
            timeline.append(("discard", now))

    if not rows_sent and not ack_rows:
        return None
    warns = [Warn(f"{path} trace {tr.index}", m, n) for m, n in warn.items()]
    sent_df = pl.DataFrame(
        {
            "t_s": [p.t for p in rows_sent],
            "pn": [p.pn for p in rows_sent],
            "space": [SPACES[p.space] for p in rows_sent],
            "size": [p.size for p in rows_sent],
            "ack_eliciting": [p.eliciting for p in rows_sent],
            "in_flight": [p.in_flight for p in rows_sent],
            "fate": [("outstanding", "acked", "lost", "discarded")[p.state] for p in rows_sent],
            "lost_logged": [(p.space, p.pn) in logged_lost for p in rows_sent],
        },
        schema={
            "t_s": pl.Float64,
            "pn": pl.Int64,
            "space": pl.Utf8,
            "size": pl.Int64,
            "ack_eliciting": pl.Boolean,
            "in_flight": pl.Boolean,
            "fate": pl.Utf8,
            "lost_logged": pl.Boolean,
        },
    )
    ack_schema = {
        "t_s": pl.Float64,
        "space": pl.Utf8,
        "largest": pl.Int64,
        "ranges": pl.Int64,
        "ack_delay_s": pl.Float64,
        "ect0": pl.Int64,
        "ect1": pl.Int64,
        "ce": pl.Int64,
        "newly_acked": pl.Int64,
        "newly_acked_bytes": pl.Int64,
        "rtt_sample_s": pl.Float64,
        "adjusted_rtt_s": pl.Float64,
        "min_rtt_s": pl.Float64,
        "smoothed_rtt_s": pl.Float64,
        "rttvar_s": pl.Float64,
        "lost_ours": pl.Int64,
        "bytes_in_flight": pl.Int64,
        "event": pl.Int64,
    }
    acks_df = pl.DataFrame(ack_rows, schema=ack_schema) if ack_rows else pl.DataFrame(schema=ack_schema)
    lost_schema = {"t_s": pl.Float64, "pn": pl.Int64, "space": pl.Utf8, "trigger": pl.Utf8, "event": pl.Int64}
    lost_df = pl.DataFrame(lost_rows, schema=lost_schema) if lost_rows else pl.DataFrame(schema=lost_schema)
    det_schema = {"t_s": pl.Float64, "pn": pl.Int64, "space": pl.Utf8, "rule": pl.Utf8}
    det_df = pl.DataFrame(det_rows, schema=det_schema) if det_rows else pl.DataFrame(schema=det_schema)
    met_schema = {"t_s": pl.Float64, "event": pl.Int64, **dict.fromkeys(METRICS, pl.Float64)}
    met_df = pl.DataFrame(met_rows, schema=met_schema) if met_rows else pl.DataFrame(schema=met_schema)
    vantage = tr.vantage if tr.vantage in ("client", "server", "network") else "unknown"
    if vantage == "network" and tr.flow in ("client", "server"):
        vantage = tr.flow  # an observer on the path logging one endpoint's flow: read as that endpoint
    is_sender = bytes_sent >= bytes_received
    other = {"client": "server", "server": "client"}.get(vantage, "peer")
    return Connection(
        path=path,
        trace=tr.index,
        group=group,
        vantage=vantage,
        data_sender=vantage if is_sender else other,
        is_sender=is_sender,
        max_datagram_size=mds or _guess_mds(rows_sent),
        peer_ack_delay_exponent=exp,
        peer_max_ack_delay_s=mad,
        handshake_confirmed_s=confirmed,
        sent=sent_df,
        acks=acks_df,
        lost=lost_df,
        detected=det_df,
        metrics=met_df,
        timeline=timeline,
        warnings=warns,
        bytes_sent=bytes_sent,
        bytes_received=bytes_received,
    )


def _guess_mds(rows: list[_Sent]) -> int:
    """The max datagram size the sender used: its most common full-size 1-RTT packet, at least
    RFC 9000's 1200 bytes (aioquic logs none: it keeps 1200 unless configured)."""
    sizes = [p.size for p in rows if p.space == 2 and p.eliciting]
    if not sizes:
        return DEFAULT_MAX_DATAGRAM_SIZE
    top = max(sizes)
    return max(DEFAULT_MAX_DATAGRAM_SIZE, top)
