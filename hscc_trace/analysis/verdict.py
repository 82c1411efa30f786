"""The verdict of one flow: which algorithm its sender ran — or, honestly, that the data cannot say.

Every replayed algorithm is compared with the sender round by round (the fit of
:mod:`hscc_trace.replay.metrics`: the replayed window at the end of each cwnd-limited round
outside recovery against the round's peak flight), and the flow gets one of five classes
(docs/verdicts.md says why each rule is what it is, with the measurements behind the numbers):

``identified``
    One algorithm fits (median error within its threshold) and every other one that fits is
    significantly further from the sender: in the rounds where the two replays differ by more
    than the capture point's measurement resolution, the named one is closer so often that
    chance is ruled out (one-sided sign test, p < :attr:`Rules.p_value`). Algorithms whose
    replay is *identical* on this flow (HighSpeed below its Low_Window is Reno; Kyushu-TCP is
    its base until its hold engages) cannot be told apart by any trace: the verdict names the
    simplest (:data:`PARSIMONY`) and lists the others as equivalent.
``behaves as``
    As ``identified``, for an algorithm whose window algorithms outside the library also
    produce when their own signal is absent (:data:`SHARED_WINDOW`: Reno's is TCP-LP's, DCTCP's,
    H-TCP's and CDG's then): the sender's window was the named algorithm's, which a trace can
    show, not that the sender runs it, which it cannot.
``ambiguous``
    Several fit and the data cannot rank them: all are listed, best first.
``unknown``
    Nothing fits within its threshold, or only loosely (where the flight is exact, not even the
    best within :attr:`Rules.name_error`): no name is given.
``not enough data``
    Too few cwnd-limited rounds to judge (the receive window or the application limited the
    sender, or the flow was too short), and no rate-based evidence either: the reason says
    which.

Specificity comes first (docs/verdicts.md gives the measurements): two replays are told apart
only by differences beyond a tie that grows with the window, and never by one whose median error
is higher; an extension (what :func:`reductions` lists) is named only when its own mechanism was
active in its replay (:func:`engaged_rounds`), its error is not higher than the simpler
algorithm's and it fits significantly better; where the flight is exact a window-based name, or
a list of them, needs a replay within :attr:`Rules.name_error` (:func:`_loose`); a rate-based
name needs rate-based evidence (:func:`_window_evidence`, :func:`_rate_evidence`). Every verdict states the conditions it was
validated on (:data:`ENVELOPE`) and where the flow lies outside them (:func:`outside_range`).

A rate-based sender (BBR) is judged on its own terms as well: its flight is set by pacing, not
by a window, so its rounds are seldom cwnd-limited. When the window comparison cannot decide
(too few rounds, or nothing fits) and the flow shows rate-based behaviour — paced sending at
the sender, or no multiplicative decrease over several loss episodes — and it reached the
path's capacity, BBR's replayed in-flight cap is compared with the flight over every round the
receive window did not limit.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from hscc_trace.analysis.evidence import CLOCK_US, Evidence, clock_measurable, observe
from hscc_trace.model import FlowEvents
from hscc_trace.perf.jit import njit

IDENTIFIED, AMBIGUOUS, UNKNOWN, NOT_ENOUGH_DATA = "identified", "ambiguous", "unknown", "not enough data"
BEHAVES_AS = "behaves as"
CLASSES = (IDENTIFIED, BEHAVES_AS, AMBIGUOUS, UNKNOWN, NOT_ENOUGH_DATA)
NAMED = (IDENTIFIED, BEHAVES_AS)  # the classes that name an algorithm

#: Library algorithms whose window is also what algorithms outside the library set while their
#: own signal is absent — each from the kernel module's source, each seen in samples/zoo/
#: (docs/zoo.md). Where the verdict would name one of these, it says ``behaves as``: a trace shows
#: the window, and these senders' windows are the same one.
SHARED_WINDOW: dict[str, tuple[str, ...]] = {
    "reno": (
        # tcp_lp.c: Reno's tcp_reno_cong_avoid and tcp_reno_ssthresh unless its one-way-delay test
        # fires; Linux's never fires again after its first cut, docs/zoo.md
        "TCP-LP while its one-way-delay test does not fire",
        # tcp_dctcp.c: dctcp_react_to_loss halves on a loss; only an ECE cut is α-proportional
        "DCTCP without CE marks",
        # tcp_htcp.c htcp_alpha_update: α = 1 until Δ_L = 1 s after a congestion event; β = 0.5 until
        # its mode switch
        "H-TCP within 1 s of a congestion event",
        # tcp_cdg.c: tcp_reno_cong_avoid, and cwnd/2 on a loss while no delay-gradient backoff set
        # the shadow window
        "CDG while its delay-gradient backoff does not act",
    ),
}
SHARED_WINDOW["newreno"] = SHARED_WINDOW["reno"]

#: Which of several algorithms whose replays coincide on a flow the verdict names: the one the
#: others reduce to (HighSpeed is Reno below Low_Window, Kyushu-TCP is its base until its hold
#: engages, the HRF-TCP rows share HRF's hooks). Names not listed come after, alphabetically.
PARSIMONY = (
    "reno",
    "cubic",
    "bbr",
    "vegas",
    "westwood",
    "highspeed",
    "compound",
    "fusion",
    "hrf",
    "hrf-cr",
    "hrf-ci",
    "hrf-w-cr-reno",
    "hrf-w-cr-cr",
    "newreno",
)


@dataclass(frozen=True)
class Rules:
    """The thresholds of the verdict (docs/verdicts.md gives the measurements behind each)."""

    min_rounds: int = 8  # rounds — fewer judged rounds: not enough data
    max_error: float = 0.15  # median relative error above which a window-based replay does not fit
    max_error_rate: float = 0.25  # the same for a rate-based algorithm (its flight swings ±25 % by design)
    p_value: float = 0.005  # at the sender: ruled out when another fitting algorithm is closer this significantly
    p_value_elsewhere: float = 0.001  # the same where the flight is reconstructed by time (stricter)
    tie_at_sender: float = 0.5  # packets — replays closer than this tie where the flight is exact
    tie_elsewhere: float = 2.5  # packets — the same where it is reconstructed by time (within ~2 MSS)
    no_decrease_beta: float = 0.85  # β at or above this over several episodes: no multiplicative decrease
    no_decrease_episodes: int = 3  # episodes needed for that evidence
    tie_fraction: float = 0.005  # of the sender's window — the tie grows with it: max(tie, 0.5 % of the window)
    min_engaged_rounds: int = 8  # judged rounds — an extension's own mechanism must be active in as many
    decrease_beta: float = 0.8  # β at or below this over several episodes: a multiplicative decrease (not BBR)
    decrease_episodes: int = 2  # episodes needed for that evidence …
    decrease_skip: int = 2  # … after the first this many (slow start: BBR's STARTUP overshoot falls back too)
    ack_clocked_above: float = 0.9  # share of segments ACK-released at or above which a sender is window-based
    name_error: float = 0.02  # a window-based algorithm is named only within this where the flight is exact
    gain_cycles: int = 6  # BBR gain cycles (evidence.probes, every 5–10 rounds) that show a rate-based sender …
    gain_cycle_share: float = 0.75  # … when at least this share of the spans between probes are cycles


RULES = Rules()


@dataclass(frozen=True)
class Envelope:
    """The conditions the verdict's rules were chosen and validated on: the span of the tuning
    samples (samples/splits.json; ``tests/analysis/test_identification.py`` recomputes it from them and
    fails when this differs). A flow outside it gets a verdict all the same, which says so
    (:func:`outside_range`); ``check`` does not count it as verified unless allowed."""

    # bit/s — goodput: from the slowest tuning flow's (2.0 Mbit/s, application-limited) to the
    # fastest tuning link (50 Mbit/s)
    rate_bps: tuple[float, float] = (2.0e6, 50e6)
    # s — the smallest RTT sample: the tuning paths' base RTTs (10–100 ms) and up to 5 % above them
    # (the sample adds serialization and the stacks' delay: measured 10.29–101.44 ms)
    min_rtt_s: tuple[float, float] = (0.010, 0.105)
    retrans_fraction: float = 0.07  # retransmitted / data segments, at most (tuning: up to 6.9 %)
    vantages: tuple[str, ...] = ("sender", "receiver")
    ack_burst_pkts: float = 8.0  # packets — 95th percentile of segments per ACK burst, at most (tuning: 1–8)

    def describe(self) -> str:
        """``2–50 Mbit/s, RTT 10–105 ms, ≤ 7% of segments retransmitted, captured at the sender or
        receiver, ACK bursts ≤ 8 packets``."""
        return (
            f"{_rate(self.rate_bps[0], False)}–{_rate(self.rate_bps[1])}, RTT {self.min_rtt_s[0] * 1e3:.3g}–"
            f"{self.min_rtt_s[1] * 1e3:.3g} ms, ≤ {self.retrans_fraction:.0%} of segments retransmitted, captured at "
            f"the {' or '.join(self.vantages)}, ACK bursts ≤ {self.ack_burst_pkts:g} packets"
        )


ENVELOPE = Envelope()


def _rate(bps: float, unit: bool = True) -> str:
    if bps >= 1e9:
        return f"{bps / 1e9:.3g}" + (" Gbit/s" if unit else "")
    return f"{bps / 1e6:.3g}" + (" Mbit/s" if unit else "")


def outside_range(ev: Evidence, env: Envelope = ENVELOPE) -> tuple[str, ...]:
    """Where the flow lies outside the validated conditions, one phrase each (empty: within),
    e.g. ``1.37 Gbit/s: beyond the validated 2–50 Mbit/s``."""
    out = []
    lo, hi = env.rate_bps
    if ev.rate_bps is not None and not lo <= ev.rate_bps <= hi:
        out.append(
            f"{_rate(ev.rate_bps)}: {'beyond' if ev.rate_bps > hi else 'below'} the validated "
            f"{_rate(lo, False)}–{_rate(hi)}"
        )
    lo, hi = env.min_rtt_s
    if ev.min_rtt_s is not None and not lo <= ev.min_rtt_s <= hi:
        out.append(
            f"RTT {ev.min_rtt_s * 1e3:.3g} ms: {'beyond' if ev.min_rtt_s > hi else 'below'} the validated "
            f"{lo * 1e3:.3g}–{hi * 1e3:.3g} ms"
        )
    if ev.retrans_fraction is not None and ev.retrans_fraction > env.retrans_fraction:
        out.append(
            f"{ev.retrans_fraction:.1%} of segments retransmitted: beyond the validated {env.retrans_fraction:.0%}"
        )
    if ev.vantage not in env.vantages:
        where = "capture point unknown" if ev.vantage == "unknown" else f"captured {ev.vantage}"
        out.append(f"{where}: validated at the {' and '.join(env.vantages)} only")
    if ev.ack_burst_pkts is not None and ev.ack_burst_pkts > env.ack_burst_pkts:
        out.append(
            f"ACKs arrive in bursts of {ev.ack_burst_pkts:.0f} packets: beyond the validated {env.ack_burst_pkts:g}"
        )
    return tuple(out)


def rules_dict(rules: Rules = RULES) -> dict[str, Any]:
    """The thresholds as written into the JSON results (``verdict_rules``)."""
    return asdict(rules)


@dataclass(frozen=True)
class Verdict:
    """One flow's verdict. ``name`` is set only for ``identified`` and ``behaves as``."""

    cls: str  # one of CLASSES
    reason: str  # plain words
    evidence: Evidence
    name: str | None = None  # the algorithm named (identified or behaves as only)
    candidates: tuple[str, ...] = ()  # identified: (name,); ambiguous: every one that fits, best first
    candidate_errors: tuple[float, ...] = ()  # median relative error of each candidate
    equivalent: tuple[str, ...] = ()  # algorithms whose replay equals the named (or best) one on this flow
    error: float | None = None  # median relative error of the best fit
    threshold: float | None = None  # the error threshold that applied to it
    runner_up: str | None = None  # the next algorithm (identified) or the closest outside the candidates
    runner_up_error: float | None = None
    closer_rounds: int | None = None  # rounds in which the named one was closer than the runner-up …
    differing_rounds: int | None = None  # … of the rounds where the two differ beyond the tie
    rounds: int = 0  # rounds judged
    basis: str = "window"  # "window" (cwnd-limited rounds) or "rate" (every round the receive window did not limit)
    outside_range: tuple[str, ...] = ()  # where the flow lies outside the validated conditions (ENVELOPE)
    validated_range: str = ""  # those conditions, in words

    @property
    def label(self) -> str:
        """``cubic``, ``behaves as reno``, ``ambiguous: reno, westwood``, ``unknown``, ``not enough data``."""
        if self.cls == IDENTIFIED:
            return str(self.name)
        if self.cls == BEHAVES_AS:
            return f"behaves as {self.name}"
        if self.cls == AMBIGUOUS:
            return "ambiguous: " + ", ".join(self.candidates)
        return self.cls

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["class"] = d.pop("cls")
        d["evidence"] = self.evidence.as_dict()
        d["candidates"] = list(self.candidates)
        d["candidate_errors"] = list(self.candidate_errors)
        d["equivalent"] = list(self.equivalent)
        d["outside_range"] = list(self.outside_range)
        return d


