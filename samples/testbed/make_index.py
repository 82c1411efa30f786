"""Write samples/index.json from every samples/<name>/meta.json (no root needed).

    python samples/testbed/make_index.py

Each entry: name, path, capture file, its size and packet count, capture point, congestion
control, link settings, flows (5-tuples, ISN, capture summary), truth files, and ``shows``:
what the sample demonstrates, which tests/test_samples.py checks against the ground truth.
"""

from __future__ import annotations

import json
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent

SHOWS = {
    "reno-bdp": "Reno sawtooth with a 1-BDP drop-tail buffer: each buffer overflow enters Recovery with "
    "ssthresh = cwnd/2, then cwnd grows by about one packet per RTT",
    "reno-bdp-receiver": "the reno-bdp run captured at the receiver (RTT samples and flight are shifted "
    "by the vantage point); truth is the sender's",
    "reno-loss": "Reno under 0.5 % random loss: frequent halvings (ssthresh = cwnd/2), window well below BDP",
    "cubic-longrtt": "CUBIC with a 100 ms base RTT: multiplicative decrease to 0.7·cwnd and cubic regrowth",
    "cubic-loss": "CUBIC under 0.5 % random loss: ssthresh = 0.7·cwnd at each loss",
    "bbr": "BBR (v1): model-based pacing; cwnd not halved on loss, flight bounded near 2·BDP",
    "reno-vs-cubic": "two flows, Reno (sport 40001) and CUBIC (sport 40002), sharing one bottleneck; truth for both",
    "rwnd-limited": "receive-window-limited Reno flow: snd_nxt − snd_una sits at the peer's window (20 MSS), cwnd "
    "is not binding and Linux stops growing it at 2 × the flight (40) — flat for the whole run",
    "app-limited": "application-limited Reno flow (2 Mbit/s writer on a 10 Mbit/s link): flight well below cwnd; "
    "Linux grows no unused window, cwnd stays flat at 2 × the largest flight",
    "bbr-rtt10": "BBR (v1) at 20 Mbit/s, 10 ms base RTT, 1-BDP buffer: model-based pacing, cwnd near 2·BDP + "
    "quantization/aggregation allowance",
    "bbr-rtt100": "BBR (v1) at 10 Mbit/s, 100 ms base RTT, shallow 0.3-BDP buffer: STARTUP overshoot losses, BBR keeps "
    "its rate (cwnd not halved) despite 6 % retransmissions",
    "bbr-loss": "BBR (v1) under 1 % random loss with a 2-BDP buffer: throughput stays near the link rate (no halving); "
    "also captured at the receiver",
    "bbr-loss-receiver": "the bbr-loss run captured at the receiver; truth is the sender's",
    "bbr-40m": "BBR (v1) at 40 Mbit/s, 20 ms base RTT, 1-BDP buffer (short run: STARTUP, DRAIN, first PROBE_BW cycles)",
    "bbr-vs-cubic": "two flows, BBR (sport 40001) and CUBIC (sport 40002), sharing a 10 Mbit/s bottleneck with a 2-BDP "
    "buffer; truth for both",
    "reno-50m": "Reno at 50 Mbit/s, 10 ms base RTT, 0.5-BDP buffer: fast sawtooth, ssthresh = cwnd/2 at each overflow",
    "reno-4bdp": "Reno with a deep 4-BDP buffer (10 Mbit/s, 10 ms): RTT grows several-fold before each halving",
    "reno-loss-rtt60": "Reno under 1 % random loss at 60 ms base RTT (buffer 2 BDP): loss-limited window far below BDP",
    "reno-rtt60": "Reno at 60 ms base RTT with a shallow 0.3-BDP buffer (10 Mbit/s); also captured at the receiver",
    "reno-rtt60-receiver": "the reno-rtt60 run captured at the receiver; truth is the sender's",
    "cubic-rtt10": "CUBIC at 20 Mbit/s, 10 ms base RTT, 0.5-BDP buffer (Reno-friendly region): ssthresh = 0.7·cwnd; also "
    "captured at the receiver",
    "cubic-rtt10-receiver": "the cubic-rtt10 run captured at the receiver; truth is the sender's",
    "cubic-4bdp": "CUBIC with a deep 4-BDP buffer (10 Mbit/s, 10 ms): ssthresh = 0.7·cwnd, cubic regrowth through a "
    "deep queue",
    "cubic-loss-rtt100": "CUBIC under 0.2 % random loss at 100 ms base RTT (buffer 2 BDP)",
    "reno-vs-cubic-rtt20": "two flows, Reno (sport 40001) and CUBIC (sport 40002), at 20 Mbit/s and 20 ms base RTT, "
    "1-BDP buffer; truth for both",
    "cubic-50m": "CUBIC at 50 Mbit/s, 10 ms base RTT, 0.5-BDP buffer (reno-50m's path): 7 overflows in 3 s at cwnd 40-67, "
    "ssthresh = 0.7·cwnd at each; also captured at the receiver",
    "cubic-50m-receiver": "the cubic-50m run captured at the receiver; truth is the sender's",
    "bbr-50m": "BBR (v1) at 50 Mbit/s, 50 ms base RTT (BDP 208 packets), 0.5-BDP buffer: STARTUP overshoots the "
    "buffer (940 segments retransmitted in 2 recoveries), cwnd is not cut and stays near 2.2 BDP (430-460)",
    "bbr-4bdp": "BBR (v1) with a deep 4-BDP buffer (20 Mbit/s, 20 ms): no loss, and srtt stays within a few ms of the "
    "base RTT (median 23.9 ms) where a loss-based sender would queue 80 ms; also captured at the receiver",
    "bbr-4bdp-receiver": "the bbr-4bdp run captured at the receiver; truth is the sender's",
    "reno-rtt100": "Reno at 100 ms base RTT under 0.2 % random loss, 2-BDP buffer (cubic-loss-rtt100's path): a "
    "slow-start overshoot to cwnd 502 (254 drops at the buffer; 251 still overflows BDP + buffer), then halvings "
    "at windows of 30-130, ssthresh = cwnd/2 at each of the 8 recoveries",
    "cubic-smallbuf": "CUBIC with a shallow 0.3-BDP buffer (10 Mbit/s, 40 ms, 10 packets): overflow at cwnd 44 every "
    "~1.35 s, ssthresh = ⌊44·717/1024⌋ = 30",
    "cubic-loss-1pct": "CUBIC under 1 % random loss at 20 Mbit/s, 30 ms, 2-BDP buffer: ~20 reductions to 0.7·cwnd in "
    "5 s, windows of 3-34 packets (loss-limited: a fifth of the link rate)",
    "bbr-vs-reno": "two flows, BBR (sport 40001) and Reno (sport 40002), sharing a 20 Mbit/s, 20 ms bottleneck with a "
    "1-BDP buffer: BBR takes 16 of the 20 Mbit/s, Reno halves 22 times at windows of 4-20; truth for both",
    "cubic-vs-cubic": "two CUBIC flows (sports 40001, 40002) sharing reno-vs-cubic's path (10 Mbit/s, 40 ms, 1-BDP "
    "buffer): 6 reductions to 0.7·cwnd each; truth for both",
    # BPF congestion controls (samples/testbed/cc/): truth_signals.parquet holds each one's own state
    "vegas-deepbuf": "Vegas (BPF, tcp_vegas.c) with a 3-BDP buffer: leaves slow start when diff > γ (here one doubling "
    "late, overflowing once: the round's minimum RTT comes from its first packets) and settles with α..β packets "
    "queued (cwnd ≈ BDP + 2..4), no further loss",
    "vegas-loss": "Vegas (BPF) under 0.5 % random loss: Reno halvings, per-round ±1 steps in between",
    "westwood-loss": "Westwood+ (BPF, tcp_westwood.c) under 1 % random loss: at each recovery exit cwnd = ssthresh = "
    "B·RTTmin from the bandwidth estimate, not cwnd/2",
    "westwood-bdp": "Westwood+ (BPF) at 20 Mbit/s, 40 ms, 1-BDP buffer: overflow losses, B·RTTmin ≈ BDP after each",
    "highspeed-bdp": "HighSpeed TCP (BPF, RFC 3649 table) at 20 Mbit/s, 100 ms, 0.5-BDP buffer: windows 150-250, "
    "a(w) = 3-4 packets per ACK-counted RTT, decrease b(w) = 0.38-0.41",
    "highspeed-loss": "HighSpeed TCP (BPF) under 0.1 % random loss at 60 ms: decreases by b(w) of the current row",
    "ctcp-bdp": "Compound TCP (BPF) at 20 Mbit/s, 100 ms, 1-BDP buffer: the delay window grows by α·win^¾ − 1 per "
    "round and retreats when diff ≥ γ = 30, holding the queue near γ without loss",
    "ctcp-smallbuf": "Compound TCP (BPF) with a 20-packet buffer (< γ): losses before diff reaches γ; γ auto-tuning "
    "lowers γ towards ¾ of the loss component's backlog",
    "fusion-40m": "TCP-Fusion (BPF) at 40 Mbit/s, 20 ms, 1-BDP buffer: increase (W_inc ≈ 3.3), steady and decrease "
    "phases as the queue grows, Westwood decrease max(RTTmin/RTT·cwnd, cwnd/2) at each overflow",
    "fusion-loss": "TCP-Fusion (BPF) under 0.2 % random loss at 20 Mbit/s, 40 ms",
    "hrf-rtt80-loss": "HRF-TCP = W+CR+CI (BPF) at 80 ms = 2·RTTref under 0.1 % loss: CR (4 packets per RTT) while the "
    "link is vacant, CI once a queue forms, Westwood decrease",
    "hrf-rtt20": "HRF-TCP (BPF) at 20 ms = RTTref/2, 1-BDP buffer: CR (¼ packet per RTT) / CI switch",
    "hrf-cr-rtt80-loss": "the HRF paper's CR row (BPF): (RTT/RTTref)² per RTT, halving; 80 ms, 0.1 % loss",
    "hrf-cr-rtt20": "the HRF paper's CR row (BPF) at 20 ms, 1-BDP buffer",
    "hrf-ci-rtt80-loss": "the HRF paper's CI row (BPF): RTT/(RTTref + qdelay) per RTT, halving; 80 ms, 0.1 % loss",
    "hrf-ci-rtt20": "the HRF paper's CI row (BPF) at 20 ms, 1-BDP buffer",
    "hrf-w-cr-reno-rtt80-loss": "the HRF paper's W+CR+Reno row (BPF): CR without a queue, Reno with one, Westwood "
    "decrease; 80 ms, 0.1 % loss",
    "hrf-w-cr-reno-rtt20": "the HRF paper's W+CR+Reno row (BPF) at 20 ms, 1-BDP buffer",
    "hrf-w-cr-cr-rtt80-loss": "the HRF paper's W+CR+CR row (BPF): CR always, Westwood decrease; 80 ms, 0.1 % loss",
    "hrf-w-cr-cr-rtt20": "the HRF paper's W+CR+CR row (BPF) at 20 ms, 1-BDP buffer",
    "ktcp-hs-bdp": "Kyushu-TCP over HighSpeed (BPF) at 20 Mbit/s, 60 ms, 1-BDP buffer: after a loss the window is held "
    "at w2 = 0.9·w1 for Tc²·w2 packets (the non-aggressive period)",
    "ktcp-hs-loss": "Kyushu-TCP over HighSpeed (BPF) under 0.05 % random loss: holds at w2 after the fast "
    "retransmissions, Tc growing",
    "ktcp-cubic-bdp": "Kyushu-TCP over the kernel's CUBIC (BPF wrapper around the cubictcp_* kfuncs), 20 Mbit/s, 60 ms, "
    "1-BDP buffer: hold at w2 = 0.9·w1, then CUBIC resumes on its running epoch",
    "ktcp-cubic-loss": "Kyushu-TCP over CUBIC (BPF) under 0.05 % random loss at 60 ms: between losses CUBIC's "
    "regrowth reaches w2 = 0.9·w1 only once, 0.35 s before the end (a hold of 3 rounds)",
    "ktcp-cubic-loss-rtt20": "Kyushu-TCP over CUBIC (BPF) under 0.05 % random loss at 20 ms, 2-BDP buffer: CUBIC "
    "regains w2 = 0.9·w1 0.6-1 s after a loss, and the window is held there for Tc²·w2 packets (two holds: "
    "441 packets in 9 rounds, 1008 in 16)",
}


