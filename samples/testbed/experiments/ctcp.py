"""Compound TCP paper (Tan et al. 2006, §IV.A-B, §IV.D): the runs of Figs. 3, 4 and 6, scaled.

The paper (ns-2): 1 Gbit/s, RTT 100 ms, drop-tail buffer 1500 packets (18 % of the 8333-packet
BDP), random loss 1e-2...1e-6, runs of at least 150 s.
  Fig. 3  four flows of one kind (Reno, CTCP or HSTCP) alone: their aggregate throughput vs loss.
  Fig. 4  bandwidth stolen vs loss: four high-speed flows + four Reno flows against a baseline of
          eight Reno flows; stolen = (P - Q) / P, P the baseline's average Reno throughput, Q the
          average of the four Reno flows beside the high-speed flows (Definition 1, §IV.B),
          computed by hscc-trace's groups.compare.
  Fig. 6  bandwidth stolen vs buffer: 300-6000 packets (4-72 % of BDP), no random loss.

Here: 50 Mbit/s, RTT 100 ms (BDP 417 packets of 1500 B), the buffer kept at the paper's fraction
of the BDP (18 % = 75 packets; Fig. 6: 4, 18, 72 % = 17, 75, 300 packets), loss
1e-2, 1e-3, 1e-4 and 0 (at this rate a 20-s run sends about 80 000 segments: 1e-5 would be one
random loss, so 0 stands for the paper's 1e-5...1e-6 end; Fig. 3 at 1e-2 and 1e-3 only), 20-s
runs, goodput over the last 15 s. --figure 4s: Fig. 4 with 1 + 1 flows against 2 Reno, 30 s.
HighSpeed TCP is bpf_highspeed, CTCP bpf_ctcp (samples/testbed/cc/), Reno the kernel's.
Eight flows share the emulator (one thread) without trouble at 50 Mbit/s (release lateness
p50 ~15 us, p99 ~60 us in the runs).

    sudo .venv/bin/python samples/testbed/experiments/ctcp.py            # every figure
    sudo .venv/bin/python samples/testbed/experiments/ctcp.py --figure 4 # one of 3, 4, 4s, 6
    python samples/testbed/experiments/ctcp.py --analyze-only            # read the runs again
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

RATE, RTT, DUR, WARM = 50.0, 100.0, 20.0, 5.0
BDP = common.bdp_pkts(RATE, RTT)
BUF18 = round(0.18 * BDP)
LOSSES = (1e-2, 1e-3, 1e-4, 0.0)
FIG3_LOSSES = (1e-2, 1e-3)  # the two where four Reno flows cannot fill the link here
BUFFERS = {4: round(0.04 * BDP), 18: BUF18, 72: round(0.72 * BDP)}
HS = {"ctcp": "bpf_ctcp", "hstcp": "bpf_highspeed"}


def _name(kind: str, loss: float, buf: int) -> str:
    return f"{kind}-l{loss:g}-b{buf}".replace("+", "")


def _run(kind: str, cc: tuple[str, ...], loss: float, buf: int, seed: int) -> common.Run:
    return common.Run(_name(kind, loss, buf), cc, RATE, RTT, buf, loss, DUR, seed, tags={"kind": kind})


def mixed(kind: str, loss: float, buf: int, seed: int) -> common.Run:
    """Four Reno flows first (sports 40001-40004), then four of ``kind`` (reno = the baseline)."""
    other = "reno" if kind == "reno" else HS[kind]
    return _run(f"8{kind}" if kind == "reno" else f"4{kind}+4reno", ("reno",) * 4 + (other,) * 4, loss, buf, seed)


def alone(kind: str, loss: float, seed: int) -> common.Run:
    cc = "reno" if kind == "reno" else HS[kind]
    return _run(f"4{kind}", (cc,) * 4, loss, BUF18, seed)


# Fig. 4 again with the flow count scaled down instead of the windows: one high-speed flow + one
# Reno flow against two Reno flows on the same link (50 Mbit/s, RTT 100 ms, 75 packets), no
# random loss, 30-s runs: each flow's window is some 250 packets instead of 60, where HighSpeed's
# a(w) is 2-3 packets per RTT and b(w) about 0.37 instead of Reno's 1 and 0.5 (the paper's flows,
# about 1000 packets each at 1 Gbit/s, are further up the same table). (RTT 200 ms was tried
# first: in 20 s two Reno flows never filled the link, 58 % utilization, and the baseline's two
# flows differed by 3x: no baseline.)
SCALE_RTT = 100.0
SCALE_BUF = BUF18
SCALE_DUR = 30.0


def scale(kind: str, seed: int) -> common.Run:
    other = "reno" if kind == "reno" else HS[kind]
    name = "2reno" if kind == "reno" else f"1{kind}+1reno"
    return common.Run(
        f"{name}-rtt100-b{SCALE_BUF}-d30".replace("+", ""),
        ("reno", other),
        RATE,
        SCALE_RTT,
        SCALE_BUF,
        0.0,
        SCALE_DUR,
        seed,
        tags={"kind": kind},
    )


def runs(figure: str, seed: int) -> list[common.Run]:
    out: list[common.Run] = []
    if figure in ("4s", "all"):
        out += [scale(k, seed) for k in ("reno", "ctcp", "hstcp")]
    if figure in ("4", "all"):
        out += [mixed(k, loss, BUF18, seed) for loss in LOSSES for k in ("reno", "ctcp", "hstcp")]
    if figure in ("6", "all"):
        out += [mixed(k, 0.0, b, seed) for b in BUFFERS.values() for k in ("reno", "ctcp", "hstcp")]
    if figure in ("3", "all"):
        out += [alone(k, loss, seed) for loss in FIG3_LOSSES for k in ("reno", "ctcp", "hstcp")]
    seen, uniq = set(), []
    for r in out:
        if r.name not in seen:
            seen.add(r.name)
            uniq.append(r)
    return uniq


def stolen(base: dict, test: dict, work: Path) -> dict:
    """Definition 1 as the paper runs it (§IV.B: "we first run eight regular TCP flows and record
    the average throughput as baseline ... compare the average throughput of the regular TCP with
    the baseline"): hscc-trace compare's P (mean goodput of the baseline's Reno flows), Q (mean of
    the test run's Reno flows) and (P - Q) / P; beside it the same from the kernel's truth."""
    c = common.stolen_hscc(work / base["run"], work / test["run"], WARM)
    (pair,) = c["groups"]
    reno = [f["goodput_mbit_truth"] for f in test["flows"] if f["cc"] == "reno"]
    p_t = sum(f["goodput_mbit_truth"] for f in base["flows"]) / len(base["flows"])
    q_t = sum(reno) / len(reno)
    hs = [f["goodput_mbit"] for f in test["flows"] if f["cc"] != "reno"]
    # the noise floor of one run: the baseline's second half of Reno flows against all of them
    # (as a stolen fraction between flows that are all Reno)
    bf = sorted(base["flows"], key=lambda f: f["sport"])
    half = [f["goodput_mbit"] for f in bf[len(bf) // 2 :]]
    p = pair["baseline_regular_bps"] / 1e6
    return {
        "P_mbit": round(p, 3),
        "Q_mbit": round(pair["test_regular_bps"] / 1e6, 3),
        "high_speed_mbit": round(sum(hs) / len(hs), 3),
        "stolen": round(pair["stolen"], 4),
        "stolen_truth": round((p_t - q_t) / p_t, 4),
        "baseline_split": round((p - sum(half) / len(half)) / p, 4),
        "jain_test": round(test["group"]["jain"], 4),
        "utilization_test": test["utilization_link"],
    }


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--figure", choices=("3", "4", "4s", "6", "all"), default="all")
    ap.add_argument("--work", default="/tmp/hscc_experiments/ctcp")
    ap.add_argument("--analyze-only", action="store_true")
    ap.add_argument("--make-only", action="store_true", help="make the runs; read none")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    work = Path(a.work)
    rs = runs(a.figure, a.seed)
    if not a.analyze_only:
        common.make(rs, work)
    if a.make_only:
        return
    m = {r.name: common.measure(r, work, WARM) for r in rs if (work / r.name / "meta.json").exists()}
    setup = {"rate_mbit": RATE, "rtt_ms": RTT, "bdp_pkts": round(BDP, 1), "duration_s": DUR, "warmup_s": WARM}
    if a.figure in ("4", "all"):
        rows = []
        for loss in LOSSES:
            b = m.get(mixed("reno", loss, BUF18, a.seed).name)
            for k in ("ctcp", "hstcp"):
                t = m.get(mixed(k, loss, BUF18, a.seed).name)
                if b and t:
                    rows.append({"loss": loss, "kind": k, "buffer_pkts": BUF18} | stolen(b, t, work))
        common.write_results(
            "ctcp-fig4",
            {
                "setup": setup | {"buffer_pkts": BUF18},
                "rows": rows,
                "runs": [m[r.name] for r in runs("4", a.seed) if r.name in m],
            },
        )
    if a.figure in ("4s", "all"):
        rows = []
        b = m.get(scale("reno", a.seed).name)
        for k in ("ctcp", "hstcp"):
            t = m.get(scale(k, a.seed).name)
            if b and t:
                rows.append({"kind": k, "rtt_ms": SCALE_RTT, "buffer_pkts": SCALE_BUF} | stolen(b, t, work))
        common.write_results(
            "ctcp-fig4-scale",
            {
                "setup": setup
                | {"rtt_ms": SCALE_RTT, "buffer_pkts": SCALE_BUF, "loss": 0.0, "flows": "1 + 1 against 2 Reno"},
                "rows": rows,
                "runs": [m[r.name] for r in runs("4s", a.seed) if r.name in m],
            },
        )
    if a.figure in ("6", "all"):
        rows = []
        for pct, buf in BUFFERS.items():
            b = m.get(mixed("reno", 0.0, buf, a.seed).name)
            for k in ("ctcp", "hstcp"):
                t = m.get(mixed(k, 0.0, buf, a.seed).name)
                if b and t:
                    rows.append({"buffer_pct_bdp": pct, "buffer_pkts": buf, "kind": k} | stolen(b, t, work))
        common.write_results(
            "ctcp-fig6",
            {
                "setup": setup | {"loss": 0.0},
                "rows": rows,
                "runs": [m[r.name] for r in runs("6", a.seed) if r.name in m],
            },
        )
    if a.figure in ("3", "all"):
        rows = []
        for loss in FIG3_LOSSES:
            for k in ("reno", "ctcp", "hstcp"):
                t = m.get(alone(k, loss, a.seed).name)
                if t:
                    tot = common.total(t)
                    rows.append(
                        {
                            "loss": loss,
                            "kind": k,
                            "aggregate_mbit": round(tot, 3),
                            "utilization": round(tot / (RATE * common.MSS / common.WIRE), 4),
                        }
                    )
        common.write_results(
            "ctcp-fig3",
            {
                "setup": setup | {"buffer_pkts": BUF18},
                "rows": rows,
                "runs": [m[r.name] for r in runs("3", a.seed) if r.name in m],
            },
        )
    print(f"{len(m)} runs read from {work}")


if __name__ == "__main__":
    main()