@functools.lru_cache(maxsize=1024)
def base_name(label: str) -> str:
    """``cubic[flavor=rfc]`` → ``cubic``."""
    return label.split("[", 1)[0].strip()


@functools.lru_cache(maxsize=1024)
def _rank(name: str) -> tuple[int, str]:
    """The order of :data:`PARSIMONY` (cached: a verdict sorts and names its classes by it again
    and again, for the same few labels)."""
    b = base_name(name)
    return (PARSIMONY.index(b) if b in PARSIMONY else len(PARSIMONY), b)


@functools.lru_cache(maxsize=4096)
def _binom_tail(k: int, n: int) -> float:
    """P(X ≥ k) for X ~ Binomial(n, 1/2) (cached: a flow's duels ask the same few (k, n) again
    and again, and each is a sum of up to n log-gamma terms)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    log2 = math.log(2.0)
    terms = [math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) - n * log2 for j in range(k, n + 1)]
    m = max(terms)
    return min(1.0, math.exp(m) * sum(math.exp(t - m) for t in terms))


def _paired(a: np.ndarray, best: np.ndarray, other: np.ndarray, tie: float, frac: float = 0.0) -> tuple[int, int]:
    """(rounds where ``best`` is closer to ``a`` than ``other`` by more than the tie, rounds
    where they differ by more than the tie at all). The tie of a round is ``max(tie, frac · a)``
    packets: what a capture resolves grows with the window (:attr:`Rules.tie_fraction`)."""
    ok = np.isfinite(best) & np.isfinite(other)
    d = np.abs(other[ok] - a[ok]) - np.abs(best[ok] - a[ok])
    t = np.maximum(tie, frac * np.abs(a[ok])) if frac > 0 else tie
    closer = int(np.sum(d > t))
    return closer, closer + int(np.sum(d < -t))


def _paired_by_acks(
    obs: np.ndarray, rnd: np.ndarray, best: np.ndarray, other: np.ndarray, tie: float, frac: float = 0.0
) -> tuple[int, int]:
    """:func:`_paired` at ACK resolution: within each round, count the ACKs after which each
    replay is closer (by more than ``tie``) to the window the sender left; the round goes to the
    one closer after more of its ACKs. Returns (rounds ``best`` wins, rounds either wins). A
    round, not an ACK, is the unit: the windows of one round's ACKs are not independent."""
    ok = np.isfinite(best) & np.isfinite(other)
    d = np.abs(other[ok] - obs[ok]) - np.abs(best[ok] - obs[ok])
    t = np.maximum(tie, frac * np.abs(obs[ok])) if frac > 0 else tie
    r = rnd[ok]
    if r.size == 0:
        return 0, 0
    keys, inv = np.unique(r, return_inverse=True)
    won = np.bincount(inv, weights=(d > t).astype(np.float64), minlength=keys.size)
    lost = np.bincount(inv, weights=(d < -t).astype(np.float64), minlength=keys.size)
    return int(np.sum(won > lost)), int(np.sum(won != lost))


