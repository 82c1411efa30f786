"""Versioned JSON results of an `analyze` run (``--json results.json``).

The document is described by ``results.schema.json`` beside this module (JSON Schema draft
2020-12) and documented in docs/results.md. :data:`SCHEMA_VERSION` follows semantic
versioning: a new optional field bumps the minor number, a removed or changed field the major
number; readers accept any document with the same major number, and documents of major 1
(:data:`READ_MAJORS`: a capture identified by ``sha256`` instead of ``blake3``, the one change
of 2.0) as baselines.

Numbers that are not finite (NaN, ±inf: e.g. a correlation over a constant window) are written
as ``null`` — JSON has no NaN. Times are integers in ns since the Unix epoch, durations and RTTs
float seconds, windows packets, rates bit/s, as in :mod:`hscc_trace.schema`.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl

from hscc_trace import schema
from hscc_trace.errors import InputError, Warn
from hscc_trace.model import Analysis, CaptureMeta, CaptureResult, FlowResult

SCHEMA_VERSION = "2.3"
#: major versions read (``check --baseline``): 1.x differs from 2.0 only in the capture's digest
READ_MAJORS = ("1", "2")
#: flow fields added after 1.0: written always, optional when read, so 1.0 baselines still validate
ADDED_SINCE_1_0 = ("out_of_order",)
#: a capture's identity since 2.0 (:func:`digest_file`): written always, optional when read, so
#: documents of 1.x (which carry ``sha256`` instead) still validate and match as baselines
CAPTURE_DIGEST = "blake3"
SCHEMA_FILE = "results.schema.json"

#: Fields that change from run to run of the same inputs; ignored when comparing runs.
VOLATILE = ("created",)


def utc_now() -> str:
    """ISO 8601 UTC timestamp with second precision, e.g. ``2026-01-02T03:04:05Z``."""
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hash_file(h: Any, path: str | Path, chunk: int) -> str | None:
    buf = bytearray(chunk)
    view = memoryview(buf)
    try:
        with open(path, "rb") as f:
            while n := f.readinto(buf):
                h.update(view[:n])
    except OSError:
        return None
    return h.hexdigest()


def digest_file(path: str | Path, chunk: int = 1 << 20) -> str | None:
    """Hex BLAKE3 (256 bits) of a file's bytes (None when it cannot be read): the identity of a
    capture for ``check --baseline`` and the corpus dataset. BLAKE3 rather than SHA-256: as
    collision-resistant, and 2.6× less CPU (replica-5M, 565 MB: 0.15 s against 0.39 s, the read
    included; docs/performance.md, "Where the time goes")."""
    import blake3

    return _hash_file(blake3.blake3(), path, chunk)


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str | None:
    """Hex SHA-256 of a file (None when it cannot be read): the identity documents of schema 1.x
    carry (``check --baseline`` computes it only to match such a baseline)."""
    return _hash_file(hashlib.sha256(), path, chunk)


def clean(value: Any) -> Any:
    """A JSON-safe copy: non-finite floats → None, tuples → lists, enums/paths → str. A streamed
    capture's flow entries (:class:`Entries`, already clean) stay as
    they are: :func:`write` writes them from the spool."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # a file name that is not UTF-8 (surrogateescape): U+FFFD
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        return value
    if isinstance(value, (bool, int)) or value is None:
        return value
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, Entries):
        return value
    if hasattr(value, "item"):  # numpy scalar
        return clean(value.item())
    return str(value)


def _warn(w: Warn | str) -> dict[str, Any]:
    if isinstance(w, Warn):
        out: dict[str, Any] = {"source": w.source, "message": w.message, "count": int(w.count)}
        if w.partial:  # (1.2) the capture was only partly read
            out["lost"] = {"bytes": w.lost_bytes, "records": w.lost_records}
        return out
    return {"source": "", "message": str(w), "count": 1}


def _meta(meta: CaptureMeta) -> dict[str, Any]:
    return clean(
        {
            "format": meta.format,
            "link_types": list(meta.link_types),
            "snaplen": meta.snaplen,
            "packets_total": meta.packets_total,
            "packets_tcp": meta.packets_tcp,
            "first_ns": meta.first_ns,
            "last_ns": meta.last_ns,
            "duration_s": meta.duration_s,
            "bpf": meta.bpf,
            "skipped": dict(meta.skipped),
            "decoded_by": dict(meta.decoded_by),
        }
    )


def cwnd_limited_rounds(rounds: pl.DataFrame) -> int:
    """Number of RTT rounds (schema.ROUNDS) in which the congestion window was the limit."""
    if rounds.height == 0 or "limit" not in rounds.columns:
        return 0
    limit = rounds.get_column("limit")
    if isinstance(limit.dtype, pl.Enum):  # (schema.ROUNDS: compared as the category, no strings;
        # a comparison with a value, not a polars expression, which releases the interpreter lock)
        return int((limit == "cwnd").sum()) if "cwnd" in limit.dtype.categories.to_list() else 0
    return int((limit.cast(pl.String) == "cwnd").sum())


