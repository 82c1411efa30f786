"""Write samples/hscc-trace.toml: the algorithm every sample flow's sender ran, as `check`
expectations beside the captures (docs/ci.md#expectations-beside-the-captures).

    python samples/testbed/make_expectations.py          # rewrite the file
    python samples/testbed/make_expectations.py --check  # exit 1 when it is out of date

The truth is samples/index.json: per flow its sender's algorithm (``algo`` where the sender is a
BPF program implementing a registered algorithm, else the kernel's ``cc``). A capture with one
data flow gets one expectation for every flow; a capture with several senders one per flow,
with the flow ids hscc-trace assigns (found by the data sender's port).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent
OUT = SAMPLES / "hscc-trace.toml"

HEAD = """# Expectations of `hscc-trace check samples/` (written by samples/testbed/make_expectations.py
# from samples/index.json: do not edit by hand). Every sample flow is expected to be identified
# as the algorithm its sender ran, or to be ambiguous among candidates that include it
# (allow_ambiguous: a receiver-side capture, or a path where two algorithms act alike, cannot
# always rank them — docs/verdicts.md); a wrong name fails, and a flow without enough data is
# skipped. The synthetic edge cases in samples/synthetic/ carry no expectation (skipped).
"""


def _algo(flow: dict) -> str:
    return str(flow.get("algo") or flow["cc"])


def render(index: dict) -> str:
    from hscc_trace import api

    out = [HEAD]
    for s in index["samples"]:
        rel = Path(s["capture"]).relative_to("samples").as_posix()
        flows = s["flows"]
        algos = {_algo(f) for f in flows}
        if len(algos) == 1:
            algo = algos.pop()
            # a rate-based sender seen at the receiver shows no pacing (measured at the sender only):
            # without loss episodes "unknown" is its honest verdict (docs/verdicts.md), judged by
            # the model's error alone
            unknown = "allow_unknown = true\n" if algo == "bbr" and s.get("capture_point") == "receiver" else ""
            out.append(f'[[check.expectations]]\nmatch = "{rel}"\nexpect = "{algo}"\nallow_ambiguous = true\n{unknown}')
            continue
        table = api.flows(str(SAMPLES.parent / s["capture"]))
        for f in flows:
            ports = {f["sport"], f["dport"]}
            fid = [r["flow_id"] for r in table.iter_rows(named=True) if {r["sport"], r["dport"]} == ports]
            if len(fid) != 1:
                raise SystemExit(f"{s['name']}: no single flow for ports {sorted(ports)}")
            out.append(
                f'[[check.expectations]]\nmatch = "{rel}"\nexpect = "{_algo(f)}"\nflows = [{fid[0]}]\n'
                "allow_ambiguous = true\n"
            )
    return "\n".join(out)


def main() -> int:
    text = render(json.loads((SAMPLES / "index.json").read_text()))
    if "--check" in sys.argv[1:]:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is out of date: python samples/testbed/make_expectations.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