@dataclass
class _Class:
    """Replays identical on this flow (within half a packet after every judged ACK and round)."""

    members: list[str]
    windows: np.ndarray  # replayed window per judged round
    rate: bool
    acks: np.ndarray | None = None  # replayed window after each judged ACK (metrics.ack_windows)
    mare: float = math.inf
    mean: float = math.inf

    @property
    def name(self) -> str:
        return min(self.members, key=_rank)


@dataclass
class _Duel:
    """How two candidates are compared on one flow: at ACK resolution when the flow has judged
    ACKs (:func:`_paired_by_acks`), else round by round (:func:`_paired`).

    A verdict asks for the same duels again and again (every candidate against every other, on
    every pass of its elimination loop): each pair is computed once (one compiled pass,
    :func:`_duel_counts`), and what depends on the flow only (the round of every ACK, numbered)
    once per flow. The counts are those of :func:`_paired_by_acks` — the same elementwise
    operations on the same values."""

    actual: np.ndarray  # per judged round
    obs: np.ndarray  # per judged ACK
    rnd: np.ndarray
    tie: float
    frac: float = 0.0  # the tie grows with the sender's window: max(tie, frac · window)
    _memo: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    _inv: tuple[np.ndarray, int] | None = None

    def __call__(self, best: _Class, other: _Class) -> tuple[int, int]:
        key = (id(best), id(other))
        hit = self._memo.get(key)
        if hit is None:
            if self.obs.size and best.acks is not None and other.acks is not None:
                hit, mirror = self._by_acks(best, other)
                self._memo[(id(other), id(best))] = mirror
            else:
                hit = _paired(self.actual, best.windows, other.windows, self.tie, self.frac)
            self._memo[key] = hit
        return hit

    def _by_acks(self, best: _Class, other: _Class) -> tuple[tuple[int, int], tuple[int, int]]:
        """The counts of the duel and of its mirror image (``other`` against ``best``: the rounds
        ``best`` lost, of the same differing rounds — the difference of the distances of the
        mirror duel is exactly the negated one)."""
        assert best.acks is not None and other.acks is not None
        if self._inv is None:
            self._inv = _numbered(self.rnd)
        inv, nk = self._inv
        won, lost, differ = _duel_counts(
            _c(best.acks), _c(other.acks), _c(self.obs), inv, nk, float(self.tie), float(self.frac)
        )
        return (int(won), int(differ)), (int(lost), int(differ))


def _c(x: np.ndarray) -> np.ndarray:
    """A float64 array in C order (the kernels' argument types: one compiled version)."""
    return x if x.dtype == np.float64 and x.flags.c_contiguous else np.ascontiguousarray(x, dtype=np.float64)


def _numbered(rnd: np.ndarray) -> tuple[np.ndarray, int]:
    """(each ACK's round numbered 0..k−1 in order of value, k): ``np.unique``'s inverse, by a
    running count where the rounds come in order (they do: ACKs in time order), which costs a
    pass instead of a sort."""
    r = np.asarray(rnd).reshape(-1)
    if r.size == 0:
        return np.zeros(0, dtype=np.int64), 0
    step = r[1:] != r[:-1]
    if r.size > 1 and not bool((r[1:] >= r[:-1]).all()):
        keys, inv = np.unique(r, return_inverse=True)
        return np.ascontiguousarray(inv.reshape(-1), dtype=np.int64), int(keys.size)
    inv = np.zeros(r.size, dtype=np.int64)
    np.cumsum(step, out=inv[1:])
    return inv, int(inv[-1]) + 1


@njit(work=lambda a: len(a[0]), cost=(1.74, 2.19e-06), cache=True, nogil=True)
def _duel_counts(wb, wo, obs, inv, nk, tie, frac):  # pragma: no cover - compiled
    """The counts of :func:`_paired_by_acks` in one pass: ``wb``/``wo`` the two replays' windows
    after every judged ACK, ``obs`` the sender's, ``inv`` each ACK's round (0..nk−1). Per round,
    the ACKs after which ``best`` is closer by more than ``tie`` (won) and those after which
    ``other`` is (lost), where both replays are finite — by more than ``max(tie, frac · obs)``,
    the tie growing with the sender's window; returns (rounds won > lost, rounds lost >
    won, rounds won ≠ lost) — the same elementwise operations on the same values as the numpy
    form, without its passes and temporaries (a flow's verdict runs dozens of duels)."""
    won = np.zeros(nk, dtype=np.int64)
    lost = np.zeros(nk, dtype=np.int64)
    n = wb.shape[0]
    if n:
        # counted without branches on the distances into this stretch of one round's ACKs, added
        # to the round when the stretch ends (the ACKs come round by round: once per round)
        r = inv[0]
        cw = 0
        cl = 0
        for i in range(n):
            if inv[i] != r:
                won[r] += cw
                lost[r] += cl
                cw = 0
                cl = 0
                r = inv[i]
            b, o = wb[i], wo[i]
            if math.isfinite(b) and math.isfinite(o):  # (nearly always: a branch well predicted)
                x = obs[i]
                d = abs(o - x) - abs(b - x)
                t = max(tie, frac * abs(x))
                cw += d > t
                cl += d < -t
        won[r] += cw
        lost[r] += cl
    n_won = 0
    n_lost = 0
    for k in range(nk):
        if won[k] > lost[k]:
            n_won += 1
        elif lost[k] > won[k]:
            n_lost += 1
    return n_won, n_lost, n_won + n_lost


def _same(
    a: np.ndarray | None, b: np.ndarray | None, fa: np.ndarray | None = None, fb: np.ndarray | None = None
) -> bool:
    """Whether two replays' windows are within half a packet wherever finite, and finite at the
    same places (``fa``/``fb``: their finite masks, when already known)."""
    if a is None or b is None:
        return a is b
    fin = np.isfinite(a) if fa is None else fa
    return bool(np.array_equal(fin, np.isfinite(b) if fb is None else fb) and np.all(np.abs(a - b)[fin] < 0.5))


