"""The Markdown tables of docs/papers.md, printed from the results JSON (results/*.json).

    python samples/testbed/experiments/tables.py            # every table
    python samples/testbed/experiments/tables.py ctcp-fig4  # one results file
    python samples/testbed/experiments/tables.py --inject docs/papers.md

``--inject`` rewrites every block of the page between ``<!-- table:NAME -->`` and
``<!-- /table -->`` with the table of results/NAME.json.

The docs quote these tables; tests/test_papers.py checks the figures docs/papers.md quotes
against the results files and against hscc-trace's reading of the kept capture.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _load(name: str) -> dict | None:
    p = RESULTS / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f} %"


def _loss(x: float) -> str:
    return "0" if x == 0 else f"{x:g}"


def _stolen_cells(c: dict | None) -> str:
    return "–" if c is None else f"{_pct(c['stolen'])} ({_pct(c['stolen_truth'])})"


def _stolen_table(rows: list[dict], key: str, label, head: str) -> str:
    out = [
        f"| {head} | CTCP stolen (truth) | HSTCP stolen (truth) | mean Reno flow beside CTCP / HSTCP / in the 8-Reno baseline (Mbit/s) "
        "| mean CTCP / HSTCP flow (Mbit/s) | one run's noise |",
        "|---|---|---|---|---|---|",
    ]
    by = {(r[key], r["kind"]): r for r in rows}
    for v in sorted({r[key] for r in rows}, reverse=key == "loss"):
        c, h = by.get((v, "ctcp")), by.get((v, "hstcp"))
        ref = c or h
        out.append(
            f"| {label(v, ref)} | {_stolen_cells(c)} | {_stolen_cells(h)} | "
            f"{c['Q_mbit'] if c else '–'} / {h['Q_mbit'] if h else '–'} / {ref['P_mbit']} | "
            f"{c['high_speed_mbit'] if c else '–'} / {h['high_speed_mbit'] if h else '–'} | "
            f"{_pct(ref['baseline_split'])} |"
        )
    return "\n".join(out)


def ctcp_fig4() -> str:
    d = _load("ctcp-fig4")
    return _stolen_table(d["rows"], "loss", lambda v, r: _loss(v), "loss") if d else ""


def ctcp_fig6() -> str:
    d = _load("ctcp-fig6")
    return (
        _stolen_table(
            d["rows"], "buffer_pkts", lambda v, r: f"{v} ({r['buffer_pct_bdp']} % of BDP)", "buffer (packets)"
        )
        if d
        else ""
    )


def ctcp_fig4_scale() -> str:
    d = _load("ctcp-fig4-scale")
    if not d:
        return ""
    out = [
        "| test run | stolen (truth) | mean Reno flow beside it / in the 2-Reno baseline (Mbit/s) | the high-speed flow (Mbit/s) | one run's noise |",
        "|---|---|---|---|---|",
    ]
    for r in d["rows"]:
        out.append(
            f"| 1 {r['kind']} + 1 Reno | {_stolen_cells(r)} | {r['Q_mbit']} / {r['P_mbit']} | {r['high_speed_mbit']} | {_pct(r['baseline_split'])} |"
        )
    return "\n".join(out)


def ctcp_util() -> str:
    """Utilization of Fig. 4's runs (eight flows each) against loss: the stand-in for Fig. 3."""
    d = _load("ctcp-fig4")
    if not d:
        return ""
    by = {}
    for m in d["runs"]:
        kind = "reno" if all(c == "reno" for c in m["cc"]) else ("ctcp" if "bpf_ctcp" in m["cc"] else "hstcp")
        by[(m["loss"], kind)] = m
    out = ["| loss | 8 Reno | 4 CTCP + 4 Reno | 4 HSTCP + 4 Reno |", "|---|---|---|---|"]
    for loss in sorted({k[0] for k in by}, reverse=True):
        cells = [by.get((loss, k)) for k in ("reno", "ctcp", "hstcp")]
        out.append(
            f"| {_loss(loss)} | " + " | ".join("–" if c is None else _pct(c["utilization_link"]) for c in cells) + " |"
        )
    return "\n".join(out)


def ctcp_fig3() -> str:
    d = _load("ctcp-fig3")
    if not d:
        return ""
    out = ["| loss | 4 Reno | 4 CTCP | 4 HSTCP |", "|---|---|---|---|"]
    by = {(r["loss"], r["kind"]): r for r in d["rows"]}
    for loss in sorted({r["loss"] for r in d["rows"]}, reverse=True):
        cells = [by.get((loss, k)) for k in ("reno", "ctcp", "hstcp")]
        out.append(
            f"| {_loss(loss)} | "
            + " | ".join(
                "–" if c is None else f"{_pct(c['utilization'])} ({c['aggregate_mbit']:.1f} Mbit/s)" for c in cells
            )
            + " |"
        )
    return "\n".join(out)