def _fit_rows(fit: pl.DataFrame) -> list[dict[str, Any]]:
    names = [c.name for c in schema.FIT_METRICS if c.name != "flow_id"]
    if fit.height == 0:
        return []
    cols = [n for n in names if n in fit.columns]
    # (the columns as lists and the rows ordered in Python, as polars' sort orders them: ranks are
    # unique, rows without one last in their order; a polars select or sort would release the
    # interpreter lock, which a streamed run's calling thread may wait up to 5 ms to take back)
    rows = [dict(zip(cols, vals)) for vals in zip(*(fit.get_column(n).to_list() for n in cols))]
    if "rank" in cols:
        rows.sort(key=lambda r: (1, 0) if r["rank"] is None else (0, r["rank"]))
    return [clean(r) for r in rows]


def best_algorithm(fit_rows: list[dict[str, Any]]) -> str | None:
    """The algorithm ranked 1 (lowest mare) with a finite mare, or None when nothing was fitted."""
    ranked = [r for r in fit_rows if r.get("mare") is not None and r.get("rounds")]
    if not ranked:
        return None
    return min(ranked, key=lambda r: (r.get("rank") or 1 << 30, r["mare"]))["algo"]


def flow_entry(fr: FlowResult) -> dict[str, Any]:
    """One flow's JSON object: its schema.FLOWS row, event counts, fit metrics and best algorithm."""
    flow = {c.name: fr.flow.get(c.name) for c in schema.FLOWS}
    ev = fr.events
    fit = _fit_rows(fr.fit)
    warnings = [*fr.events.warnings, *fr.warnings] if fr.events is not None else list(fr.warnings)
    # (the fit rows and the verdict are clean already: the rest is cleaned, in the same key order)
    head = clean({**flow, "vantage": str(flow.get("vantage") or (ev.vantage if ev is not None else "unknown"))})
    events = {
        "segments": ev.segments.height if ev is not None else 0,
        "acks": ev.acks.height if ev is not None else 0,
        "episodes": ev.episodes.height if ev is not None else 0,
        "rounds": ev.rounds.height if ev is not None else 0,
        "cwnd_limited_rounds": cwnd_limited_rounds(ev.rounds) if ev is not None else 0,
        "rtt_offset_s": float(ev.rtt_offset_s) if ev is not None else 0.0,
    }
    return {
        **head,
        "events": clean(events),
        "fit": fit,
        "best": clean(best_algorithm(fit)),
        "verdict": verdict_entry(fr),
        "warnings": clean([_warn(w) for w in _dedupe(warnings)]),
    }


def verdict_entry(fr: FlowResult) -> dict[str, Any]:
    """(1.3) The flow's verdict (:mod:`hscc_trace.analysis.verdict`) as a JSON object."""
    from hscc_trace.analysis.verdict import judge

    v = fr.verdict if fr.verdict is not None else judge(fr.events, fr.replays)
    return clean(v.as_dict())


def _dedupe(ws: list[Warn]) -> list[Warn]:
    seen: set[Any] = set()
    out = []
    for w in ws:
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


def _flows(cr: CaptureResult, lazy: bool) -> Any:
    """A capture's flow entries: built from its results, or, for a streamed capture (its
    ``summaries`` set), read from the spool — all at once, or one at a time with ``lazy``."""
    if cr.summaries is None:
        return [flow_entry(fr) for fr in cr.results]
    if any(s.entry is None for s in cr.summaries):
        raise ValueError("a streamed run without JSON entries (Stream(entries=False)) has no results document")
    entries = Entries([s.entry for s in cr.summaries])
    return entries if lazy else list(entries)


def capture_entry(
    cr: CaptureResult, *, digest: str | None = None, error: str | None = None, lazy: bool = False
) -> dict[str, Any]:
    """One capture's JSON object (``error`` set and no flows when it could not be read)."""
    p = Path(cr.meta.path)
    size = _size(p)
    return _with_hex(
        {
            "path": cr.meta.path,
            "name": p.name,
            "size_bytes": size,
            "blake3": digest if digest is not None else (digest_file(p) if size is not None else None),
            "meta": _meta(cr.meta),
            "flows": _flows(cr, lazy),
            "flows_total": int(cr.flows.height) if cr.flows is not None else len(cr.results),
            "warnings": [_warn(w) for w in cr.warnings],
            "error": error,
            "groups": _groups(cr),
        }
    )


def _groups(cr: CaptureResult) -> list[dict[str, Any]]:
    """(1.4) The capture's bottleneck groups (:mod:`hscc_trace.analysis.groups`)."""
    from hscc_trace.analysis.groups import groups_of_capture

    return [g.as_dict() for g in groups_of_capture(cr)]