@njit(cache=True, inline="always")
def _rows_agree(w, i, j):  # pragma: no cover - compiled
    """Whether rows ``i`` and ``j`` of ``w`` are :func:`_same`: finite at the same places and
    within half a packet wherever finite; stops at the first difference."""
    for k in range(w.shape[1]):
        x, y = w[i, k], w[j, k]
        fx, fy = np.isfinite(x), np.isfinite(y)
        if fx != fy or (fx and not abs(x - y) < 0.5):
            return False
    return True


@njit(work=lambda a: a[0].size * a[0].shape[0], cost=(4.57, 4.13e-06), cache=True, nogil=True)
def _pairs(wr, rate):  # pragma: no cover - compiled
    """Which replays agree by rounds: ``wr`` (replays × judged rounds) their windows, ``rate``
    whether each is rate-based. ``out[i, j]``: the two have the same ``rate`` and windows that
    are :func:`_same` (finite at the same places, within half a packet wherever finite). Stops
    comparing two replays at their first difference (most pairs differ within a few rounds)."""
    m = wr.shape[0]
    out = np.zeros((m, m), dtype=np.bool_)
    for i in range(m):
        out[i, i] = True
        for j in range(i + 1, m):
            same = rate[i] == rate[j]
            if same:
                same = _rows_agree(wr, i, j)
            out[i, j] = out[j, i] = same
    return out


@njit(work=lambda a: a[1].size, cost=(2.99, 7.04e-06), cache=True, nogil=True)
def _group(pairs, wa, order):  # pragma: no cover - compiled
    """The replays identical on a flow: taken in ``order`` (:func:`_rank`), a replay joins the
    first class whose first member agrees with it by rounds (``pairs``, :func:`_pairs`) and by
    ACKs (``wa``: replays × judged ACKs, :func:`_same`; no columns: not compared), else starts
    a class. Returns (class of each replay, first replay of each class). The ACK rows are read
    only for pairs that agree by rounds (the others need not be filled in)."""
    m = order.shape[0]
    cls = np.full(m, -1, dtype=np.int64)
    first = np.zeros(m, dtype=np.int64)
    nc = 0
    for t in range(m):
        i = order[t]
        for c in range(nc):
            j = first[c]
            same = pairs[i, j]
            if same:
                same = _rows_agree(wa, i, j)
            if same:
                cls[i] = c
                break
        if cls[i] < 0:
            first[nc] = i
            cls[i] = nc
            nc += 1
    return cls, first[:nc]


