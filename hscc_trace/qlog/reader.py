"""Reading qlog files: the container formats and the event layouts QUIC stacks write.

Containers (any of them gzip-compressed, recognised by the gzip magic, not the file name):

* **JSON** (``.qlog``): one document ``{"qlog_version", "traces": [...]}`` (draft-ietf-quic-qlog-
  main-schema §5, and the draft-marx versions before it). A document cut short (a stack that
  crashed or was killed) is read up to its last complete event, with a warning.
* **JSON-SEQ** (``.sqlog``, RFC 7464): records each preceded by the record separator 0x1E; the
  first record is the header (``qlog_format: "JSON-SEQ"``, one ``trace`` with its
  ``vantage_point`` and ``common_fields``), every other record one event (main-schema §6).
* **NDJSON** (``.ndqlog``, what some stacks and qvis call newline-delimited qlog): the same
  records one per line.

Event layouts:

* draft-00/01 (``qlog_version`` "draft-00", "draft-01", "draft-02-wip"): a trace's
  ``event_fields`` names the columns, every event is an array (e.g.
  ``["relative_time", "category", "event", "trigger", "data"]``); times are ``relative_time``
  from ``common_fields.reference_time`` or ``delta_time`` from the previous event, in the trace's
  ``configuration.time_units`` ("ms" or "us");
* 0.2–0.4 and the IETF drafts: objects ``{"time", "name": "category:event", "data"}`` (draft-02
  and later), or ``{"time", "category", "event", "data"}``; ``common_fields.time_format``
  "relative" (default: times from ``reference_time``), "delta" or "absolute".

Every event comes out as :class:`Event` (time in ms from the trace's first event, the name as
``category:event``, the data dict, its group id); :mod:`hscc_trace.qlog.streams` maps the names.
Nothing here raises anything but :class:`~hscc_trace.errors.InputError`.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hscc_trace.errors import InputError, Warn

#: file names taken as qlog by the CLI's input dispatch (any of them may be gzip-compressed)
QLOG_SUFFIXES = (".qlog", ".sqlog", ".ndqlog", ".qlog.gz", ".sqlog.gz", ".ndqlog.gz", ".ndjson", ".ndjson.gz")

RS = b"\x1e"  # RFC 7464 record separator

#: a file larger than this (decompressed) is refused rather than read into memory
MAX_BYTES = 2 * 1024**3


@dataclass(frozen=True)
class Event:
    time_ms: float  # from the trace's earliest event
    name: str  # "category:event" as written (lower case)
    data: dict[str, Any]
    group: str | None = None  # group_id (several connections in one trace), else None


@dataclass
class Trace:
    """One qlog trace: the events of one vantage point (one endpoint, or a network observer)."""

    index: int
    vantage: str  # "client" | "server" | "network" | "unknown"
    title: str | None
    qlog_version: str | None
    events: list[Event]
    reference_time_ms: float | None = None  # absolute start (ms since the epoch) when given
    flow: str | None = None  # a network vantage point's "flow": the endpoint whose view it logs
    #: ms per unit of the durations in event data (RTTs, ack_delay): draft-00/01's time_units "us" → 0.001
    duration_ms: float = 1.0
    common: dict[str, Any] = field(default_factory=dict)


@dataclass
class QlogFile:
    path: str
    container: str  # "json" | "json-seq" | "ndjson"
    compressed: bool
    traces: list[Trace]
    warnings: list[Warn] = field(default_factory=list)


def is_qlog_name(path: str | Path) -> bool:
    """Whether the file name says qlog (the CLI's dispatch; the content decides the container)."""
    return str(path).lower().endswith(QLOG_SUFFIXES)


def _raw(path: str) -> tuple[bytes, bool, list[Warn]]:
    try:
        with open(path, "rb") as f:
            head = f.read(2)
            f.seek(0)
            if head != b"\x1f\x8b":
                data = f.read(MAX_BYTES + 1)
                compressed = False
            else:
                compressed = True
                warns: list[Warn] = []
                d = zlib.decompressobj(wbits=31)
                parts: list[bytes] = []
                total = 0
                try:
                    while chunk := f.read(1 << 20):
                        out = d.decompress(chunk)
                        total += len(out)
                        if total > MAX_BYTES:
                            break
                        parts.append(out)
                        if d.eof:
                            break
                except zlib.error as exc:
                    warns.append(Warn(path, f"gzip stream damaged ({exc}): read up to the damage", partial=True))
                if not d.eof and not warns:
                    warns.append(Warn(path, "gzip stream truncated: read up to its end", partial=True))
                data = b"".join(parts)
                if len(data) > MAX_BYTES:
                    raise InputError(f"{path}: qlog larger than {MAX_BYTES >> 30} GiB decompressed; not read")
                return data, compressed, warns
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise InputError(f"{path}: qlog larger than {MAX_BYTES >> 30} GiB; not read")
    return data, compressed, []


def read(path: str | Path) -> QlogFile:
    """Read a qlog file (any container, gzip or not): its traces and the warnings of reading it."""
    p = str(path)
    data, compressed, warns = _raw(p)
    text = data.lstrip(b" \t\r\n\xef\xbb\xbf")
    if not text:
        raise InputError(f"{p}: empty file, not a qlog")
    if text[:1] == RS:
        traces, w = _read_records([r for r in text.split(RS)], p, "json-seq")
        container = "json-seq"
    elif text[:1] == b"{" and _is_single_document(text):
        traces, w = _read_json(text, p)
        container = "json"
    elif text[:1] == b"{":
        traces, w = _read_records(text.split(b"\n"), p, "ndjson")
        container = "ndjson"
    else:
        raise InputError(f"{p}: not a qlog file (neither JSON, JSON-SEQ nor NDJSON)")
    warns += w
    if not traces:
        raise InputError(f"{p}: qlog without any trace")
    return QlogFile(path=p, container=container, compressed=compressed, traces=traces, warnings=warns)


def _is_single_document(text: bytes) -> bool:
    """JSON rather than NDJSON: the first line is not a complete JSON object on its own, or it
    holds ``traces`` (a one-line JSON document)."""
    if b'"traces"' in text[:65536] or b"\n" not in text.strip():
        return True
    first = text.split(b"\n", 1)[0]
    try:
        obj = json.loads(first)
    except ValueError:
        return True
    if not isinstance(obj, dict):
        return True
    return "traces" in obj


# --- JSON --------------------------------------------------------------------------------------


def _read_json(text: bytes, path: str) -> tuple[list[Trace], list[Warn]]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return _salvage_json(text.decode("utf-8", "replace"), path, exc)
    except RecursionError:
        raise InputError(f"{path}: JSON nested too deeply; not a qlog") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: JSON but not a qlog document (top level is not an object)")
    version = _str(doc.get("qlog_version"))
    warns: list[Warn] = []
    raw_traces = doc.get("traces")
    if raw_traces is None and "trace" in doc:
        raw_traces = [doc["trace"]]
    if raw_traces is None and isinstance(doc.get("events"), list):
        raw_traces = [doc]  # qlog 0.1 (2018): the document is the one trace ("fields", "vantagepoint")
    if not isinstance(raw_traces, list):
        raise InputError(f"{path}: JSON without a 'traces' list; not a qlog document")
    traces = []
    for i, t in enumerate(raw_traces):
        if not isinstance(t, dict):
            warns.append(Warn(path, f"trace {i} is not an object: skipped"))
            continue
        if "error_description" in t and "events" not in t:
            warns.append(Warn(path, f"trace {i} is a TraceError ({_str(t.get('error_description'))}): skipped"))
            continue
        tr, w = _trace(i, t, t.get("events") or [], version, path)
        traces.append(tr)
        warns += w
    return traces, warns


def _salvage_json(text: str, path: str, exc: ValueError) -> tuple[list[Trace], list[Warn]]:
    """A JSON document that does not parse (cut short): each trace's header fields and its events
    up to the last complete one, decoded one at a time after its ``"events": [``."""
    dec = json.JSONDecoder()
    traces: list[Trace] = []
    warns: list[Warn] = []
    pos = 0
    version = None
    vi = text.find('"qlog_version"')
    if vi >= 0:
        try:
            colon = text.index(":", vi)
            version, _ = dec.raw_decode(text, colon + 1 + (len(text[colon + 1 :]) - len(text[colon + 1 :].lstrip())))
        except (ValueError, IndexError):
            version = None
    while True:
        at = text.find('"events"', pos)
        if at < 0:
            break
        br = text.find("[", at)
        if br < 0:
            break
        # the trace's other fields, as far as they precede the events (vantage_point, common_fields …)
        head = _header_before(text, at, dec)
        events: list[Any] = []
        i = br + 1
        complete = False
        while True:
            while i < len(text) and text[i] in " \t\r\n,":
                i += 1
            if i >= len(text):
                break
            if text[i] == "]":
                complete = True
                i += 1
                break
            try:
                ev, i = dec.raw_decode(text, i)
            except ValueError:
                break
            events.append(ev)
        tr, w = _trace(len(traces), head, events, _str(version), path)
        traces.append(tr)
        warns += w
        pos = i
        if not complete:
            break
    if not traces:
        raise InputError(f"{path}: not valid JSON ({str(exc).splitlines()[0]}) and no qlog events in it")
    n = sum(len(t.events) for t in traces)
    warns.append(
        Warn(
            path,
            f"qlog JSON cut short or damaged ({str(exc).splitlines()[0]}): "
            f"read {n} events of {len(traces)} trace(s) up to the damage",
            partial=True,
        )
    )
    return traces, warns


def _header_before(text: str, events_at: int, dec: json.JSONDecoder) -> dict[str, Any]:
    """The fields ``vantage_point``, ``common_fields``, ``configuration``, ``event_fields``, ``title``
    written in the trace before ``"events"`` (the usual order), decoded where found."""
    start = max(text.rfind('"traces"', 0, events_at), text.rfind('"trace"', 0, events_at), 0)
    head: dict[str, Any] = {}
    for key in ("vantage_point", "common_fields", "configuration", "event_fields", "title"):
        k = text.rfind(f'"{key}"', start, events_at)
        if k < 0:
            continue
        colon = text.find(":", k)
        j = colon + 1
        while j < len(text) and text[j] in " \t\r\n":
            j += 1
        try:
            head[key], _ = dec.raw_decode(text, j)
        except ValueError:
            pass
    return head


# --- JSON-SEQ and NDJSON -----------------------------------------------------------------------


def _read_records(records: list[bytes], path: str, kind: str) -> tuple[list[Trace], list[Warn]]:
    header: dict[str, Any] | None = None
    events: list[Any] = []
    bad = 0
    last_bad = False
    nonempty = [r for r in records if r.strip()]
    for k, rec in enumerate(nonempty):
        try:
            obj = json.loads(rec)
        except (ValueError, RecursionError):
            bad += 1
            last_bad = k == len(nonempty) - 1
            continue
        if not isinstance(obj, dict):
            bad += 1
            continue
        if header is None and ("qlog_version" in obj or "qlog_format" in obj or "trace" in obj):
            header = obj
            continue
        events.append(obj)
    if header is None and not events:
        raise InputError(f"{path}: no qlog record could be read ({kind})")
    warns: list[Warn] = []
    if bad:
        what = "the last record cut short" if bad == 1 and last_bad else f"{bad} records not valid JSON"
        warns.append(Warn(path, f"{kind} qlog: {what}; skipped", count=bad, partial=last_bad))
    header = header or {}
    t = _obj(header.get("trace"))
    tr, w = _trace(0, t, events, _str(header.get("qlog_version")), path)
    return [tr], warns + w


# --- one trace ---------------------------------------------------------------------------------


def _str(v: Any) -> str | None:
    return None if v is None else str(v)


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
    return None


def _obj(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _trace(
    i: int, t: dict[str, Any], raw_events: list[Any], version: str | None, path: str
) -> tuple[Trace, list[Warn]]:
    warns: list[Warn] = []
    vp = _obj(t.get("vantage_point"))
    vantage = str(vp.get("type") or t.get("vantagepoint") or "unknown").lower()
    flow = str(vp["flow"]).lower() if vp.get("flow") is not None else None
    common = _obj(t.get("common_fields"))
    config = _obj(t.get("configuration"))
    units = str(config.get("time_units") or common.get("time_units") or "ms").lower()
    scale = 0.001 if units == "us" else 1.0  # to ms
    ref = _num(common.get("reference_time"))
    offset = _num(config.get("time_offset")) or 0.0
    time_format = str(common.get("time_format") or "relative").lower()
    fields = t.get("event_fields") if t.get("event_fields") is not None else t.get("fields")
    # draft-00/01 column names, in either case; "event_type" (draft-01) and "type" (0.1) name the event
    alias = {"event_type": "event", "type": "event"}
    fields = [alias.get(str(f).lower(), str(f).lower()) for f in fields] if isinstance(fields, list) else None
    group_default = _str(common.get("group_id") or common.get("ODCID") or common.get("group_ids"))
    out: list[tuple[float, str, dict[str, Any], str | None]] = []
    skipped = 0
    prev = 0.0
    for ev in raw_events:
        if isinstance(ev, list) and fields:
            row = dict(zip(fields, ev, strict=False))
        elif isinstance(ev, dict):
            row = ev
        else:
            skipped += 1
            continue
        if "name" in row and isinstance(row["name"], str):
            name = row["name"]
        elif "category" in row and "event" in row:
            name = f"{row['category']}:{row['event']}"
        elif "event" in row and isinstance(row["event"], str):
            name = row["event"]
        else:
            skipped += 1
            continue
        data = row.get("data")
        if not isinstance(data, dict):
            data = {}
        if "relative_time" in row:
            tm = _num(row["relative_time"])
            tm = None if tm is None else tm * scale
        elif "delta_time" in row:
            d = _num(row["delta_time"])
            tm = None if d is None else prev + d * scale
        elif "time" in row:
            tm = _num(row["time"])
            if tm is not None:
                tm *= scale
                if time_format == "delta":
                    tm += prev
        else:
            tm = None
        if tm is None:
            skipped += 1
            continue
        prev = tm
        group = _str(row.get("group_id")) or group_default
        out.append((tm + offset * scale, name.lower(), data, group))
    if skipped:
        warns.append(Warn(path, f"trace {i}: events without a name or a time skipped", count=skipped))
    start = min(e[0] for e in out) if out else 0.0
    absolute = time_format == "absolute" or (ref is None and start > 1e11)
    events = [Event(t - start, n, d, g) for t, n, d, g in out]
    reference = (ref + start) if ref is not None and not absolute else (start if absolute else None)
    title = _str(t.get("title"))
    return Trace(i, vantage, title, version, events, reference, flow, scale, common), warns


def open_text(path: str) -> str:
    """The decompressed text of a file (gzip or not), for tests and tools."""
    with open(path, "rb") as f:
        raw = f.read()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8", "replace")