def _size(p: Path) -> int | None:
    """Size of a regular file; None for anything else or when it cannot be looked at."""
    import stat

    try:
        st = p.stat()
    except (OSError, ValueError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _with_hex(entry: dict[str, Any]) -> dict[str, Any]:
    """Add ``path_hex`` (since 1.2) when the path is not valid UTF-8: ``path`` and ``name`` are
    then written with U+FFFD for the bytes that are not, and ``path_hex`` keeps the exact bytes."""
    from hscc_trace.names import raw_hex

    h = raw_hex(entry["path"])
    if h is not None:
        entry["path_hex"] = h
    return entry


def error_entry(path: str, message: str, *, digest: str | None = None) -> dict[str, Any]:
    """A capture that could not be read: its path, the one-line error and nothing else."""
    p = Path(path)
    size = _size(p)
    return _with_hex(
        {
            "path": path,
            "name": p.name,
            "size_bytes": size,
            "blake3": digest if digest is not None else (digest_file(p) if size is not None else None),
            "meta": None,
            "flows": [],
            "flows_total": 0,
            "warnings": [],
            "error": message,
        }
    )


def to_dict(
    analysis: Analysis,
    *,
    failed: dict[str, str] | None = None,
    order: list[str] | None = None,
    digests: dict[str, str | None] | None = None,
    lazy: bool = False,
) -> dict[str, Any]:
    """The results document for an :class:`~hscc_trace.model.Analysis`.

    ``failed`` maps capture paths that could not be read to their one-line message; they
    appear as capture entries with ``error`` set and no flows. ``order`` (the expanded input
    paths) fixes the order of the capture entries; by default readable captures come first.
    ``digests`` maps capture paths to digests already computed with :func:`digest_file` (a
    parallel run hashes the files while it works); other files are hashed here. With ``lazy``,
    the flows of a streamed run's captures are read from its spool as they are used
    (:class:`Entries`; :func:`write` copies them into the file).
    """
    known = digests or {}
    entries: dict[str, dict[str, Any]] = {}
    for cr in analysis.captures:
        entries[cr.meta.path] = capture_entry(cr, digest=known.get(cr.meta.path), lazy=lazy)
    for path, msg in (failed or {}).items():
        entries[path] = error_entry(path, msg, digest=known.get(path))
    keys = [k for k in (order or []) if k in entries]
    keys += [k for k in entries if k not in keys]
    return clean(
        {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "hscc-trace", "version": analysis.version},
            "created": analysis.created,
            "algorithms": list(analysis.algorithms),
            "params": analysis.params,
            "captures": [entries[k] for k in keys],
            "errors": list(analysis.errors),
            "verdict_rules": _verdict_rules(),
        }
    )


def _verdict_rules() -> dict[str, Any]:
    from hscc_trace.analysis.verdict import rules_dict

    return rules_dict()


# --- a streamed run's flow entries (hscc_trace.analysis.stream) ------------------------------

#: bytes of JSON entries held in memory before the spool moves to a temporary file
SPOOL_MEMORY = 8 << 20
#: indentation of a flow entry in the results document (captures[i].flows[j], indent 2)
ENTRY_INDENT = 8


class Spool:
    """Text written once and read back by offset: memory up to :data:`SPOOL_MEMORY`, then an
    unnamed temporary file (gone when closed or when the process ends)."""

    def __init__(self) -> None:
        self._f = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY, mode="w+b")
        self._end = 0
        self._lock = threading.Lock()

    def add(self, text: str) -> Entry:
        data = text.encode("utf-8")
        with self._lock:
            self._f.seek(self._end)
            self._f.write(data)
            off, self._end = self._end, self._end + len(data)
        return Entry(self, off, len(data))

    def read(self, offset: int, length: int) -> str:
        with self._lock:
            self._f.seek(offset)
            return self._f.read(length).decode("utf-8")

    def close(self) -> None:
        self._f.close()


@dataclass(frozen=True, slots=True)
class Entry:
    """A flow's JSON results entry in a :class:`Spool`: ``text()`` as the results document holds
    it (indented for its place), ``load()`` as a dict."""

    spool: Spool
    offset: int
    length: int

    def text(self) -> str:
        return self.spool.read(self.offset, self.length)

    def load(self) -> dict[str, Any]:
        return json.loads(self.text())


def entry_text(entry: dict[str, Any]) -> str:
    """A flow entry as :func:`hscc_trace.analysis.results.dumps` writes it in the document (its
    lines indented for ``captures[i].flows[j]``)."""
    text = json.dumps(entry, indent=2, ensure_ascii=False, allow_nan=False)
    return text.replace("\n", "\n" + " " * ENTRY_INDENT)


class Entries(Sequence[dict[str, Any]]):
    """A capture's flow entries read back from the spool one at a time (the ``flows`` of a
    results document from :func:`hscc_trace.analysis.results.to_dict` with ``lazy``)."""

    def __init__(self, entries: list[Entry]) -> None:
        self._entries = entries

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [e.load() for e in self._entries[i]]
        return self._entries[i].load()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (e.load() for e in self._entries)

    def texts(self) -> Iterator[str]:
        """Each entry's text, as the document holds it (:func:`entry_text`)."""
        return (e.text() for e in self._entries)


# --- reading, writing, validating --------------------------------------------------------------