def entry(d: Path, rel: str) -> dict:
    """The index entry of the sample in directory ``d`` (``rel``: its path from the repository root)."""
    meta = json.loads((d / "meta.json").read_text())
    cap = d / meta["capture"].get("file", "capture.pcap")
    e = {
        "name": d.name,
        "path": rel,
        "capture": f"{rel}/{cap.name}",
        "capture_bytes": cap.stat().st_size,
        "packets": meta["capture"]["packets"],
        "capture_point": meta["capture_point"],
        "cc": meta["cc"],
        "rate_bps": meta["rate_bps"],
        "base_rtt_s": meta["base_rtt_s"],
        "buffer_pkts": meta["buffer_pkts"],
        "loss": meta["loss"],
        "duration_s": meta["duration_s"],
        "rwnd_rcvbuf_bytes": meta["rwnd_rcvbuf_bytes"],
        "app_rate_bps": meta["app_rate_bps"],
        "same_run_as": meta.get("same_run_as"),
        "flows": [
            {
                "proto": f["proto"],
                "src": f["src"],
                "sport": f["sport"],
                "dst": f["dst"],
                "dport": f["dport"],
                "cc": f["cc"],
                **({"algo": f["algo"]} if "algo" in f else {}),
                **({"zoo": f["zoo"]} if "zoo" in f else {}),
                "isn": f["isn"],
                "throughput_bps": f["capture_summary"]["throughput_bps"],
                "retransmitted_segments": f["capture_summary"]["retransmitted_segments"],
            }
            for f in meta["flows"]
        ],
        "truth": {
            k: f"{rel}/truth_{k}.parquet"
            for k in ("probe", "ca_state", "retrans", "signals")
            if (d / f"truth_{k}.parquet").exists()
        },
        "meta": f"{rel}/meta.json",
        "shows": SHOWS.get(d.name, ""),
        "command": meta["command"],
    }
    if "field" in meta:
        e["field"] = meta["field"]
        e["emulator_counts"] = {
            k: meta["emulator"]["a_to_b"].get(k, 0)
            for k in ("drop_queue", "drop_loss", "drop_aqm", "ecn_marked", "drop_police")
        }
    return e