def fusion_fig56() -> str:
    d = _load("fusion-fig5-6")
    if not d:
        return ""
    out = [
        "| loss | variant | variant (Mbit/s) | Reno beside it (Mbit/s) | Reno's share | bandwidth stolen from Reno | Jain |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sorted(d["rows"], key=lambda r: (-r["loss"], r["variant"] != "reno", r["variant"])):
        tot = r["variant_mbit"] + r["reno_mbit"]
        st = "–" if r["reno_stolen"] is None else _pct(r["reno_stolen"])
        out.append(
            f"| {_loss(r['loss'])} | {r['variant']} | {r['variant_mbit']:.1f} | {r['reno_mbit']:.1f} "
            f"| {_pct(r['reno_mbit'] / tot)} | {st} | {r['jain']:.2f} |"
        )
    return "\n".join(out)


PAPER_TABLE1 = {  # TCP-Fusion paper, Table 1 (Mbit/s): row's throughput beside column
    "reno": {"reno": 44.9, "fusion": 40.2, "ctcp": 38.6, "hstcp": 10.3, "cubic": 18.6},
    "fusion": {"reno": 50.0, "fusion": 43.6, "ctcp": 43.0, "hstcp": 21.1, "cubic": 18.7},
    "ctcp": {"reno": 53.9, "fusion": 46.5, "ctcp": 44.9, "hstcp": 20.8, "cubic": 15.0},
    "hstcp": {"reno": 78.2, "fusion": 61.4, "ctcp": 65.8, "hstcp": 43.2, "cubic": 29.7},
    "cubic": {"reno": 71.7, "fusion": 70.3, "ctcp": 74.0, "hstcp": 59.6, "cubic": 44.3},
}


def fusion_table1() -> str:
    d = _load("fusion-table1")
    if not d:
        return ""
    order = d["order"]
    t = d["table"]
    out = ["| row beside column | " + " | ".join(order) + " |", "|---|" + "---|" * len(order)]
    for x in order:
        cells = []
        for y in order:
            v = t.get(x, {}).get(y)
            p = PAPER_TABLE1[x][y] / 2  # the paper's link is 100 Mbit/s, ours 50: its figure halved
            cells.append(f"{'–' if v is None else f'{v:.1f}'} ({p:.1f})")
        out.append(f"| {x} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def hrf_rtt() -> str:
    d = _load("hrf-rtt")
    if not d:
        return ""
    out = [
        "| experiment | protocol, flow 1 / flow 2 | loss | Thr1 (Mbit/s) | Thr2 (Mbit/s) | Thr1 − Thr2 | Thr1 / Thr2 "
        "| mean RTT 1 / 2 (ms) | RTT-fairness exponent | Jain |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in d["rows"]:
        names = r["flow1"] if r["flow1"] == r["flow2"] else f"{r['flow1']} / {r['flow2']}"
        ex = "–" if r["exponent"] is None else f"{r['exponent']:.2f}"
        out.append(
            f"| {r['experiment']} | {names} | {_loss(r['loss'])} | {r['thr1_mbit']:.1f} | {r['thr2_mbit']:.1f} "
            f"| {r['thr1_minus_thr2_mbit']:+.1f} | {r['ratio_thr1_thr2']:.2f} | {r['rtt1_mean_ms']:.0f} / {r['rtt2_mean_ms']:.0f} "
            f"| {ex} | {r['jain']:.2f} |"
        )
    return "\n".join(out)


def kyushu_alpha() -> str:
    d = _load("kyushu-alpha")
    if not d:
        return ""
    out = [
        "| base RTT | high-speed flow | it (Mbit/s) | 4 Reno (Mbit/s) | normalized high-speed (Fig. 7) | normalized Reno (Fig. 8) |",
        "|---|---|---|---|---|---|",
    ]
    for r in d["rows"]:
        out.append(
            f"| {r['rtt_ms']:g} ms | {r['kind']} | {r['high_speed_mbit']:.1f} | {r['reno_total_mbit']:.1f} | "
            f"{r['normalized_high_speed']:.2f} | {r.get('normalized_reno', float('nan')):.2f} |"
        )
    return "\n".join(out)


TABLES = {
    "ctcp-fig3": ctcp_fig3,
    "ctcp-util": ctcp_util,
    "ctcp-fig4": ctcp_fig4,
    "ctcp-fig4-scale": ctcp_fig4_scale,
    "ctcp-fig6": ctcp_fig6,
    "fusion-fig5-6": fusion_fig56,
    "fusion-table1": fusion_table1,
    "hrf-rtt": hrf_rtt,
    "kyushu-alpha": kyushu_alpha,
}

BLOCK = re.compile(r"(<!-- table:([\w.-]+) -->\n)(.*?)(<!-- /table -->)", re.S)


def inject(text: str) -> str:
    """The page with every table block rendered again from the results."""
    return BLOCK.sub(lambda m: m.group(1) + TABLES[m.group(2)]() + "\n" + m.group(4), text)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--inject"]:
        page = Path(sys.argv[2])
        page.write_text(inject(page.read_text()))
    else:
        for name in sys.argv[1:] or TABLES:
            print(f"<!-- table:{name} -->\n{TABLES[name]()}\n<!-- /table -->\n")