@lru_cache(maxsize=1)
def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the results document."""
    text = resources.files("hscc_trace.analysis").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def validate(doc: dict[str, Any]) -> None:
    """Raise :class:`InputError` naming the first violation when ``doc`` does not match the schema.

    The same full validation wherever it runs (``jsonschema`` is a dependency of the package).
    """
    major = str(doc.get("schema_version", "")).split(".")[0] if isinstance(doc, dict) else ""
    if major not in READ_MAJORS:
        raise InputError(
            f"results schema_version {doc.get('schema_version') if isinstance(doc, dict) else None!r} "
            f"is not compatible with {SCHEMA_VERSION}"
        )
    import jsonschema

    validator = jsonschema.Draft202012Validator(json_schema())
    err = jsonschema.exceptions.best_match(validator.iter_errors(doc))
    if err is not None:
        where = "/".join(str(p) for p in err.absolute_path) or "(root)"
        raise InputError(f"results document invalid at {where}: {err.message}")


def dumps(doc: dict[str, Any]) -> str:
    """Stable JSON text (2-space indent, keys in insertion order, trailing newline)."""
    return "".join(chunks(doc))


def chunks(doc: dict[str, Any]) -> Iterator[str]:
    """:func:`dumps`'s text in pieces: a streamed capture's flow entries
    (:class:`Entries`) are copied from the spool one at a time, so
    that the text of a 50 000-flow document is never held whole."""
    lists: list[Entries] = []
    caps = []
    for c in doc.get("captures", []):
        if isinstance(c.get("flows"), Entries):
            lists.append(c["flows"])
            c = {**c, "flows": f"\0hscc-flows:{len(lists) - 1}\0"}
        caps.append(c)
    text = json.dumps(clean({**doc, "captures": caps}), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    pos = 0
    for k, flows in enumerate(lists):
        token = f'"\\u0000hscc-flows:{k}\\u0000"'
        at = text.index(token, pos)
        yield text[pos:at]
        if not len(flows):
            yield "[]"
        else:
            pad = " " * ENTRY_INDENT
            yield "["
            for j, t in enumerate(flows.texts()):
                yield ("\n" if j == 0 else ",\n") + pad + t
            yield "\n" + " " * (ENTRY_INDENT - 2) + "]"
        pos = at + len(token)
    yield text[pos:]


def write(doc: dict[str, Any], path: str | Path) -> Path:
    """Write the document to ``path`` (parent directories created), piece by piece
    (:func:`chunks`). Raises InputError on failure."""
    from hscc_trace.atomic import write_with

    def put(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            for piece in chunks(doc):
                try:
                    f.write(piece.encode("utf-8"))
                except UnicodeEncodeError:  # (as hscc_trace.atomic.write_text: lone surrogates as U+FFFD)
                    f.write(piece.encode("utf-8", "surrogateescape").decode("utf-8", "replace").encode("utf-8"))

    return write_with(path, put, "results")  # temporary file + rename: never a truncated file


def read(path: str | Path, *, check_schema: bool = True) -> dict[str, Any]:
    """Read a results document (e.g. a `check --baseline`), validating it against the schema."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{p}: results file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot read results ({exc})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not a JSON results file ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{p}: not a JSON results file (top level is not an object)")
    if check_schema:
        try:
            validate(doc)
        except InputError as exc:
            raise InputError(f"{p}: {exc}") from None
    return doc