def _errors(actual: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``W`` (a replay's windows per judged round): the median and the mean of its
    relative error to ``actual`` over the rounds where it is finite and the actual window
    positive (inf where there is none). The rows finite at every such round are taken together
    (numpy reduces each row of a C-ordered matrix as it reduces that row alone: the same
    numbers), the others one by one."""
    m = W.shape[0]
    mare, mean = np.full(m, math.inf), np.full(m, math.inf)
    pos = actual > 0
    if m == 0 or not pos.any():
        return mare, mean
    fin = np.isfinite(W)
    whole = (fin | ~pos).all(axis=1)
    full = np.flatnonzero(whole)
    if full.size:
        a = actual if pos.all() else actual[pos]
        Wf = W if full.size == m else W[full]
        if not pos.all():
            Wf = np.ascontiguousarray(Wf[:, pos])
        E = np.abs(Wf - a) / a
        mare[full], mean[full] = np.median(E, axis=1), np.mean(E, axis=1)
    for k in np.flatnonzero(~whole).tolist():
        ok = fin[k] & pos
        if ok.any():
            e = np.abs(W[k][ok] - actual[ok]) / actual[ok]
            mare[k], mean[k] = np.median(e), np.mean(e)
    return mare, mean


def _classes(
    actual: np.ndarray,
    windows: dict[str, np.ndarray],
    rate: dict[str, bool],
    acks: dict[str, np.ndarray] | None = None,
) -> list[_Class]:
    """The classes of identical replays (:func:`_group`), each with its median and mean
    relative error over the rounds."""
    labels = list(windows)
    wr = np.stack([np.asarray(windows[k], dtype=np.float64) for k in labels]) if labels else np.zeros((0, 0))
    wa = np.stack([np.asarray(acks[k], dtype=np.float64) for k in labels]) if acks and labels else None
    rated = np.array([bool(rate[k]) for k in labels])
    pairs = _pairs(_c(wr), rated) if labels else np.zeros((0, 0), dtype=bool)
    return _classes_of(actual, labels, wr, rated, pairs, _errors(actual, wr), wa)


def _classes_of(
    actual: np.ndarray,
    labels: list[str],
    wr: np.ndarray,
    rated: np.ndarray,
    pairs: np.ndarray,
    errors: tuple[np.ndarray, np.ndarray],
    wa: np.ndarray | None,
    have: np.ndarray | None = None,
) -> list[_Class]:
    """:func:`_classes` of the replays ``labels``, whose windows are the rows of ``wr`` (per
    judged round) and ``wa`` (per judged ACK, or None), ``pairs`` of :func:`_pairs` and
    ``errors`` of :func:`_errors`. ``have``: the rows of ``wa`` filled in (default all); a
    class whose first row is not gets no ACK windows (it must not be a candidate: see judge)."""
    if not labels:
        return []
    order = np.array(sorted(range(len(labels)), key=lambda i: _rank(labels[i])), dtype=np.int64)
    wa_c = _c(wa) if wa is not None else np.zeros((len(labels), 0))
    cls, first = _group(pairs, wa_c, order)
    out = []
    for j in first.tolist():
        filled = wa is not None and (have is None or bool(have[j]))
        mare, mean = float(errors[0][j]), float(errors[1][j])
        out.append(_Class([], wr[j], bool(rated[j]), wa_c[j] if filled else None, mare, mean))
    for i in order.tolist():
        out[int(cls[i])].members.append(labels[i])
    return out


def _limits_phrase(ev: Evidence) -> str:
    r = ev.rounds
    total = sum(r.values())
    parts = []
    for key, words in (("rwnd", "limited by the receive window"), ("app", "limited by the application or pacing")):
        if r.get(key):
            parts.append(f"{words} in {r[key]} of {total} rounds")
    return "; ".join(parts) if parts else f"{total} rounds in all"


def _clock_measurable(ev: Evidence) -> bool:
    """Whether the ACK-clock measure tells anything on this flow (:func:`evidence.clock_measurable`):
    neither paced nor ACK-clocked sending is evidence on a round trip shorter than its window."""
    return clock_measurable(ev.min_rtt_s)


def _paced(ev: Evidence) -> bool:
    """Paced sending as evidence: measured at the sender, on a round trip longer than the measure's window."""
    return bool(ev.paced) and _clock_measurable(ev)


def _paced_words(ev: Evidence) -> str:
    return f"paced sending ({ev.ack_clocked:.0%} of segments released by ACKs)"


def _paced_at_capacity(ev: Evidence) -> bool:
    """Paced sending as evidence of a rate-based algorithm: :func:`_paced`, on a flow that reached
    the path's capacity. Below it an application that writes at its own rate paces the segments
    as BBR would (Linux Reno writing 20 Mbit/s into a 50 Mbit/s path: 1 % of its segments
    released by ACKs), and its algorithm shows nothing."""
    return _paced(ev) and ev.capacity_reached


def _rate_evidence(ev: Evidence, rules: Rules) -> str | None:
    """Why the sender looks rate-based, or None."""
    why = []
    if _paced_at_capacity(ev):
        why.append(_paced_words(ev))
    if (
        ev.beta_median is not None
        and len(ev.beta) >= rules.no_decrease_episodes
        and ev.beta_median >= rules.no_decrease_beta
    ):
        why.append(f"no multiplicative decrease (β {ev.beta_median:.2f} over {len(ev.beta)} episodes)")
    if _gain_cycle(ev, rules):
        why.append(
            f"BBR's gain cycle ({ev.gain_cycles} of the {(ev.probes or 0) - 1} spans between {ev.probes} probes of "
            "the flight, each followed by no loss, last 5–10 rounds)"
        )
    return " and ".join(why) if why else None


def _gain_cycle(ev: Evidence, rules: Rules) -> bool:
    """BBR's PROBE_BW gain cycle as evidence (evidence._gain_cycles): at least
    :attr:`Rules.gain_cycles` cycles, and they are :attr:`Rules.gain_cycle_share` of the spans
    between probes or more. Chosen on the tuning flows: BBR alone 13 and 27 cycles (share 0.9–1.0),
    every other tuning flow, the open-set zoo's included, at most 2."""
    if ev.gain_cycles is None or ev.probes is None or ev.probes < 2:
        return False
    return ev.gain_cycles >= rules.gain_cycles and ev.gain_cycles >= rules.gain_cycle_share * (ev.probes - 1)


def _active(label: str, rep: pl.DataFrame) -> np.ndarray | None:
    """Per replay row, whether the extension ``label``'s own mechanism was active (the state its
    replay exposes, units packets): Compound's delay window dwnd ≥ 1 (CTCP §III-A: 0 while the
    window is at or below its low window); TCP-Fusion's window a packet or more above its Reno
    window (§II: it never falls below it); HRF's W+CR+Reno row in its CR mode (it grows as Reno
    whenever a queue exists); Kyushu-TCP's hold (its non-aggressive period, §3); HighSpeed's
    a(w) above 1 packet per RTT (RFC 3649 §5: standard TCP at or below Low_Window). None: not an
    extension, or its replay lacks the column."""
    from hscc_trace.replay.metrics import enum_labels, filled

    b = base_name(label)
    cols = rep.columns

    def num(c: str) -> np.ndarray:
        return filled(rep.get_column(c).cast(pl.Float64), 0.0)

    if "+" in b and "non_aggressive" in cols:
        return filled(rep.get_column("non_aggressive").cast(pl.Boolean), False)
    if b == "compound" and "dwnd" in cols:
        return num("dwnd") >= 1.0
    if b == "fusion" and "reno_cwnd" in cols:
        return num("cwnd") - num("reno_cwnd") >= 1.0
    if b.startswith("hrf") and "mode" in cols:
        mode = rep.get_column("mode")
        coded = enum_labels(mode)  # (label codes, −1 at a null: no string per row)
        if coded is None:
            return (mode.cast(pl.String) == "CR").fill_null(False).to_numpy()
        codes, names = coded
        return codes == names.index("CR") if "CR" in names else np.zeros(len(codes), dtype=bool)
    if b == "highspeed" and "a_w" in cols:
        return num("a_w") > 1.0 + 1e-9
    return None


def engaged_rounds(ev: FlowEvents, replays: dict[str, pl.DataFrame]) -> dict[str, int]:
    """Per extension among ``replays`` (one that reduces to another replayed algorithm), the
    judged rounds (cwnd-limited, outside recovery: those the fit compares) in which its own
    mechanism was active at any of the round's ACKs in its replay (:func:`_active`)."""
    from hscc_trace.replay.metrics import _rounds_used

    reduce = reductions(list(replays))
    rd = ev.rounds
    if not reduce or rd.height == 0:
        return {}
    use, _, _ = _rounds_used(rd, ("cwnd",))
    start = rd.get_column("start_ns").to_numpy()[use]
    end = rd.get_column("end_ns").to_numpy()[use]
    out: dict[str, int] = {}
    for lab in reduce:
        rep = replays[lab]
        if rep.height == 0:
            out[lab] = 0
            continue
        act = _active(lab, rep)
        if act is None:
            continue
        ts = rep.get_column("ts_ns").to_numpy()
        cum = np.concatenate(([0], np.cumsum(act.astype(np.int64))))
        lo = np.searchsorted(ts, start, side="left")
        hi = np.searchsorted(ts, end, side="right")
        out[lab] = int(np.sum(cum[hi] - cum[lo] > 0))
    return out


def _window_evidence(ev: Evidence, rules: Rules) -> str | None:
    """Why the sender is not rate-based (BBR is then not a candidate), or None: a multiplicative
    decrease at its congestion episodes (β at most :attr:`Rules.decrease_beta` over at least
    :attr:`Rules.decrease_episodes`; BBR keeps its flight at the BDP estimate), or, at the
    sender on a round trip longer than the ACK-clock window (:func:`_clock_measurable`),
    ACK-clocked sending (a paced sender is not). The first :attr:`Rules.decrease_skip`
    episodes are left out: they end slow start, where BBR too falls back (STARTUP's overshoot and
    DRAIN: β 0.23–0.49 on the first two episodes of every BBR sample that lost in STARTUP)."""
    later = ev.beta[rules.decrease_skip :]
    if len(later) >= rules.decrease_episodes and float(np.median(later)) <= rules.decrease_beta:
        return (
            f"a multiplicative decrease (β {float(np.median(later)):.2f}, median of {len(later)} episodes after "
            "slow start)"
        )
    if ev.ack_clocked is not None and _clock_measurable(ev) and ev.ack_clocked >= rules.ack_clocked_above:
        return f"ACK-clocked sending ({ev.ack_clocked:.0%} of segments released by ACKs)"
    return None


def reductions(labels: list[str]) -> dict[str, str]:
    """label → the label of the simpler algorithm it reduces to, among ``labels``
    (``Algorithm.reduces_to``; a wrapper reduces to its base), where that one was replayed too."""
    from hscc_trace.replay import registry

    by_base: dict[str, list[str]] = {}
    for lab in labels:
        by_base.setdefault(base_name(lab), []).append(lab)
    out: dict[str, str] = {}
    for lab in labels:
        b = base_name(lab)
        if "+" in b:
            target = b.split("+", 1)[1]
        else:
            try:
                target = registry.get(b).reduces_to
            except Exception:  # (an algorithm the registry no longer has: no nesting known)
                target = ""
        if target and len(by_base.get(target, [])) == 1:
            out[lab] = by_base[target][0]
    return out


def _short_of_capacity(ev: Evidence) -> str:
    n = ev.queued_rounds
    return f"never reached the path's capacity (no congestion episode, a queue in {n} round{'s' if n != 1 else ''})"


def _rate_note(rate_why: str | None, evidence: Evidence) -> str:
    if not evidence.capacity_reached and (rate_why or _paced(evidence)):
        return (
            f"; it sent at its own pace ({rate_why or _paced_words(evidence)}) but {_short_of_capacity(evidence)}: "
            "an application-limited sender shows nothing of its algorithm"
        )
    if rate_why is None:
        return ""
    return f"; rate-based signs ({rate_why}), but BBR's model does not follow the flight"


def _tie_words(tie: float, frac: float) -> str:
    """``0.5 packet`` / ``max(0.5 packet, 0.5% of the window)``."""
    base = f"{tie:g} packet{'s' if tie != 1 else ''}"
    return f"max({base}, {frac * 100:g}% of the window)" if frac > 0 else base


def _threshold(c: _Class, rules: Rules) -> float:
    return rules.max_error_rate if c.rate else rules.max_error


def _placed_by_timestamps(ev: FlowEvents) -> bool:
    """Away from the sender, whether the connection's timestamps place every ACK exactly among
    the sender's segments (the sender echoes the newest TSval it has received: the first
    segment echoing an ACK's TSval is its response; hscc_trace.events.vantage.sender_view) —
    then the flight the sender left after each ACK is known as at the sender. Seen by the RTT
    samples: with timestamps they come from the echo (``rtt_source`` ``ts``)."""
    src = ev.acks.get_column("rtt_source") if "rtt_source" in ev.acks.columns else None
    return src is not None and bool((src == "ts").any())


def judge(
    ev: FlowEvents | None, replays: dict[str, pl.DataFrame], rules: Rules = RULES, evidence: Evidence | None = None
) -> Verdict:
    """The verdict of one flow from its events and every algorithm's replay on them.
    ``evidence``: ``observe(ev)`` when the caller has it already (made while the replays ran)."""
    from hscc_trace.replay.metrics import FIT_WINDOW, ack_matrix, round_matrix

    if evidence is None:
        evidence = observe(ev) if ev is not None else Evidence(vantage="unknown", episodes=0)

    outside = outside_range(evidence)
    validated = ENVELOPE.describe()

    def verdict(cls: str, reason: str, **kw: Any) -> Verdict:
        return Verdict(
            cls=cls, reason=reason, evidence=evidence, outside_range=outside, validated_range=validated, **kw
        )

    if ev is None or not replays or ev.acks.height == 0 or ev.segments.height == 0:
        return verdict(NOT_ENOUGH_DATA, "no data segments or ACKs: nothing was replayed")
    rate = {k: FIT_WINDOW in r.columns for k, r in replays.items()}
    # A rate-based algorithm (BBR) is a candidate only where the packets do not show a window-based
    # sender, and named only where they show a rate-based one (docs/verdicts.md, "Rate-based").
    not_rate = _window_evidence(evidence, rules)
    rate_why = None if not_rate else _rate_evidence(evidence, rules)
    left_out = ""
    if not_rate and any(rate.values()):
        gone = sorted(k for k in replays if rate[k])
        both = _rate_evidence(evidence, rules)
        left_out = f"; {', '.join(gone)} left out: the sender shows {not_rate}" + (
            f", although also {both} — conflicting signs, so no rate-based name" if both else ""
        )
        replays = {k: r for k, r in replays.items() if not rate[k]}
        rate = {k: False for k in replays}
        if not replays:
            return verdict(UNKNOWN, "only rate-based algorithms were replayed" + left_out)
    exact = evidence.vantage == "sender" or _placed_by_timestamps(ev)
    tie = rules.tie_at_sender if exact else rules.tie_elsewhere
    actual, windows = round_matrix(ev, replays)
    n = int(actual.size)
    outcome: Verdict | None = None
    if n >= rules.min_rounds:
        # ACK by ACK only where the flight after each ACK is known as the sender left it: at the
        # sender, and away from it when timestamps place each ACK among the sender's segments
        # (otherwise the flight is reconstructed by time, and its errors would be taken for the
        # algorithm's)
        labels = list(replays)
        is_rate = np.array([rate[k] for k in labels], dtype=bool)
        pairs = _pairs(_c(windows), is_rate)
        errors = _errors(actual, windows)
        if exact:
            # the ACK windows of a replay are read only where they can matter: to tell it from a
            # replay equal to it by rounds, and to compare it with the others if it fits
            thr = np.where(is_rate, rules.max_error_rate, rules.max_error)
            need = (pairs.sum(axis=1) > 1) | (errors[0] <= thr)
            obs, rnd, wa = ack_matrix(ev, replays, need)
            classes = _classes_of(actual, labels, windows, is_rate, pairs, errors, wa, need)
            outcome = _judge_classes(actual, classes, tie, rules, verdict, (obs, rnd), engaged_rounds(ev, replays))
        else:
            classes = _classes_of(actual, labels, windows, is_rate, pairs, errors, None)
            outcome = _judge_classes(actual, classes, tie, rules, verdict, None, engaged_rounds(ev, replays))
        if exact:
            outcome = _loose(outcome, rate, rules, verdict)
        if outcome.cls == IDENTIFIED and outcome.name is not None and rate.get(outcome.name) and not rate_why:
            outcome = _unnamed(
                outcome,
                f"{outcome.name}'s model follows the flight within {outcome.error:.1%}, but nothing here shows a "
                "rate-based sender (pacing is measured at the sender only"
                + ("" if _clock_measurable(evidence) else f", and only where the round trip exceeds {CLOCK_US:.0f} µs")
                + ", and only on a flow that reached the path's capacity, the absence of a multiplicative decrease "
                f"needs several congestion episodes, BBR's gain cycle {rules.gain_cycles} cycles of the flight "
                "without loss)"
                + (
                    f"; this flow paced ({evidence.ack_clocked:.0%} of its segments released by ACKs) but "
                    f"{_short_of_capacity(evidence)}, as an application pacing its writes does"
                    if _paced(evidence) and not evidence.capacity_reached
                    else ""
                )
                + ": not named — a loss-based sender can fit a rate model's wider threshold",
                outcome.threshold,
                verdict,
            )
    if (outcome is None or outcome.cls == UNKNOWN) and rate_why and evidence.capacity_reached:
        rv = _rate_verdict(ev, replays, rate, rate_why, rules, verdict)
        if rv is not None:
            return rv
    if outcome is not None and outcome.cls == AMBIGUOUS and _paced_at_capacity(evidence):
        rated = [c for c in outcome.candidates if rate.get(c)]
        if len(rated) == 1:  # a paced sender is not ACK-clocked: the window-based candidates go
            return verdict(
                IDENTIFIED,
                f"{rated[0]}: of the algorithms that fit ({', '.join(outcome.candidates)}), it is the only one "
                f"that paces — and the sender was paced ({evidence.ack_clocked:.0%} of its segments released by "
                "ACKs; a window-based Linux sender transmits as ACKs arrive)",
                name=rated[0],
                candidates=(rated[0],),
                candidate_errors=(outcome.candidate_errors[outcome.candidates.index(rated[0])],),
                error=outcome.candidate_errors[outcome.candidates.index(rated[0])],
                threshold=rules.max_error_rate,
                rounds=outcome.rounds,
            )
    if outcome is not None:
        if left_out and outcome.cls != IDENTIFIED:
            outcome = replace(outcome, reason=outcome.reason + left_out)
        return _shared(outcome)
    if n == 0 and evidence.rounds.get("cwnd", 0) == 0 and not evidence.rounds:
        return verdict(NOT_ENOUGH_DATA, "no complete RTT round")
    return verdict(
        NOT_ENOUGH_DATA,
        f"only {n} cwnd-limited round{'s' if n != 1 else ''} outside recovery (need ≥ {rules.min_rounds}): "
        f"the sender's window was seldom what limited it ({_limits_phrase(evidence)})"
        + _rate_note(rate_why, evidence)
        + left_out,
        rounds=n,
    )


def _loose(outcome: Verdict, rate: dict[str, bool], rules: Rules, verdict: Any) -> Verdict:
    """Where the flight is exact, the naming bound (:attr:`Rules.name_error`): a window-based name,
    or a list of window-based candidates, whose best replay is further from the sender than the
    bound gives ``unknown`` — with 15 candidates, an algorithm outside the library fits some row,
    or several, that loosely."""
    if (
        outcome.cls == IDENTIFIED
        and outcome.name is not None
        and not rate.get(outcome.name)
        and outcome.error is not None
        and outcome.error > rules.name_error
    ):
        outcome = _unnamed(
            outcome,
            f"{outcome.name} fits, but only loosely: its replay follows the sender's window within "
            f"{outcome.error:.2%} (median over {outcome.rounds} cwnd-limited rounds), where the flight is exact "
            f"and a named algorithm replays its sender within {rules.name_error:.0%} — an algorithm outside the "
            "library can fit that loosely: not named",
            rules.name_error,
            verdict,
        )
    if (
        outcome.cls == AMBIGUOUS
        and outcome.error is not None
        and outcome.error > rules.name_error
        and not any(rate.get(c) for c in outcome.candidates)
    ):
        # the naming bound holds for a list as for one name: "one of these" where none would
        # be named alone is a claim the fit does not carry
        listing = ", ".join(f"{c} ({e:.2%})" for c, e in zip(outcome.candidates, outcome.candidate_errors, strict=True))
        outcome = _unnamed(
            outcome,
            f"none of these fits closely: {listing} (median over {outcome.rounds} cwnd-limited rounds), where the "
            f"flight is exact and a named algorithm replays its sender within {rules.name_error:.0%} — an "
            "algorithm outside the library can fit several rows that loosely: not named",
            rules.name_error,
            verdict,
        )
    return outcome


def _unnamed(outcome: Verdict, reason: str, threshold: float | None, verdict: Any) -> Verdict:
    """``outcome`` (identified or ambiguous) taken back to ``unknown`` for ``reason``: its error,
    rounds and best candidate kept as the closest fit, under ``threshold``."""
    best = outcome.name if outcome.name is not None else outcome.candidates[0]
    return verdict(
        UNKNOWN,
        reason,
        error=outcome.error,
        threshold=threshold,
        runner_up=best,
        runner_up_error=outcome.error,
        rounds=outcome.rounds,
    )


def _shared(v: Verdict) -> Verdict:
    """An ``identified`` window-based verdict whose name is in :data:`SHARED_WINDOW`, as
    ``behaves as``: the same evidence, and the algorithms outside the library that set the same
    window named in the reason."""
    if v.cls != IDENTIFIED or v.basis != "window" or v.name is None:
        return v
    others = SHARED_WINDOW.get(base_name(v.name))
    if not others:
        return v
    return replace(
        v,
        cls=BEHAVES_AS,
        reason=f"behaves as {v.reason}; a sender outside the library sets this window too ({', '.join(others)}): "
        f"the window is {v.name}'s, which the trace shows, not that the sender runs {v.name}",
    )


def _window_verdict(
    actual: np.ndarray,
    windows: dict[str, np.ndarray],
    rate: dict[str, bool],
    tie: float,
    rules: Rules,
    verdict: Any,
    by_ack: tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]] | None = None,
) -> Verdict:
    acks = by_ack[2] if by_ack is not None else None
    return _judge_classes(
        actual, _classes(actual, windows, rate, acks), tie, rules, verdict, by_ack[:2] if by_ack is not None else None
    )


