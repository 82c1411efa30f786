"""The table `hscc-trace flows` prints, and the command's run (:func:`run`).

Kept apart from :mod:`.flows_cmd`, the Typer registration: the command line is parsed by the
one Typer application like every other command's.
"""

from __future__ import annotations

import sys
from typing import Any, Literal


def _fmt_bytes(n: int) -> str:
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


def _fmt_s(x: float | None, scale: float = 1e3, unit: str = "ms") -> str:
    return "—" if x is None else f"{x * scale:.1f} {unit}"


def _endpoint(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


COLUMNS: tuple[tuple[str, Literal["left", "right", "center"]], ...] = (
    ("id", "right"),
    ("A → B", "left"),
    ("pkts A→B/B→A", "right"),
    ("bytes A→B/B→A", "right"),
    ("dur", "right"),
    ("goodput", "right"),
    ("MSS", "right"),
    ("retx+ooo", "right"),
    ("RTT min/med/max", "right"),
    ("RTT by", "left"),
    ("hs", "center"),
    ("end", "left"),
    ("vantage", "left"),
)
#: above this many connections (or when stdout is not a terminal) the table is printed as plain
#: aligned text (rich needs ~1 ms a row, and truncates cells wider than the terminal)
RICH_MAX_ROWS = 500


def cells(r: dict[str, Any]) -> list[str]:
    """The printed cells of one flow row (a dict of schema.FLOWS)."""
    arrow = "⇒" if r["sender_dir"] == 0 else "⇐"
    gp = r["goodput_bps"]
    return [
        str(r["flow_id"]),
        f"{_endpoint(r['src'], r['sport'])} {arrow} {_endpoint(r['dst'], r['dport'])}",
        f"{r['pkts_ab']}/{r['pkts_ba']}",
        f"{_fmt_bytes(r['bytes_ab'])}/{_fmt_bytes(r['bytes_ba'])}",
        f"{r['duration_s']:.2f} s",
        "—" if gp is None else f"{gp / 1e6:.2f} Mb/s",
        "—" if r["mss"] is None else str(r["mss"]),
        f"{r['retrans']}+{r['out_of_order']}",  # Wireshark's retransmissions + its out-of-order segments
        f"{_fmt_s(r['rtt_min_s'])} / {_fmt_s(r['rtt_median_s'])} / {_fmt_s(r['rtt_max_s'])}",
        r.get("rtt_method") or "—",  # how the RTT was measured (docs/flows.md)
        "✓" if r["handshake"] else "·",
        r["closed"],
        r["vantage"],
    ]


def render_table(rows: list[dict[str, Any]], title: str) -> Any:
    """A rich Table of flow rows (dicts of schema.FLOWS)."""
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for name, just in COLUMNS:
        t.add_column(name, justify=just, no_wrap=True)
    for r in rows:
        t.add_row(*cells(r))
    return t


def render_plain(rows: list[dict[str, Any]], title: str, columns: Any = COLUMNS, cell: Any = None) -> str:
    """The same table as aligned plain text (for thousands of connections): ``columns`` as
    (name, justification) pairs, ``cell(row)`` their texts (default: the flow table's)."""
    body = [[name for name, _ in columns]] + [(cell or cells)(r) for r in rows]
    widths = [max(len(row[k]) for row in body) for k in range(len(columns))]
    out = [title]
    for i, row in enumerate(body):
        out.append(
            "  ".join(
                c.rjust(w) if just == "right" else c.ljust(w) for c, w, (_, just) in zip(row, widths, columns)
            ).rstrip()
        )
        if i == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out) + "\n"


def run(file: str, bpf: str | None, as_json: bool) -> None:
    """The command: print the flow table of ``file``."""
    from hscc_trace import api

    from .compiling import compile_notice

    if api.is_qlog(file):
        run_qlog(file, bpf, as_json)
        return
    with compile_notice():
        res = api.flow_rows(file, bpf)
    for w in res.warnings:
        print(f"hscc-trace: warning: {w}", file=sys.stderr)
    rows = res.rows
    if as_json:
        import json

        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
        return
    title = (
        f"{file}: {res.format}, {','.join(res.link_types)}, {res.packets_total} packets "
        f"({res.packets_tcp} TCP), {len(rows)} connection(s)"
    )
    if len(rows) > RICH_MAX_ROWS or not sys.stdout.isatty():
        # piped or redirected: plain aligned text (never truncates a cell, greppable, no rich import)
        sys.stdout.write(render_plain(rows, title))
        return
    from rich.console import Console

    Console(width=max(200, Console().width)).print(render_table(rows, title))


#: `flows FILE.qlog`: the columns that mean the same for a QUIC connection (docs/quic.md)
QLOG_COLUMNS: tuple[tuple[str, Literal["left", "right", "center"]], ...] = (
    ("id", "right"),
    ("proto", "left"),
    ("vantage", "left"),
    ("sender", "left"),
    ("pkts sent/ACK frames", "right"),
    ("bytes sent/recv", "right"),
    ("dur", "right"),
    ("MDS", "right"),
    ("lost stack/ours", "right"),
    ("RTT min/med/max", "right"),
)


def qlog_cells(r: dict[str, Any]) -> list[str]:
    """The printed cells of one QUIC connection (a row of :func:`hscc_trace.api.qlog_flow_rows`)."""
    return [
        str(r["connection"]),
        r["protocol"],
        f"{r['vantage']}{'' if r['logs_the_sender'] else ' (receiver)'}",
        str(r["data_sender"]),
        f"{r['packets_sent']}/{r['ack_frames']}",
        f"{_fmt_bytes(r['bytes_sent'] or 0)}/{_fmt_bytes(r['bytes_received'] or 0)}",
        "—" if r["duration_s"] is None else f"{r['duration_s']:.2f} s",
        str(r["max_datagram_size"]),
        f"{r['losses_stack']}/{r['losses_ours']}",
        f"{_fmt_s(r['rtt_min_s'])} / {_fmt_s(r['rtt_median_s'])} / {_fmt_s(r['rtt_max_s'])}",
    ]


def run_qlog(file: str, bpf: str | None, as_json: bool) -> None:
    """`flows FILE.qlog`: the QUIC connections, as plain aligned text or a JSON array."""
    from hscc_trace import api
    from hscc_trace.errors import UsageError

    if bpf:
        raise UsageError("--filter applies to packet captures, not to a qlog")
    rows, warns = api.qlog_flow_rows(file)
    for w in warns:
        print(f"hscc-trace: warning: {w}", file=sys.stderr)
    if as_json:
        import json

        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
        return
    sys.stdout.write(render_plain(rows, f"{file}: qlog, {len(rows)} QUIC connection(s)", QLOG_COLUMNS, qlog_cells))