def comparable(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy without the fields that differ between identical runs (:data:`VOLATILE`)."""
    return {k: v for k, v in doc.items() if k not in VOLATILE}


# --- the JSON Schema, generated from hscc_trace.schema ----------------------------------------
# results.schema.json is this function's output (`python -m hscc_trace.analysis.results >
# hscc_trace/analysis/results.schema.json`); tests/analysis/test_results_schema.py fails when they differ.


def _column_schema(col: schema.Column) -> dict[str, Any]:
    if col.name == "vantage":
        t: dict[str, Any] = {"enum": list(schema.VANTAGES)}
    elif col.name == "rtt_method":  # null when the flow has no RTT
        t = {"enum": [*schema.RTT_METHODS, None]}
    elif col.dtype == pl.String:
        t = {"type": ["string", "null"]}
    elif col.dtype == pl.Boolean:
        t = {"type": ["boolean", "null"]}
    elif col.dtype in (pl.Float64, pl.Float32):
        t = {"type": ["number", "null"]}
    elif col.dtype in (pl.Int8, pl.Int16, pl.Int32, pl.Int64):
        t = {"type": ["integer", "null"]}
    elif col.dtype in (pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64):
        t = {"type": ["integer", "null"], "minimum": 0}
    else:  # pragma: no cover - a new dtype in schema.py needs a mapping here
        raise TypeError(f"no JSON type for {col.name}: {col.dtype}")
    return {**t, "description": col.doc + (f" [{col.unit}]" if col.unit else "")}


def _columns_schema(cols: tuple[schema.Column, ...], skip: tuple[str, ...] = ()) -> dict[str, Any]:
    return {c.name: _column_schema(c) for c in cols if c.name not in skip}


def schema_document() -> dict[str, Any]:
    """The JSON Schema of the results document, built from :mod:`hscc_trace.schema`."""
    flow_props = _columns_schema(schema.FLOWS)
    fit_props = _columns_schema(schema.FIT_METRICS, skip=("flow_id",))
    fit_props["algo"]["type"] = "string"
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://hscc-trace.invalid/results.schema.json",
        "title": "hscc-trace analyze results",
        "description": (
            "Results of `hscc-trace analyze --json`, written by hscc_trace/analysis/results.py and documented in "
            "docs/results.md. Units follow hscc_trace/schema.py: times ns since the Unix epoch, durations "
            "and RTTs s, windows packets, rates bit/s. Non-finite numbers are null."
        ),
        "type": "object",
        "required": ["schema_version", "tool", "created", "algorithms", "params", "captures", "errors"],
        "additionalProperties": False,
        "properties": {
            "schema_version": {
                "type": "string",
                "pattern": r"^[12]\.[0-9]+$",
                "description": "MAJOR.MINOR; readers accept the same MAJOR, and 1.x (a capture's sha256 for its blake3)",
            },
            "tool": {
                "type": "object",
                "required": ["name", "version"],
                "additionalProperties": False,
                "properties": {"name": {"const": "hscc-trace"}, "version": {"type": "string"}},
            },
            "created": {"type": "string", "format": "date-time", "description": "UTC time of the run (ISO 8601)"},
            "algorithms": {
                "type": "array",
                "items": {"type": "string"},
                "description": "algorithm labels replayed, in order",
            },
            "params": {
                "type": "object",
                "description": "algorithm label -> every parameter actually used (defaults included)",
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": {"type": ["number", "integer", "string", "boolean", "null"]},
                },
            },
            "captures": {
                "type": "array",
                "items": {"$ref": "#/$defs/capture"},
                "description": "one entry per input capture, in input order",
            },
            "errors": {
                "type": "array",
                "items": {"type": "string"},
                "description": "one line per capture that could not be read and per flow that could not be analyzed",
            },
            "verdict_rules": {
                "type": "object",
                "description": "(since 1.3) the thresholds of every flow's verdict (docs/verdicts.md)",
                "additionalProperties": {"type": ["number", "integer"]},
            },
            "quic": {
                "type": "array",
                "items": {"$ref": "#/$defs/qlog"},
                "description": "(since 2.1) one entry per input qlog file, in input order (docs/quic.md)",
            },
        },
        "$defs": {
            "qlog": _qlog_schema(),
            "quic_connection": _quic_connection_schema(),
            "verdict": _verdict_schema(),
            "warning": _warning_schema(),
            "meta": _meta_schema(),
            "events": _events_schema(),
            "fit": {
                "type": "object",
                "additionalProperties": False,
                "required": list(fit_props),
                "properties": fit_props,
            },
            "flow": _flow_schema(flow_props),
            "capture": _capture_schema(),
            "group": _group_schema(),
        },
    }


def _warning_schema() -> dict[str, Any]:
    """A warning: source, message, count, and what was not read of a capture only partly read."""
    return {
        "type": "object",
        "required": ["source", "message", "count"],
        "additionalProperties": False,
        "properties": {
            "source": {"type": "string"},
            "message": {"type": "string"},
            "count": {"type": "integer", "minimum": 1},
            "lost": {
                "type": "object",
                "additionalProperties": False,
                "required": ["bytes", "records"],
                "description": "(since 1.2) present when the capture was only partly "
                "read: what was not read (null: cannot be known)",
                "properties": {
                    "bytes": {"type": ["integer", "null"], "minimum": 0},
                    "records": {"type": ["integer", "null"], "minimum": 0, "description": "estimate"},
                },
            },
        },
    }


def _meta_schema() -> dict[str, Any]:
    """A capture's file facts (formats, link types, records read and decoded)."""
    count = {"type": "integer", "minimum": 0}
    counts = {"type": "object", "additionalProperties": count}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [
            "format",
            "link_types",
            "snaplen",
            "packets_total",
            "packets_tcp",
            "first_ns",
            "last_ns",
            "duration_s",
            "bpf",
            "skipped",
            "decoded_by",
        ],
        "properties": {
            "format": {"type": "string", "description": "pcap, pcap-ns or pcapng (+ .gz)"},
            "link_types": {"type": "array", "items": {"type": "string"}, "description": "libpcap DLT names"},
            "snaplen": {"type": ["integer", "null"], "description": "[bytes]"},
            "packets_total": {**count, "description": "records read"},
            "packets_tcp": {**count, "description": "records decoded as TCP"},
            "first_ns": {"type": ["integer", "null"], "description": "first record time [ns]"},
            "last_ns": {"type": ["integer", "null"], "description": "last record time [ns]"},
            "duration_s": {"type": "number", "minimum": 0, "description": "[s]"},
            "bpf": {"type": ["string", "null"], "description": "BPF filter applied when reading"},
            "skipped": {**counts, "description": "reason -> records not decoded as TCP"},
            "decoded_by": {**counts, "description": "decoder -> records"},
        },
    }


def _events_schema() -> dict[str, Any]:
    """A flow's event counts."""
    count = {"type": "integer", "minimum": 0}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["segments", "acks", "episodes", "rounds", "cwnd_limited_rounds", "rtt_offset_s"],
        "properties": {
            "segments": {**count, "description": "data segments of the sender"},
            "acks": {**count, "description": "ACKs from the receiver"},
            "episodes": {**count, "description": "congestion episodes"},
            "rounds": {**count, "description": "RTT rounds"},
            "cwnd_limited_rounds": {
                **count,
                "description": "rounds limited by the congestion window (the only ones fitted)",
            },
            "rtt_offset_s": {"type": "number", "description": "RTT correction for the vantage point [s]"},
        },
    }