def main() -> None:
    entries = []
    for meta_path in sorted(SAMPLES.glob("*/meta.json")):
        d = meta_path.parent
        if d.name in ("synthetic", "testbed"):
            continue
        entries.append(entry(d, f"samples/{d.name}"))
    out = {
        "version": 1,
        "samples": entries,
        "notes": "real Linux captures made by samples/testbed/run.py (see samples/README.md); "
        "synthetic scapy captures live in samples/synthetic/ with their own index; the open-set zoo and "
        "the field conditions in samples/zoo/ and samples/field/ with theirs",
    }
    (SAMPLES / "index.json").write_text(json.dumps(out, indent=1) + "\n")
    update_readme(entries)
    for sub, note in SETS.items():
        ents = [entry(m.parent, f"samples/{sub}/{m.parent.name}") for m in sorted((SAMPLES / sub).glob("*/meta.json"))]
        if ents:
            doc = {"version": 1, "samples": ents, "notes": note}
            (SAMPLES / sub / "index.json").write_text(json.dumps(doc, indent=1) + "\n")
            update_readme_set(sub, ents)


#: the sample sets with their own index (made by samples/testbed/make_zoo.sh)
SETS = {
    "zoo": "the open-set zoo: Linux congestion controls hscc-trace has no replay for, ported to BPF from the "
    "kernel's modules (samples/testbed/cc/zoo/, flows[].zoo names the kernel file); no flow may be identified "
    "as a library algorithm (tests/test_zoo.py)",
    "field": "field conditions of the link emulator (meta.json -> field): ECN-marking CoDel, ACK aggregation, "
    "delay jitter, a policer; Linux Reno, CUBIC and BBR senders with kernel truth",
}