def _race(
    fits: list[_Class],
    classes: list[_Class],
    duel: _Duel,
    engaged: dict[str, int],
    rules: Rules,
    p_value: float,
    exact: bool,
    n: int,
) -> tuple[list[_Class], list[tuple[_Class, int, int]], list[tuple[_Class, _Class, int, int]], dict[int, str]]:
    """The race among the fitting classes ``fits`` (of ``classes``, by median error) of
    :func:`_judge_classes`: (the classes left, best first; those ruled out, each with its margin
    against the best; the extensions set aside for what they reduce to, each with that class and
    the margin; why each was set aside, by ``id``). ``exact``: ACK by ACK at the sender (any other
    class may rule one out) rather than by rounds (only the best); ``n``: the judged rounds."""
    # An extension (Algorithm.reduces_to; a wrapper over its base) is named only when it fits
    # significantly better than the simpler algorithm it reduces to. When the data do not favour
    # it (closer in at most half of the rounds where the two differ) it leaves the race and the
    # comparison is made again without it; when they do, but not significantly, both stay: the
    # data cannot rank them (ambiguous, unless a third algorithm decides).
    reduce = reductions([m for c in classes for m in c.members])
    owner = {m: c for c in classes for m in c.members}
    reduced: list[tuple[_Class, _Class, int, int]] = []
    why_reduced: dict[int, str] = {}
    protected: set[int] = set()  # extensions kept because what they reduce to did not survive
    pool = list(fits)
    idle = {
        id(c)
        for c in classes
        if c.name in reduce and min((engaged.get(m, n) for m in c.members), default=n) < rules.min_engaged_rounds
    }
    while True:
        # A candidate is ruled out when another one is significantly closer to the sender —
        # at the sender, whichever other one (the lowest median error need not win the
        # ACK-by-ACK comparison); away from it only the one with the lowest error: there the
        # inputs are reconstructed, and a systematic error of the reconstruction, round after
        # round, would pass for evidence against the right algorithm.
        beaten: dict[int, tuple[int, int]] = {}
        for c in pool:
            for o in pool if exact else pool[:1]:
                if o is c or id(c) in beaten:
                    continue
                # (only by one whose median error is not higher: where the round-by-round test
                # and the error disagree, the data do not rank the two)
                if o.mare > c.mare:
                    continue
                # (nor by an extension of it whose own mechanism was idle: then their difference
                # is not the mechanism's)
                if id(o) in idle and owner.get(reduce.get(o.name, "")) is c:
                    continue
                closer, differ = duel(o, c)
                if differ and _binom_tail(closer, differ) < p_value:
                    beaten[id(c)] = (closer, differ)
        keep = [c for c in pool if id(c) not in beaten] or list(pool)
        best = keep[0]
        ruled_out: list[tuple[_Class, int, int]] = []
        for c in pool:
            if id(c) in beaten and c not in keep:
                ruled_out.append((c, *duel(best, c)))
        # an extension set aside for a simpler algorithm that the others have since ruled out
        # comes back (and stays): the simpler explanation is not there to prefer
        back = [r for r in reduced if r[1] not in keep]
        if back:
            for r in back:
                reduced.remove(r)
                protected.add(id(r[0]))
            pool = [c for c in fits if not any(c is r[0] for r in reduced)]
            continue
        drop = None
        for c in keep:
            simpler = owner.get(reduce.get(c.name, ""))
            if simpler is None or simpler is c or simpler not in keep or id(c) in protected:
                continue
            closer, differ = duel(c, simpler)
            # the extension stays only when its own mechanism was active for enough rounds to be
            # judged, its median error is not higher than the simpler one's, and it is closer to
            # the sender in more than half of the rounds where the two differ
            if id(c) in idle:
                k = min(engaged.get(m, n) for m in c.members)
                why_reduced[id(c)] = f"its own mechanism was active in {k} of the {n} judged rounds"
            elif c.mare > simpler.mare:
                why_reduced[id(c)] = (
                    f"its median error is higher, {c.mare:.1%} against {simpler.mare:.1%}, though closer in {closer} "
                    f"of {differ} differing rounds"
                )
            elif not (differ and _binom_tail(closer, differ) < p_value) and 2 * closer <= differ:
                why_reduced[id(c)] = f"closer in {closer} of {differ} differing rounds"
            else:
                continue
            drop = (c, simpler, closer, differ)
            break
        if drop is None:
            break
        reduced.append(drop)
        pool = [c for c in pool if c is not drop[0]]
    return keep, ruled_out, reduced, why_reduced