def _flow_schema(flow_props: dict[str, Any]) -> dict[str, Any]:
    """A flow: the flows table's columns, its events, fits, best fit, verdict and warnings."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [*(k for k in flow_props if k not in ADDED_SINCE_1_0), "events", "fit", "best", "warnings"],
        "properties": {
            **flow_props,
            "events": {"$ref": "#/$defs/events"},
            "fit": {
                "type": "array",
                "items": {"$ref": "#/$defs/fit"},
                "description": "fit of each algorithm, best (rank 1) first",
            },
            "best": {
                "type": ["string", "null"],
                "description": "best-fitting algorithm (rank 1); null when nothing could be fitted",
            },
            "verdict": {"$ref": "#/$defs/verdict"},
            "warnings": {"type": "array", "items": {"$ref": "#/$defs/warning"}},
        },
    }


def _capture_schema() -> dict[str, Any]:
    """A capture: its path and identity, file facts, flows, warnings, error and groups."""
    count = {"type": "integer", "minimum": 0}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [
            "path",
            "name",
            "size_bytes",
            "meta",
            "flows",
            "flows_total",
            "warnings",
            "error",
        ],
        "properties": {
            "path": {"type": "string", "description": "the capture's path as given (directories expanded)"},
            "name": {"type": "string", "description": "file name"},
            "path_hex": {
                "type": "string",
                "pattern": "^([0-9a-f]{2})*$",
                "description": "(since 1.2) the path's bytes in hex, present only when the "
                "path is not valid UTF-8 (path and name then show U+FFFD)",
            },
            "size_bytes": {"type": ["integer", "null"], "minimum": 0},
            CAPTURE_DIGEST: {
                "type": ["string", "null"],
                "pattern": "^[0-9a-f]{64}$",
                "description": "(since 2.0, written always) BLAKE3 of the file's bytes: identifies the "
                "capture when comparing with a baseline; null for a pipe",
            },
            "sha256": {
                "type": ["string", "null"],
                "pattern": "^[0-9a-f]{64}$",
                "description": "(1.x only) SHA-256 of the file's bytes, the identity documents of major 1 carry",
            },
            "meta": {
                "oneOf": [{"$ref": "#/$defs/meta"}, {"type": "null"}],
                "description": "null when the capture could not be read",
            },
            "flows": {
                "type": "array",
                "items": {"$ref": "#/$defs/flow"},
                "description": "analyzed flows, by flow_id",
            },
            "flows_total": {**count, "description": "flows in the capture (before --flow selection)"},
            "warnings": {"type": "array", "items": {"$ref": "#/$defs/warning"}},
            "error": {
                "type": ["string", "null"],
                "description": "one-line reason the capture could not be read",
            },
            "groups": {
                "type": "array",
                "items": {"$ref": "#/$defs/group"},
                "description": "(since 1.4) bottleneck groups: flows sharing a bottleneck (docs/groups.md)",
            },
        },
    }


def _qlog_schema() -> dict[str, Any]:
    """(2.1) One qlog file of the run (docs/results.md, docs/quic.md)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["path", "name", "size_bytes", CAPTURE_DIGEST, "connections", "warnings", "error"],
        "properties": {
            "path": {"type": "string", "description": "the qlog file's path as given"},
            "name": {"type": "string", "description": "file name"},
            "size_bytes": {"type": ["integer", "null"], "minimum": 0},
            CAPTURE_DIGEST: {
                "type": ["string", "null"],
                "pattern": "^[0-9a-f]{64}$",
                "description": "BLAKE3 of the file",
            },
            "connections": {"type": "array", "items": {"$ref": "#/$defs/quic_connection"}},
            "warnings": {"type": "array", "items": {"type": "string"}, "description": "one line each, with counts"},
            "error": {"type": ["string", "null"], "description": "one-line reason the file could not be read"},
        },
    }


def _quic_connection_schema() -> dict[str, Any]:
    """(2.1) One QUIC connection: schema.QUIC_CONNECTIONS, the importer's checks and the replays."""
    props = _columns_schema(schema.QUIC_CONNECTIONS)
    # (hscc_trace.qlog.streams: "unknown" when the trace names no vantage; the sender then "peer" or "unknown")
    props["vantage"] = {"enum": ["client", "server", "unknown"], "description": props["vantage"]["description"]}
    sender = {"enum": ["client", "server", "peer", "unknown"], "description": props["data_sender"]["description"]}
    props["data_sender"] = sender
    num = {"type": ["number", "null"]}
    replay = {
        "type": "object",
        "required": ["algorithm", "flavor", "losses", "acks", "median", "p90"],
        "properties": {"algorithm": {"type": "string"}, "flavor": {"type": "string"}, "losses": {"type": "string"}},
        "description": "one QUIC replay against the logged cwnd: relative error median / p90 / p99, exact fraction",
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [c.name for c in schema.QUIC_CONNECTIONS] + ["losses", "checks", "replays", "verdict"],
        "properties": {
            **props,
            "peer_ack_delay_exponent": {"type": ["integer", "null"], "minimum": 0},
            "peer_max_ack_delay_s": {**num, "description": "[s]"},
            "handshake_confirmed_s": {**num, "description": "[s] since the trace's reference time"},
            "losses": {
                "type": "object",
                "description": "stack's packet_lost against our RFC 9002 §6.1 detection: stack, ours, both, "
                "stack_only, ours_only, median_delay_s",
            },
            "checks": {"type": "object", "description": "importer's values against the logged ones (docs/quic.md)"},
            "replays": {"type": "array", "items": replay},
            "departures": {
                "type": "array",
                "items": {"type": "object"},
                "description": "aioquic parameters switched back",
            },
            "verdict": {
                "type": ["string", "null"],
                "description": "one line: the algorithm followed and how the stack departs from the RFC; or, when "
                "no replay is within the naming bound, 'unknown: no replay follows the logged window' and the "
                "best fit's errors (docs/quic.md)",
            },
        },
    }


