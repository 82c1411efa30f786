"""Results back in Wireshark: a capture written again as pcapng with packet comments
(``hscc-trace annotate CAPTURE -o OUT.pcapng``; docs/annotate.md).

Every flow is analyzed as ``analyze`` analyzes it (:func:`hscc_trace.analysis.pipeline.analyze_flow`:
the same replays, fit and verdict), and what a reader of the capture would want to see at a
packet becomes a comment on that packet (the ``opt_comment`` option of its pcapng packet block,
draft-ietf-opsawg-pcapng §3.5 and §4.3; written by :mod:`hscc_trace.capture.writer`, which
leaves every packet's bytes, timestamp and lengths as they were):

* at the flow's **first packet** (its SYN, or the first packet seen): the verdict
  (``flow 0 identified: reno (error 0.0 % over 229 rounds, runner-up hrf-cr 1.9 %)``), and a
  second comment naming the data sender, the MSS, the vantage point and the number of episodes;
* at the packet that began each **congestion episode** (``start_frame`` of schema.EPISODES: the
  first retransmission, the ACK that released it, or the ECN echo — docs/events.md) and at the
  ACK that ended it (``end_frame``: the first cumulative ACK at or above its recovery point);
* where the replay of the **named algorithm** (the verdict's; for a flow without one, its best
  fit) and the sender **part ways**: the fit's own comparison
  (:func:`hscc_trace.replay.metrics.round_table`: per cwnd-limited round outside recovery, the
  replayed window against the round's peak flight in packets) gives, round by round, whether the
  two agree — ``|replayed − actual| ≤ max(tolerance · actual, tie)`` — and the ACK that closes
  the first round beyond that after :data:`AGREE_ROUNDS` agreeing rounds in a row gets a
  "departs" comment, the first round of the next run of :data:`AGREE_ROUNDS` agreeing rounds a
  "rejoins" comment. The tolerance is the verdict's own threshold of a fit (:class:`~hscc_trace.analysis.verdict.Rules`
  ``max_error``, 15 %; ``max_error_rate``, 25 %, for a rate-based algorithm's in-flight cap), the tie the
  verdict's measurement resolution of the flight (0.5 packets at the sender, 2.5 elsewhere).

Every comment starts with a prefix (default :data:`PREFIX`), so that a display filter such as
``frame.comment contains "hscc-trace"`` selects them all, ``frame.comment contains "episode"``
the episodes.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from hscc_trace.capture.writer import Output, Written, write_commented
from hscc_trace.errors import HsccError, InputError, InternalMessage, Warn
from hscc_trace.model import FlowResult

#: what every comment starts with (``--prefix``)
PREFIX = "hscc-trace: "
#: rounds in a row within the tolerance that count as agreeing (before a "departs" comment is
#: written, and for a "rejoins" one; ``--agree-rounds``). Chosen on the tuning half of the
#: bundled samples by the rule of benchmarks/annotate_agree.py (the smallest number whose
#: departures on the true algorithm's replay are within 10 % of the fewest, among those that
#: still flag 90 % of the flows a wrong algorithm's replay departs on with 1): docs/annotate.md
AGREE_ROUNDS = 1

#: kinds of :class:`Note`
VERDICT, FLOW, EPISODE_START, EPISODE_END, DEPARTS, REJOINS, NOT_ANALYZED = (
    "verdict",
    "flow",
    "episode start",
    "episode end",
    "departs",
    "rejoins",
    "not analyzed",
)


@dataclass(frozen=True)
class Note:
    """One comment: the frame it goes on (1-based, Wireshark's ``frame.number``), the flow, its
    kind (:data:`VERDICT` …) and its text without the prefix."""

    frame: int
    flow_id: int
    kind: str
    text: str


@dataclass
class Annotated:
    """What :func:`annotate` did: the notes written, the writer's account, the flows analyzed,
    warnings (with counts) and one-line errors (flows that could not be analyzed)."""

    path: str
    notes: list[Note]
    written: Written
    flows: int
    warnings: list[Warn] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    verdicts: dict[int, str] = field(default_factory=dict)  # flow id -> verdict label


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100.0 * x:.1f} %"


def verdict_text(flow_id: int, fr: FlowResult) -> str:
    """The verdict comment of a flow (docs/annotate.md, "Comments")."""
    from hscc_trace.analysis.verdict import AMBIGUOUS, BEHAVES_AS, IDENTIFIED, UNKNOWN

    v = fr.verdict
    if v is None:
        return f"flow {flow_id} not enough data (no verdict)"
    over = f" over {v.rounds} rounds" if v.rounds else ""
    if v.cls in (IDENTIFIED, BEHAVES_AS):
        ru = f", runner-up {v.runner_up} {_pct(v.runner_up_error)}" if v.runner_up else ""
        head = f"identified: {v.name}" if v.cls == IDENTIFIED else f"behaves as {v.name}"
        return f"flow {flow_id} {head} (error {_pct(v.error)}{over}{ru})"
    if v.cls == AMBIGUOUS:
        errs = ", ".join(_pct(e) for e in v.candidate_errors)
        return f"flow {flow_id} ambiguous: {', '.join(v.candidates)} (errors {errs}{over})"
    if v.cls == UNKNOWN:
        best = _best_fit(fr)
        what = f"best fit {best[0]} {_pct(best[1])}" if best else "no fit"
        return f"flow {flow_id} unknown ({what}{over}, threshold {_pct(v.threshold)})"
    return f"flow {flow_id} not enough data ({v.reason})"


def _best_fit(fr: FlowResult) -> tuple[str, float] | None:
    """(label, mare) of the flow's rank-1 fit, when it has an error."""
    if fr.fit is None or not fr.fit.height:
        return None
    row = fr.fit.sort("rank").row(0, named=True)
    return (str(row["algo"]), float(row["mare"])) if row.get("mare") is not None else None


def _endpoint(addr: Any, port: Any) -> str:
    a = str(addr)
    return f"[{a}]:{port}" if ":" in a else f"{a}:{port}"


def flow_text(flow_id: int, fr: FlowResult) -> str:
    """The flow's second comment at its first packet: who sends, MSS, vantage, episodes."""
    f, ev = fr.flow, fr.events
    a, b = _endpoint(f.get("src"), f.get("sport")), _endpoint(f.get("dst"), f.get("dport"))
    snd, rcv = (a, b) if int(f.get("sender_dir") or 0) == 0 else (b, a)
    n = ev.episodes.height if ev is not None else 0
    mss = ev.mss if ev is not None else f.get("mss")
    vantage = ev.vantage if ev is not None else "unknown"
    where = {"sender": "at the sender", "receiver": "at the receiver", "mid-path": "mid-path"}.get(
        str(vantage), "at an unknown point"
    )
    # ("congestion events", not "episodes": `frame.comment contains "episode"` selects the episodes' comments)
    return f"flow {flow_id}: data {snd} → {rcv}, MSS {mss} B, captured {where}, {n} congestion event{'s' * (n != 1)}"


def episode_notes(flow_id: int, fr: FlowResult) -> list[Note]:
    """A comment at the frame that began each episode and at the ACK that ended it."""
    ev = fr.events
    out: list[Note] = []
    if ev is None or not ev.episodes.height:
        return out
    mss = max(int(ev.mss or 0), 1)
    for e in ev.episodes.iter_rows(named=True):
        k, kind = e["episode"], e["kind"]
        end = e.get("end_frame")
        never = "" if end is not None else ", never ended"
        start = (
            f"flow {flow_id} episode {k} start: {kind}, flight {e['flight_bytes'] / mss:.1f} pkts, "
            f"recovery point seq {e['recovery_point']}{never}"
        )
        out.append(Note(int(e["start_frame"]), flow_id, EPISODE_START, start))
        if end is not None:
            dur = (e["end_ns"] - e["start_ns"]) / 1e6 if e.get("end_ns") is not None else None
            took = f" after {dur:.1f} ms" if dur is not None else ""
            spur = ", spurious" if e.get("spurious") else ""
            text = f"flow {flow_id} episode {k} end: {kind}{took}, {e['retrans_bytes']} B retransmitted{spur}"
            out.append(Note(int(end), flow_id, EPISODE_END, text))
    return out


def compared_label(fr: FlowResult) -> tuple[str, str] | None:
    """(replay label, how it was chosen) of the replay compared with the sender: the verdict's
    named algorithm, else its first candidate (ambiguous), else the best fit."""
    from hscc_trace.analysis.verdict import AMBIGUOUS, NAMED

    v = fr.verdict
    if v is not None and v.cls in NAMED and v.name in fr.replays:
        return str(v.name), "named"
    if v is not None and v.cls == AMBIGUOUS and v.candidates and v.candidates[0] in fr.replays:
        return str(v.candidates[0]), "first candidate"
    best = _best_fit(fr)
    if best is not None and best[0] in fr.replays:
        return best[0], "best fit"
    return None


def departure_notes(
    flow_id: int, fr: FlowResult, *, tolerance: float | None = None, agree_rounds: int = AGREE_ROUNDS
) -> list[Note]:
    """Where the compared replay (:func:`compared_label`) and the sender part ways, and where
    they agree again (module docstring): a note at the ACK closing each such round."""
    import numpy as np

    from hscc_trace.analysis.verdict import RULES
    from hscc_trace.replay.metrics import FIT_WINDOW, round_table

    chosen = compared_label(fr)
    ev = fr.events
    if chosen is None or ev is None or not ev.rounds.height:
        return []
    label, how = chosen
    rep = fr.replays[label]
    rate = FIT_WINDOW in rep.columns
    tol = tolerance if tolerance is not None else (RULES.max_error_rate if rate else RULES.max_error)
    tie = RULES.tie_at_sender if ev.vantage == "sender" else RULES.tie_elsewhere
    rt = round_table(ev.acks, ev.rounds, rep, ev.mss)
    if not rt.height or not rep.height:
        return []
    ends = dict(zip(ev.rounds.get_column("round").to_list(), ev.rounds.get_column("end_ns").to_list()))
    ts = rep.get_column("ts_ns").to_numpy()
    frames = rep.get_column("frame").to_numpy()
    what = "in-flight cap" if rate else "window"
    out: list[Note] = []
    agreeing = False
    run: list[tuple[int, float, float]] = []  # the current run of agreeing rounds
    departed = False
    for r, act, got in zip(rt["round"].to_list(), rt["actual_pkts"].to_list(), rt["replayed_pkts"].to_list()):
        if got is None or act is None or not np.isfinite(got) or act <= 0:
            continue
        ok = abs(got - act) <= max(tol * act, tie)
        if ok:
            run.append((r, act, got))
            if not agreeing and len(run) >= agree_rounds:
                agreeing = True
                if departed:
                    r0, a0, g0 = run[0]
                    f0 = _closing_frame(ts, frames, ends.get(r0))
                    if f0 is not None:
                        out.append(
                            Note(
                                f0,
                                flow_id,
                                REJOINS,
                                f"flow {flow_id} replay of {label} ({how}) rejoins the sender in round {r0}: "
                                f"replayed {what} {g0:.1f} pkts, peak flight {a0:.1f} pkts "
                                f"({_signed(g0, a0)}; within {_tol(tol, tie)} again"
                                f"{f', {agree_rounds} rounds in a row' if agree_rounds > 1 else ''})",
                            )
                        )
            continue
        run = []
        if agreeing:
            agreeing = False
            departed = True
            fr_ = _closing_frame(ts, frames, ends.get(r))
            if fr_ is not None:
                out.append(
                    Note(
                        fr_,
                        flow_id,
                        DEPARTS,
                        f"flow {flow_id} replay of {label} ({how}) departs from the sender in round {r}: "
                        f"replayed {what} {got:.1f} pkts, peak flight {act:.1f} pkts "
                        f"({_signed(got, act)}, beyond {_tol(tol, tie)})",
                    )
                )
    return out


def _signed(got: float, act: float) -> str:
    return f"{100.0 * (got - act) / act:+.1f} %"


def _tol(tol: float, tie: float) -> str:
    return f"{100.0 * tol:g} % or {tie:g} pkts"


def _closing_frame(ts: Any, frames: Any, end_ns: int | None) -> int | None:
    """The frame of the ACK that closed a round (the replay's row at the round's end time)."""
    import numpy as np

    if end_ns is None:
        return None
    i = int(np.searchsorted(ts, end_ns, side="right")) - 1
    return int(frames[i]) if i >= 0 else None


def flow_notes(
    flow_id: int,
    first_frame: int | None,
    fr: FlowResult,
    *,
    tolerance: float | None = None,
    agree_rounds: int = AGREE_ROUNDS,
) -> list[Note]:
    """Every note of one analyzed flow, in the order they are written on a frame."""
    out: list[Note] = []
    if first_frame is not None:
        out.append(Note(first_frame, flow_id, VERDICT, verdict_text(flow_id, fr)))
        out.append(Note(first_frame, flow_id, FLOW, flow_text(flow_id, fr)))
    out += episode_notes(flow_id, fr)
    out += departure_notes(flow_id, fr, tolerance=tolerance, agree_rounds=agree_rounds)
    return out


# --- the flows of a capture ------------------------------------------------------------------------


def first_frames(cap: Any) -> dict[int, int]:
    """Flow id -> frame number of the flow's first packet (what Wireshark shows first with
    ``tcp.stream == id``; frame numbers are the file's, also under a ``--filter``)."""
    dec = getattr(cap, "decoded", None)
    out: dict[int, int] = {}
    if dec is not None and getattr(dec, "src", None) is not None:
        fs = dec.src
        frame = fs.src[0]  # (FlowSource.src: the frame column first; each flow's rows in frame order)
        for f in range(len(fs.first)):
            if fs.first[f] < 0:
                continue
            rows = fs.rows(f, f + 1)
            if len(rows):
                out[f] = int(frame[rows[0]])
        return out
    import polars as pl

    pk = cap.packets
    if pk.height:
        for fid, fr in pk.group_by("flow_id").agg(pl.col("frame").min()).iter_rows():
            if fid is not None:
                out[int(fid)] = int(fr)
    return out


def _guard(fn: Any, *args: Any, **kw: Any) -> tuple[bool, Any]:
    """(True, result) or (False, one-line error), as the ``analyze`` pipeline reports a flow."""
    from hscc_trace.analysis.pipeline import DEBUG_ENV

    try:
        return True, fn(*args, **kw)
    except HsccError as exc:
        return False, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    except MemoryError:
        return False, "out of memory"
    except Exception as exc:  # noqa: BLE001 - one flow's bug must not lose the others
        if os.environ.get(DEBUG_ENV):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return False, InternalMessage(
            f"internal error ({type(exc).__name__}: {first}); rerun with {DEBUG_ENV}=1 for a traceback"
        )


def collect_notes(
    path: str,
    algorithms: Sequence[str] | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    *,
    bpf: str | None = None,
    flows: Sequence[int] | None = None,
    tolerance: float | None = None,
    agree_rounds: int = AGREE_ROUNDS,
) -> tuple[list[Note], list[Warn], list[str], dict[int, str]]:
    """Analyze the capture at ``path`` (a file that can be read again) flow by flow and return
    (notes, warnings, one-line errors of flows not analyzed, {flow id: verdict label}). Raises
    :class:`InputError` when the capture cannot be read or a flow id is not in it."""
    from hscc_trace.analysis.pipeline import analyze_flow, selected_flows
    from hscc_trace.events import flow_event_batches
    from hscc_trace.flows import load
    from hscc_trace.replay import selection

    sel = selection.select(algorithms, params)
    if tolerance is not None and not tolerance > 0:
        raise InputError(f"tolerance must be above 0, got {tolerance}")
    if agree_rounds < 1:
        raise InputError(f"agreeing rounds must be at least 1, got {agree_rounds}")
    cap = load(path, bpf=bpf)
    table = cap.flows
    ids = selected_flows(str(path), table, flows)
    first = first_frames(cap)
    warnings = list(cap.warnings)
    row_of = {int(f): r for r, f in enumerate(table["flow_id"].to_list())} if table.height else {}
    notes: list[Note] = []
    errors: list[str] = []
    verdicts: dict[int, str] = {}
    seen: set[int] = set()
    chosen = ids if flows is not None else None
    release = chosen is None and getattr(cap, "decoded", None) is not None
    for batch in flow_event_batches(cap, chosen, release=release):
        for fid, ev in batch:
            if fid not in row_of or (chosen is not None and fid not in ids):
                continue
            seen.add(fid)
            row = table.row(row_of[fid], named=True)
            ok, fr = _guard(analyze_flow, row, ev, sel.names, sel.overrides)
            if ok:
                ok, got = _guard(flow_notes, fid, first.get(fid), fr, tolerance=tolerance, agree_rounds=agree_rounds)
                if ok:
                    notes += got
                    verdicts[fid] = fr.verdict.label if fr.verdict is not None else "not enough data"
                    warnings += [*fr.warnings, *(ev.warnings if ev is not None else [])]
                    continue
                fr = got
            msg = f"{path}: flow {fid}: {fr}"
            errors.append(InternalMessage(msg) if isinstance(fr, InternalMessage) else msg)
            if fid in first:
                notes.append(Note(first[fid], fid, NOT_ANALYZED, f"flow {fid} not analyzed ({fr})"))
        del batch
    missing_ev = [fid for fid in ids if fid not in seen]
    if missing_ev:
        warnings.append(
            Warn(path, f"no event streams for flow {', '.join(map(str, missing_ev))}: not analyzed", len(missing_ev))
        )
        for fid in missing_ev:
            if fid in first:
                notes.append(Note(first[fid], fid, NOT_ANALYZED, f"flow {fid} not analyzed (no data segments or ACKs)"))
    return notes, warnings, errors, verdicts


# --- writing -------------------------------------------------------------------------------------


def comments_by_frame(notes: Sequence[Note], prefix: str = PREFIX) -> dict[int, list[str]]:
    """The comment texts of each frame, in the order of ``notes`` (stable)."""
    out: dict[int, list[str]] = {}
    for n in notes:
        out.setdefault(n.frame, []).append(prefix + n.text)
    return out


@contextlib.contextmanager
def _readable_twice(path: str) -> Iterator[str]:
    """``path`` itself, or for standard input or a pipe (which can be read only once) a
    temporary copy of it."""
    import stat

    from hscc_trace.capture.reader import STDIN

    try:
        mode = os.stat(path).st_mode if path != STDIN else 0
        once = path == STDIN or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode)
    except OSError:
        once = False  # (missing: the reader says so)
    if not once:
        yield path
        return
    fd, tmp = tempfile.mkstemp(prefix="hscc-trace-annotate-", suffix=".cap")
    try:
        with os.fdopen(fd, "wb") as dst:
            if path == STDIN:
                src = open(0, "rb", closefd=False)  # noqa: SIM115 - not ours to close
                shutil.copyfileobj(src, dst, 1 << 20)
            else:
                with open(path, "rb") as src:
                    shutil.copyfileobj(src, dst, 1 << 20)
        yield tmp
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _named(text: str, tmp: str, path: str) -> str:
    return text.replace(tmp, path) if tmp != path else text