def _judge_classes(
    actual: np.ndarray,
    classes: list[_Class],
    tie: float,
    rules: Rules,
    verdict: Any,
    by_ack: tuple[np.ndarray, np.ndarray] | None,
    engaged: dict[str, int] | None = None,
) -> Verdict:
    """:func:`_window_verdict` of the classes of identical replays (:func:`_classes`);
    ``by_ack``: the sender's window after each judged ACK and its round, or None; ``engaged``:
    per extension, the judged rounds in which its own mechanism was active in its replay
    (:func:`engaged_rounds`; None, or a label missing: not measured, taken as active)."""
    n = int(actual.size)
    obs, rnd = by_ack if by_ack is not None else (np.zeros(0), np.zeros(0, dtype=np.int64))
    duel = _Duel(actual, obs, rnd, tie, rules.tie_fraction)
    engaged = engaged or {}
    p_value = rules.p_value if by_ack is not None else rules.p_value_elsewhere
    classes = sorted(classes, key=lambda c: (c.mare, c.mean, _rank(c.name)))
    fits = [c for c in classes if c.mare <= _threshold(c, rules)]
    if not fits:
        best = classes[0]
        return verdict(
            UNKNOWN,
            f"nothing fits: the closest replay, {best.name}, is off by {best.mare:.1%} (median over {n} "
            f"cwnd-limited rounds), beyond its {_threshold(best, rules):.0%} threshold",
            error=best.mare,
            threshold=_threshold(best, rules),
            runner_up=best.name,
            runner_up_error=best.mare,
            rounds=n,
        )
    keep, ruled_out, reduced, why_reduced = _race(fits, classes, duel, engaged, rules, p_value, by_ack is not None, n)
    reduce = reductions([m for c in classes for m in c.members])
    owner = {m: c for c in classes for m in c.members}
    best = keep[0]
    eq = tuple(sorted((m for m in best.members if m != best.name), key=_rank))
    eq += tuple(c.name for c, simpler, _, _ in reduced if simpler is best)
    if len(keep) == 1:
        ru: _Class | None
        m_closer: int | None = None  # the margin over the runner-up, when one was ruled out
        m_differ: int | None = None
        if ruled_out:
            ru, m_closer, m_differ = ruled_out[0]
            margin = (
                f"the next best, {ru.name} ({ru.mare:.1%}), is further from the sender in {m_closer} of the "
                f"{m_differ} rounds where the two differ by more than {_tie_words(tie, rules.tie_fraction)}"
            )
        else:
            rest = [c for c in classes if c is not best]
            ru = rest[0] if rest else None
            margin = (
                f"no other replay fits within its threshold (next: {ru.name}, {ru.mare:.1%})"
                if ru is not None
                else "it is the only algorithm replayed"
            )
        ident = [m for m in best.members if m != best.name]
        same = f"; {', '.join(ident)} replay{'s' if len(ident) == 1 else ''} identically on this flow" if ident else ""
        for c, simpler, closer_r, differ_r in reduced:
            if simpler is best:
                same += (
                    f"; {c.name} reduces to {best.name} when its own mechanism does not engage, and fits no better "
                    f"here ({why_reduced.get(id(c), f'closer in {closer_r} of {differ_r} differing rounds')})"
                )
        return verdict(
            IDENTIFIED,
            f"{best.name}: its replay follows the sender's window within {best.mare:.1%} (median over {n} "
            f"cwnd-limited rounds; threshold {_threshold(best, rules):.0%}); {margin}{same}",
            name=best.name,
            candidates=(best.name,),
            candidate_errors=(best.mare,),
            equivalent=eq,
            error=best.mare,
            threshold=_threshold(best, rules),
            runner_up=ru.name if ru is not None else None,
            runner_up_error=ru.mare if ru is not None else None,
            closer_rounds=m_closer,
            differing_rounds=m_differ,
            rounds=n,
        )
    names = tuple(c.name for c in keep)
    listing = ", ".join(f"{c.name} ({c.mare:.1%})" for c in keep)
    nested = ""
    for c in keep:  # an extension closer than what it reduces to, but not significantly
        base = owner.get(reduce.get(c.name, ""))
        if base is not None and base is not c and base in keep:
            closer, differ = duel(c, base)
            nested += (
                f"; {c.name} (which reduces to {base.name}) is closer to the sender in {closer} of the {differ} "
                f"rounds where the two differ — more often than not, too few to rule out chance (sign test p = "
                f"{_binom_tail(closer, differ):.3g})"
            )
    return verdict(
        AMBIGUOUS,
        f"{len(keep)} algorithms fit and the data cannot rank them: {listing} — none is closer to the "
        f"sender often enough in the rounds where they differ by more than {_tie_words(tie, rules.tie_fraction)}"
        + (
            " (the measurement resolution without timestamps away from the sender)"
            if tie != rules.tie_at_sender
            else ""
        )
        + nested,
        candidates=names,
        candidate_errors=tuple(c.mare for c in keep),
        equivalent=eq,
        error=best.mare,
        threshold=_threshold(best, rules),
        runner_up=keep[1].name,
        runner_up_error=keep[1].mare,
        rounds=n,
    )