def quic_entry(path: str, summary: dict[str, Any] | None, error: str | None = None) -> dict[str, Any]:
    """(2.1) The results entry of one qlog file: :func:`hscc_trace.qlog.summary` (None: unreadable)."""
    from hscc_trace.qlog import connection_row

    p = Path(path)
    try:
        size: int | None = p.stat().st_size
    except OSError:
        size = None
    conns = []
    for i, c in enumerate((summary or {}).get("connections", [])):
        keep = ("peer_ack_delay_exponent", "peer_max_ack_delay_s", "handshake_confirmed_s", "losses", "checks")
        conns.append(
            {
                **connection_row(i, c),
                **{k: c[k] for k in keep},
                "replays": c["replays"],
                **({"departures": c["departures"]} if "departures" in c else {}),
                "verdict": c.get("verdict"),
            }
        )
    return {
        "path": path,
        "name": p.name,
        "size_bytes": size,
        CAPTURE_DIGEST: digest_file(p) if size is not None else None,
        "connections": conns,
        "warnings": list((summary or {}).get("warnings", [])),
        "error": error,
    }


def quic_document(entries: list[dict[str, Any]], algorithms: Sequence[str], version: str) -> dict[str, Any]:
    """(2.1) The results document of a run over qlog files: no capture, one ``quic`` entry each."""
    return clean(
        {
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "hscc-trace", "version": version},
            "created": utc_now(),
            "algorithms": list(algorithms),
            "params": {},
            "captures": [],
            "errors": [e["error"] for e in entries if e["error"]],
            "quic": entries,
        }
    )


def _group_schema() -> dict[str, Any]:
    """(1.4) One bottleneck group (hscc_trace.analysis.groups.Group.as_dict; docs/groups.md)."""
    num = {"type": ["number", "null"]}
    ids = {"type": "array", "items": {"type": "integer", "minimum": 0}}
    flow = {
        "type": "object",
        "additionalProperties": False,
        "required": [
            "flow_id",
            "label",
            "algo",
            "algo_source",
            "start_ns",
            "end_ns",
            "bytes",
            "goodput_bps",
            "throughput_bps",
            "share",
            "normalized",
            "friendliness",
            "rtt_mean_s",
            "rtt_min_s",
            "episodes",
            "synchronized",
        ],
        "properties": {
            "flow_id": {"type": "integer", "minimum": 0},
            "label": {"type": "string", "description": "flow id and endpoints, data sender first"},
            "algo": {"type": ["string", "null"], "description": "the flow's algorithm label, when known"},
            "algo_source": {"enum": ["truth", "verdict", "unknown"], "description": "where the label comes from"},
            "start_ns": {"type": "integer", "description": "first data segment [ns]"},
            "end_ns": {"type": "integer", "description": "last advancing ACK [ns]"},
            "bytes": {"type": "integer", "minimum": 0, "description": "delivered in the measurement interval [bytes]"},
            "goodput_bps": {"type": "number", "description": "over the measurement interval [bit/s]"},
            "throughput_bps": {"type": "number", "description": "sent incl. retransmissions, same interval [bit/s]"},
            "share": {**num, "description": "of the group's goodput (fraction)"},
            "normalized": {**num, "description": "goodput over the fair share (n · share)"},
            "friendliness": {**num, "description": "goodput over the reference co-flows' mean goodput"},
            "rtt_mean_s": {**num, "description": "mean RTT sample [s]"},
            "rtt_min_s": {**num, "description": "smallest RTT sample [s]"},
            "episodes": {"type": "integer", "minimum": 0, "description": "congestion episodes"},
            "synchronized": {
                "type": "integer",
                "minimum": 0,
                "description": "of them within one RTT of another flow's",
            },
        },
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [
            "index",
            "flow_ids",
            "start_ns",
            "end_ns",
            "interval_ns",
            "window_s",
            "jain",
            "jain_windows",
            "total_goodput_bps",
            "capacity_bps",
            "utilization",
            "convergence_s",
            "converged",
            "reference",
            "rtt_fairness",
            "sync_fraction",
            "flows",
            "episodes",
            "windows",
            "options",
        ],
        "properties": {
            "index": {"type": "integer", "minimum": 0},
            "flow_ids": ids,
            "start_ns": {"type": "integer", "description": "start of the shared time axis [ns]"},
            "end_ns": {"type": "integer", "description": "end of the last flow's data [ns]"},
            "interval_ns": {"type": "array", "items": {"type": "integer"}, "description": "measurement interval [ns]"},
            "window_s": {"type": "number", "description": "window of the shared axis [s]"},
            "jain": {**num, "description": "Jain's index of the flows' goodput over the measurement interval"},
            "jain_windows": {
                "type": "object",
                "additionalProperties": num,
                "description": "min/median/mean per window",
            },
            "total_goodput_bps": {"type": "number", "description": "[bit/s]"},
            "capacity_bps": {**num, "description": "estimated bottleneck capacity, goodput terms [bit/s]"},
            "utilization": {**num, "description": "total goodput / capacity"},
            "convergence_s": {**num, "description": "time to stay within the tolerance of the fair share [s]"},
            "converged": {"type": "boolean"},
            "reference": {**ids, "description": "the friendliness ratio's reference flows"},
            "rtt_fairness": {"type": "array", "items": {"type": "object"}, "description": "one entry per pair"},
            "sync_fraction": {**num, "description": "share of the episodes synchronized with another flow's"},
            "flows": {"type": "array", "items": flow},
            "episodes": {"type": "array", "items": {"type": "object"}, "description": "every flow's episodes, by time"},
            "windows": {
                "type": "object",
                "description": "the shared time axis: t_s, len_s, jain, total_bps, congested; goodput_bps and "
                "throughput_bps one list per flow",
                "additionalProperties": {"type": "array", "items": {"type": ["number", "boolean", "null", "array"]}},
            },
            "options": {"type": "object", "description": "the measurement's parameters"},
        },
    }