def annotate(
    path: str | os.PathLike,
    out: str | os.PathLike | Output,
    algorithms: Sequence[str] | None = None,
    params: dict[str, dict[str, Any]] | None = None,
    *,
    bpf: str | None = None,
    flows: Sequence[int] | None = None,
    prefix: str = PREFIX,
    tolerance: float | None = None,
    agree_rounds: int = AGREE_ROUNDS,
) -> Annotated:
    """Write the capture at ``path`` to ``out`` as pcapng with the notes of every analyzed flow
    as packet comments (module docstring). ``out``: a path — written atomically (a temporary
    file renamed into place: never a truncated file), gzip-compressed when it ends in ``.gz`` —
    or a binary stream. Raises :class:`InputError` for a capture that cannot be read or an
    output that cannot be written; flows that cannot be analyzed are ``Annotated.errors``."""
    from hscc_trace import __version__
    from hscc_trace.atomic import atomic_path

    src = os.fspath(path)
    if "\0" in prefix:
        raise InputError("the comment prefix cannot contain a NUL character")
    with _readable_twice(src) as readable:
        try:
            notes, warns, errors, verdicts = collect_notes(
                readable, algorithms, params, bpf=bpf, flows=flows, tolerance=tolerance, agree_rounds=agree_rounds
            )
        except InputError as exc:
            raise InputError(_named(str(exc), readable, src)) from None
        comments = comments_by_frame(notes, prefix)
        app = f"hscc-trace {__version__} annotate"
        try:
            if isinstance(out, (str, os.PathLike)):
                target = os.fspath(out)
                with atomic_path(target, "the annotated capture") as tmp:
                    opener = gzip.open if str(target).lower().endswith(".gz") else open
                    with opener(tmp, "wb") as fh:  # type: ignore[operator]
                        written = write_commented(readable, fh, comments, userappl=app)
            else:
                written = write_commented(readable, out, comments, userappl=app)
        except InputError as exc:
            raise InputError(_named(str(exc), readable, src)) from None
    warnings = [
        Warn(
            _named(w.source, readable, src),
            _named(w.message, readable, src),
            w.count,
            w.partial,
            w.lost_bytes,
            w.lost_records,
        )
        for w in warns
    ]
    for reason, n in written.dropped.items():
        warnings.append(Warn(src, f"output: {reason}", n))
    # the writer stops where the reader stopped: its reason is news only when the reader gave none
    known = {w.message for w in warnings}
    if not any(w.partial for w in warnings):
        for reason, n in written.problems.items():
            if reason not in known:
                warnings.append(Warn(src, f"output: {reason}", n, partial=True))
    if written.unplaced:
        k = sum(written.unplaced.values())
        warnings.append(Warn(src, f"output: {k} comments for frames the file does not have not written", k))
    errors = [
        InternalMessage(_named(e, readable, src)) if isinstance(e, InternalMessage) else _named(e, readable, src)
        for e in errors
    ]
    return Annotated(
        path=src,
        notes=[n for n in notes if n.frame not in written.unplaced],
        written=written,
        flows=len(verdicts),
        warnings=warnings,
        errors=errors,
        verdicts=verdicts,
    )


__all__ = [
    "PREFIX",
    "AGREE_ROUNDS",
    "Note",
    "Annotated",
    "annotate",
    "collect_notes",
    "comments_by_frame",
    "first_frames",
]