def _rate_verdict(
    ev: FlowEvents, replays: dict[str, pl.DataFrame], rate: dict[str, bool], why: str, rules: Rules, verdict: Any
) -> Verdict | None:
    from hscc_trace.replay.metrics import round_windows

    rated = {k: v for k, v in replays.items() if rate[k]}
    if not rated:
        return None
    actual, windows = round_windows(ev, rated, limits=("cwnd", "app"))
    n = int(actual.size)
    if n < rules.min_rounds:
        return None
    scored = []
    for label, w in windows.items():
        ok = np.isfinite(w) & (actual > 0)
        if ok.any():
            scored.append((float(np.median(np.abs(w[ok] - actual[ok]) / actual[ok])), label))
    if not scored:
        return None
    err, label = min(scored)
    if err > rules.max_error_rate:
        return None
    return verdict(
        IDENTIFIED,
        f"{base_name(label)}: the sender is rate-based — {why} — and {base_name(label)}'s model of the flight "
        f"(its in-flight cap) follows it within {err:.1%} (median over {n} rounds not limited by the receive "
        f"window; threshold {rules.max_error_rate:.0%})",
        name=base_name(label),
        candidates=(base_name(label),),
        candidate_errors=(err,),
        error=err,
        threshold=rules.max_error_rate,
        rounds=n,
        basis="rate",
    )
