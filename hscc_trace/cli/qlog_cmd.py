"""`hscc-trace qlog FILE [--json] [--kind sent|acks|lost|detected|metrics|replay -o OUT]`."""

from __future__ import annotations

import json
import sys
from enum import StrEnum

import typer

from .typer_app import app


class QKind(StrEnum):
    sent = "sent"
    acks = "acks"
    lost = "lost"
    detected = "detected"
    metrics = "metrics"
    replay = "replay"


@app.command()
def qlog(
    file: str = typer.Argument(
        ..., metavar="FILE", help="qlog file: .qlog (JSON), .sqlog (JSON-SEQ), NDJSON; optionally gzip."
    ),
    algo: str = typer.Option("reno,cubic", "--algo", help="Comma-separated QUIC replays: reno, cubic."),
    flavor: str = typer.Option(
        "rfc,aioquic", "--flavor", help="Comma-separated flavors: rfc (the RFCs), aioquic (its departures)."
    ),
    losses: str = typer.Option(
        "stack", "--losses", help="Which losses drive the replay: stack (packet_lost) or ours (RFC 9002 §6.1)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    departures: bool = typer.Option(
        False,
        "--departures",
        help="Also switch each of the best fit's aioquic parameters back to the RFC's, one at a time.",
    ),
    kind: QKind | None = typer.Option(
        None, "--kind", help="Write one connection's table instead of the summary (docs/quic.md)."
    ),
    conn: int = typer.Option(0, "--connection", help="Which connection (in file order) --kind writes."),
    out: str = typer.Option("-", "-o", "--out", help="With --kind: .parquet, .csv or .json; '-' = CSV on stdout."),
) -> None:
    """Read a QUIC qlog: per connection the packets, ACKs, losses and RTT samples (RFC 9002), and
    the QUIC replays of reno / cubic against the stack's logged congestion window."""
    from hscc_trace.api import export, qlog_summary, qlog_table

    algos = tuple(a.strip() for a in algo.split(",") if a.strip())
    flavors = tuple(f.strip() for f in flavor.split(",") if f.strip())
    if kind is not None:
        table, warns = qlog_table(
            file, kind.value, conn, algos[0] if algos else "reno", flavors[0] if flavors else "rfc", losses
        )
        for w in warns:
            print(f"hscc-trace: warning: {w}", file=sys.stderr)
        export(table, out)
        return
    doc = qlog_summary(file, algos, flavors, losses, departures)
    for w in doc.pop("_warnings"):
        print(f"hscc-trace: warning: {w}", file=sys.stderr)
    if as_json:
        typer.echo(json.dumps(doc, indent=1, default=str))
        return
    echo_summary(doc)


def echo_summary(doc: dict) -> None:
    """The terminal summary of :func:`hscc_trace.api.qlog_summary`'s document (also `analyze FILE.qlog`)."""
    for c in doc["connections"]:
        who = "logs the data sender" if c["logs_the_sender"] else "logs the data receiver"
        typer.echo(
            f"connection {c['trace']}{'' if c['group'] is None else ' group ' + str(c['group'])}: "
            f"vantage {c['vantage']} ({who}: {c['data_sender']}), {c['packets_sent']} packets sent, "
            f"{c['ack_frames']} ACK frames, {c['rtt_samples']} RTT samples, mds {c['max_datagram_size']} B"
        )
        lc = c["losses"]
        typer.echo(
            f"  losses: stack {lc['stack']}, ours (RFC 9002 §6.1) {lc['ours']}, both {lc['both']}, "
            f"stack only {lc['stack_only']}, ours only {lc['ours_only']}"
        )
        ch = c["checks"]
        if "bytes_in_flight_equal" in ch:
            typer.echo(
                f"  bytes in flight equal to the logged value at {100 * ch['bytes_in_flight_equal']:.1f} % of ACKs"
            )
        for r in c["replays"]:
            if r["median"] is None:
                typer.echo(f"  {r['algorithm']}[{r['flavor']}]: no logged window to compare")
                continue
            typer.echo(
                f"  {r['algorithm']}[{r['flavor']}] vs logged cwnd: median {100 * r['median']:.2f} %, "
                f"p90 {100 * r['p90']:.2f} %, exact at {100 * r['exact']:.1f} % of {r['acks']} ACKs"
            )
        if c.get("best"):
            typer.echo(f"  best fit: {c['best']}")
        if c.get("verdict"):
            typer.echo(f"  verdict: {c['verdict']}")
        for d in c.get("departures", []):
            a, b = d["with"], d["switched_back"]
            if a["median"] is None or b["median"] is None:
                continue
            typer.echo(
                f"    {d['algorithm']}.{d['parameter']} = {d['aioquic']} (RFC: {d['rfc']}): switched back, "
                f"median {100 * b['median']:.2f} %, p90 {100 * b['p90']:.2f} % (against {100 * a['median']:.2f} / {100 * a['p90']:.2f} %)"
            )