def _verdict_schema() -> dict[str, Any]:
    from hscc_trace.analysis.verdict import CLASSES

    num = {"type": ["number", "null"]}
    cnt = {"type": ["integer", "null"], "minimum": 0}
    names = {"type": "array", "items": {"type": "string"}}
    return {
        "type": "object",
        "additionalProperties": False,
        "description": "(since 1.3) which algorithm the sender ran, or why none can be named (docs/verdicts.md)",
        "required": [
            "class",
            "name",
            "candidates",
            "candidate_errors",
            "equivalent",
            "error",
            "threshold",
            "runner_up",
            "runner_up_error",
            "closer_rounds",
            "differing_rounds",
            "rounds",
            "basis",
            "reason",
            "evidence",
        ],
        "properties": {
            "class": {"enum": list(CLASSES)},
            "name": {
                "type": ["string", "null"],
                "description": "the algorithm named (identified or behaves as only)",
            },
            "candidates": {
                **names,
                "description": "identified, behaves as: the name; ambiguous: every algorithm that fits",
            },
            "candidate_errors": {"type": "array", "items": num, "description": "median relative error of each"},
            "equivalent": {**names, "description": "algorithms indistinguishable from the named one on this flow"},
            "error": {**num, "description": "median relative error of the best fit"},
            "threshold": {**num, "description": "the error threshold that applied to it"},
            "runner_up": {"type": ["string", "null"]},
            "runner_up_error": num,
            "closer_rounds": {**cnt, "description": "rounds the named one was closer to the sender than the runner-up"},
            "differing_rounds": {**cnt, "description": "rounds where the two replays differ beyond the tie"},
            "rounds": {"type": "integer", "minimum": 0, "description": "rounds judged"},
            "basis": {"enum": ["window", "rate"], "description": "cwnd-limited rounds, or every round (rate-based)"},
            "reason": {"type": "string", "description": "the verdict in plain words"},
            "outside_range": {
                **names,
                "description": "(since 1.5) where the flow lies outside the conditions the verdict was validated "
                "on, one phrase each; empty: within (docs/verdicts.md)",
            },
            "validated_range": {"type": "string", "description": "(since 1.5) those conditions, in words"},
            "evidence": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "vantage": {"enum": list(schema.VANTAGES)},
                    "episodes": {"type": "integer", "minimum": 0},
                    "beta": {"type": "array", "items": {"type": "number"}, "description": "per loss episode"},
                    "beta_median": num,
                    "ack_clocked": {**num, "description": "share of segments released by ACKs (sender only)"},
                    "paced": {
                        "type": ["boolean", "null"],
                        "description": "ack_clocked below 0.5 (sender only); null where the smallest RTT is 200 µs or "
                        "less: the share cannot tell pacing there (docs/verdicts.md)",
                    },
                    "growth": {"type": ["string", "null"]},
                    "growth_pkts_per_round": {**num, "description": "[packets]"},
                    "delay_bounded": {"type": ["boolean", "null"]},
                    "rounds": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
                    "queued_rounds": {"type": "integer", "minimum": 0},
                    "capacity_reached": {"type": "boolean"},
                    "rate_bps": {**num, "description": "(since 1.5) [bit/s] bytes acknowledged over the ACK span"},
                    "min_rtt_s": {**num, "description": "(since 1.5) [s] the smallest RTT sample"},
                    "retrans_fraction": {**num, "description": "(since 1.5) retransmitted / data segments"},
                    "ack_burst_pkts": {
                        **num,
                        "description": "(since 1.5) [packets] 95th percentile of the segments acknowledged per ACK "
                        "burst (sender only)",
                    },
                    "probes": {
                        "type": ["integer", "null"],
                        "minimum": 0,
                        "description": "(since 2.3) rounds whose flight rose above its neighbours' and fell back "
                        "without a loss (BBR's probe; null: no rounds after slow start)",
                    },
                    "gain_cycles": {
                        "type": ["integer", "null"],
                        "minimum": 0,
                        "description": "(since 2.3) spans of 5–10 rounds from one probe to the next (BBR's gain cycle)",
                    },
                },
            },
        },
    }


if __name__ == "__main__":  # pragma: no cover - schema generator
    import sys

    sys.stdout.write(json.dumps(schema_document(), indent=2, ensure_ascii=False) + "\n")