BEGIN, END = "<!-- BEGIN GENERATED: make_index.py -->", "<!-- END GENERATED -->"


def update_readme(entries: list[dict]) -> None:
    """Refresh the per-sample table in samples/README.md (between the markers)."""
    readme = SAMPLES / "README.md"
    if not readme.exists():
        return
    rows = [
        "| sample | cc | link (rate, base RTT, buffer, loss) | capture | size | packets | "
        "throughput (Mbit/s) | retransmitted segments | clock-alignment residual p50 / p95 (µs) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        meta = json.loads((SAMPLES / e["name"] / "meta.json").read_text())
        al = list(meta["trace"]["alignment"].values())
        res = " ; ".join(f"{a['residual_abs_us_p50']:.1f} / {a['residual_abs_us_p95']:.1f}" for a in al)
        link = (
            f"{e['rate_bps'] / 1e6:g} Mbit/s, {e['base_rtt_s'] * 1e3:g} ms, {e['buffer_pkts']} pkts, "
            f"{e['loss'] * 100:g} %"
        )
        if e["rwnd_rcvbuf_bytes"]:
            link += f", SO_RCVBUF {e['rwnd_rcvbuf_bytes']} B"
        if e["app_rate_bps"]:
            link += f", app {e['app_rate_bps'] / 1e6:g} Mbit/s"
        tput = " + ".join(f"{f['throughput_bps'] / 1e6:.2f}" for f in e["flows"])
        rtx = " + ".join(str(f["retransmitted_segments"]) for f in e["flows"])
        cc = e["cc"] if isinstance(e["cc"], str) else " vs ".join(e["cc"])
        rows.append(
            f"| `{e['name']}` | {cc} | {link} | {e['capture_point']} | {e['capture_bytes'] / 1e6:.2f} MB | "
            f"{e['packets']} | {tput} | {rtx} | {res} |"
        )
    text = readme.read_text()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        readme.write_text(head + BEGIN + "\n" + "\n".join(rows) + "\n" + END + tail)


def update_readme_set(sub: str, entries: list[dict]) -> None:
    """The table of samples/<sub>/ in samples/README.md (between its own markers)."""
    readme = SAMPLES / "README.md"
    begin, end = f"<!-- BEGIN GENERATED: make_index.py {sub} -->", f"<!-- END GENERATED {sub} -->"
    if not readme.exists():
        return
    rows = [
        "| sample | cc | ports | link (rate, base RTT, buffer, loss) | field | size | packets | "
        "throughput (Mbit/s) | retransmitted segments | CE marks |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        f = e["field"]
        cond = [
            *([f"CoDel{' + ECN' if f['ecn'] else ''}"] if f["aqm"] == "codel" else []),
            *([f"ACKs every {f['ack_aggregation_s'] * 1e3:g} ms"] if f["ack_aggregation_s"] else []),
            *([f"jitter 0-{f['jitter_s'] * 1e3:g} ms"] if f["jitter_s"] else []),
            *([f"policer {f['policer_rate_bps'] / 1e6:g} Mbit/s"] if f["policer_rate_bps"] else []),
        ]
        (fl,) = e["flows"]
        link = (
            f"{e['rate_bps'] / 1e6:g} Mbit/s, {e['base_rtt_s'] * 1e3:g} ms, {e['buffer_pkts']} pkts, "
            f"{e['loss'] * 100:g} %"
        )
        rows.append(
            f"| `{sub}/{e['name']}` | {e['cc']} | {fl.get('zoo', '')} | {link} | {', '.join(cond) or '—'} | "
            f"{e['capture_bytes'] / 1e6:.2f} MB | {e['packets']} | {fl['throughput_bps'] / 1e6:.2f} | "
            f"{fl['retransmitted_segments']} | {e['emulator_counts']['ecn_marked']} |"
        )
    text = readme.read_text()
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        readme.write_text(head + begin + "\n" + "\n".join(rows) + "\n" + end + tail)


if __name__ == "__main__":
    main()
