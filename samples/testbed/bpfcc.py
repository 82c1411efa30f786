"""BPF congestion controls of the testbed: build, register, unregister, and read their signals.

Each sender in ``SENDERS`` is a ``struct tcp_congestion_ops`` written in BPF C under
``samples/testbed/cc/`` (one file per algorithm; the HRF paper's rows are one file built with
different ``-D`` choices). ``run.py --cc bpf_vegas`` builds the object with clang, registers it
with ``bpftool struct_ops register`` (the name then appears in
``net.ipv4.tcp_available_congestion_control``), runs the flows and unregisters it again.

Every program dumps its internal signals with ``bpf_printk("hscc_sig <sport> <ev> ...")``; the
testbed's private tracefs instance records these lines on the same clock as ``tcp:tcp_probe``, and
``signal_rows`` turns them into rows of ``truth_signals.parquet``. The field names come from the
``hscc-signals:`` comment line of the C file (``name:Qn`` = fixed point with n fractional bits),
so the program and the table's description cannot drift apart.

    python samples/testbed/bpfcc.py --list            # the senders, their files and signals
    sudo python samples/testbed/bpfcc.py --check      # build and register all, then unregister
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CC_DIR = HERE / "cc"
BUILD = Path("/tmp/hscc_testbed_build/cc")
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
APT_PACKAGES = ("clang", "llvm", "libbpf-dev", "bpftool")


@dataclass(frozen=True)
class Sender:
    """One BPF congestion control: its source, build choices and the replay algorithm it is."""

    source: str  # file under samples/testbed/cc/
    algo: str  # the replay algorithm (hscc-trace replay --algo) this sender implements
    defines: dict[str, str] = field(default_factory=dict)
    doc: str = ""
    kernel_source: str = ""  # open-set zoo: the Linux file the program ports (algo is then "")


def _hrf(m1: str, m2: str, dec: str, var: str) -> dict[str, str]:
    return {"HRF_M1": m1, "HRF_M2": m2, "HRF_DEC": dec, "CC_VAR": var}


SENDERS: dict[str, Sender] = {
    "bpf_vegas": Sender("vegas.c", "vegas", doc="TCP Vegas (Linux tcp_vegas.c)"),
    "bpf_westwood": Sender("westwood.c", "westwood", doc="Westwood+ (Linux tcp_westwood.c)"),
    "bpf_highspeed": Sender("highspeed.c", "highspeed", doc="HighSpeed TCP (RFC 3649, Linux tcp_highspeed.c)"),
    "bpf_ctcp": Sender("compound.c", "compound", doc="Compound TCP with γ auto-tuning (Tan et al. 2006)"),
    "bpf_fusion": Sender("fusion.c", "fusion", doc="TCP-Fusion (Kaneko et al. 2007)"),
    "bpf_hrf": Sender("hrf.c", "hrf", _hrf("CR", "CI", "W", "bpf_hrf"), "HRF-TCP = W+CR+CI (Ogura et al. 2012)"),
    "bpf_hrf_cr": Sender("hrf.c", "hrf-cr", _hrf("CR", "CR", "RENO", "bpf_hrf_cr"), "CR row of the HRF paper"),
    "bpf_hrf_ci": Sender("hrf.c", "hrf-ci", _hrf("CI", "CI", "RENO", "bpf_hrf_ci"), "CI row of the HRF paper"),
    "bpf_hrf_wcrreno": Sender(
        "hrf.c", "hrf-w-cr-reno", _hrf("CR", "RENO", "W", "bpf_hrf_wcrreno"), "W+CR+Reno row of the HRF paper"
    ),
    "bpf_hrf_wcrcr": Sender(
        "hrf.c", "hrf-w-cr-cr", _hrf("CR", "CR", "W", "bpf_hrf_wcrcr"), "W+CR+CR row of the HRF paper"
    ),
    "bpf_ktcp_hs": Sender("kyushu_highspeed.c", "kyushu+highspeed", doc="Kyushu-TCP over HighSpeed TCP"),
    "bpf_ktcp_cubic": Sender("kyushu_cubic.c", "kyushu+cubic", doc="Kyushu-TCP over the kernel's CUBIC"),
}

# The open-set zoo (cc/zoo/): Linux congestion controls hscc-trace has no replay for, ported to BPF
# from the kernel's own modules; their flows must never be named as a library algorithm.
ZOO: dict[str, tuple[str, str]] = {
    "bic": ("net/ipv4/tcp_bic.c", "BIC-TCP (Xu, Harfoush, Rhee 2004)"),
    "htcp": ("net/ipv4/tcp_htcp.c", "H-TCP (Shorten, Leith 2004)"),
    "scalable": ("net/ipv4/tcp_scalable.c", "Scalable TCP (Kelly 2003)"),
    "veno": ("net/ipv4/tcp_veno.c", "TCP Veno (Fu, Liew 2003)"),
    "yeah": ("net/ipv4/tcp_yeah.c", "YeAH-TCP (Baiocchi, Castellani, Vacirca 2007)"),
    "illinois": ("net/ipv4/tcp_illinois.c", "TCP-Illinois (Liu, Basar, Srikant 2008)"),
    "lp": ("net/ipv4/tcp_lp.c", "TCP-LP (Kuzmanovic, Knightly 2003)"),
    "nv": ("net/ipv4/tcp_nv.c", "TCP-NV (Brakmo 2010)"),
    "cdg": ("net/ipv4/tcp_cdg.c", "CAIA Delay-Gradient (Hayes, Armitage 2011)"),
    "dctcp": ("net/ipv4/tcp_dctcp.c", "DCTCP (Alizadeh et al. 2010, RFC 8257); needs ECN marks"),
}
for _z, (_src, _doc) in ZOO.items():
    SENDERS[f"zoo_{_z}"] = Sender(f"zoo/{_z}.c", "", doc=_doc, kernel_source=_src)  # ≤ 15 chars (TCP_CA_NAME_MAX)

# Builds for the papers' experiments only (samples/testbed/experiments/): no committed sample
# runs them, so they stay out of SENDERS (whose every entry has samples on two paths).
VARIANTS: dict[str, Sender] = {
    # the Kyushu paper's α sweep (§5.1.1, Figs. 6-8): w2 = α·w1 with α = 0.80 and 0.95
    # (bpf_ktcp_hs is α = 0.90): kyushu_highspeed.c itself, α and the name from -D
    "bpf_ktcp_hs_a80": Sender(
        "kyushu_highspeed.c",
        "kyushu+highspeed",
        {"KTCP_ALPHA_NUM": "8", "KTCP_ALPHA_DEN": "10", "KTCP_HS_NAME": "bpf_ktcp_hs_a80"},
        "Kyushu-TCP over HighSpeed TCP with alpha = 0.80",
    ),
    "bpf_ktcp_hs_a95": Sender(
        "kyushu_highspeed.c",
        "kyushu+highspeed",
        {"KTCP_ALPHA_NUM": "19", "KTCP_ALPHA_DEN": "20", "KTCP_HS_NAME": "bpf_ktcp_hs_a95"},
        "Kyushu-TCP over HighSpeed TCP with alpha = 0.95",
    ),
}
ALL: dict[str, Sender] = SENDERS | VARIANTS

EVENTS = {0: "init", 1: "ack", 2: "round", 3: "loss", 4: "state", 5: "undo", 6: "cwnd_event"}
SIG_LINE = re.compile(r"hscc_sig (\d+) (\d+)((?: -?\d+)*)")


def sh(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"command failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr}{r.stdout}")
    return r


def signal_fields(name: str) -> list[tuple[str, int]]:
    """[(column, fractional bits)] of the sender's signal lines, from its ``hscc-signals:`` line."""
    text = (CC_DIR / ALL[name].source).read_text()
    m = re.search(r"hscc-signals:\s*(.+)", text)
    if not m:
        raise RuntimeError(f"{ALL[name].source} declares no hscc-signals line")
    out = []
    for tok in m.group(1).split():
        col, _, q = tok.partition(":Q")
        out.append((col, int(q) if q else 0))
    return out


def ensure_toolchain() -> dict[str, str]:
    """clang, bpftool and the libbpf headers, installed with apt when missing; their versions."""
    missing = [
        t for t in ("clang", "bpftool", "llvm-strip") if shutil.which(t) is None and not Path(f"/usr/sbin/{t}").exists()
    ]
    if not Path("/usr/include/bpf/bpf_helpers.h").exists():
        missing.append("libbpf-dev")
    if missing:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-q"], check=True, env=env, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-q", *APT_PACKAGES], check=True, env=env, capture_output=True)
    return {
        "clang": sh(["clang", "--version"]).stdout.splitlines()[0],
        "bpftool": sh([bpftool(), "version"]).stdout.splitlines()[0],
    }


def bpftool() -> str:
    return shutil.which("bpftool") or "/usr/sbin/bpftool"


def kernel_hz() -> int:
    """CONFIG_HZ of the running kernel (jiffies-based rules need it at build time)."""
    for p in (Path("/proc/config.gz"), Path(f"/boot/config-{platform.release()}")):
        if p.exists():
            text = gzip.decompress(p.read_bytes()).decode() if p.suffix == ".gz" else p.read_text()
            m = re.search(r"^CONFIG_HZ=(\d+)$", text, re.M)
            if m:
                return int(m.group(1))
    raise RuntimeError("cannot find CONFIG_HZ (/proc/config.gz or /boot/config-*)")


def vmlinux_h() -> Path:
    """vmlinux.h of the running kernel (regenerated when the kernel changes)."""
    BUILD.mkdir(parents=True, exist_ok=True)
    out, stamp = BUILD / "vmlinux.h", BUILD / "vmlinux.release"
    rel = platform.release() + " " + platform.version()
    if not out.exists() or not stamp.exists() or stamp.read_text() != rel:
        r = sh([bpftool(), "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "c"])
        out.write_text(r.stdout)
        stamp.write_text(rel)
    return out


def sources_sha256(name: str) -> str:
    """Hash of what the sender is built from: its C file and every header of cc/."""
    h = hashlib.sha256()
    for f in [CC_DIR / ALL[name].source, *sorted(CC_DIR.glob("*.h"))]:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def build(name: str) -> dict:
    """Compile one sender; returns what meta.json records about it (paths, hashes, command)."""
    s = ALL[name]
    inc = vmlinux_h().parent
    defines = {"HSCC_HZ": str(kernel_hz()), **s.defines}
    src = CC_DIR / s.source
    obj = BUILD / f"{name}.o"
    cmd = ["clang", "-target", "bpf", "-O2", "-g", "-Wall", "-Werror", f"-I{inc}", f"-I{CC_DIR}"]
    cmd += [f"-D{k}={v}" for k, v in defines.items()]
    cmd += ["-c", str(src), "-o", str(obj)]
    sh(cmd)
    return {
        "name": name,
        "algo": s.algo,
        "source": f"samples/testbed/cc/{s.source}",
        "defines": defines,
        "sources_sha256": sources_sha256(name),
        "object_sha256": hashlib.sha256(obj.read_bytes()).hexdigest(),
        "build": "clang -target bpf -O2 -g -Wall -Werror -I<vmlinux.h dir> -Isamples/testbed/cc "
        + " ".join(f"-D{k}={v}" for k, v in defines.items())
        + f" -c samples/testbed/cc/{s.source}",
        "register": "bpftool struct_ops register <object>",
        "signals": [c for c, _ in signal_fields(name)],
        "object": str(obj),
        **({"zoo": True, "kernel_source": s.kernel_source} if s.kernel_source else {}),
    }


def available() -> list[str]:
    return AVAILABLE.read_text().split()


def register(name: str) -> dict:
    """Build and register ``name``; a registration left by an earlier run is replaced."""
    info = build(name)
    if name in available():
        unregister(name)
    sh([bpftool(), "struct_ops", "register", info["object"]])
    if name not in available():
        raise RuntimeError(f"{name} registered but not in {AVAILABLE}")
    return info


def unregister(name: str) -> None:
    sh([bpftool(), "struct_ops", "unregister", "name", name], check=False)


def signal_rows(fields: dict[str, str] | str) -> tuple[int, int, list[int]] | None:
    """(sport, event code, values) of one ``hscc_sig`` trace line, or None."""
    m = SIG_LINE.search(fields if isinstance(fields, str) else fields.get("msg", ""))
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), [int(v) for v in m.group(3).split()]


def signals_frame(name: str, rows: list[tuple[int, int, int, list[int]]], offset_ns: int):
    """truth_signals rows of one flow: ``rows`` = [(mono ns, sport, event, values)]."""
    import polars as pl

    fields = signal_fields(name)
    cols: dict[str, list] = {"ts_ns": [], "sport": [], "event": []}
    for c, _ in fields:
        cols[c] = []
    for t, sport, ev, vals in rows:
        if ev == 0 or len(vals) != len(fields):  # EV_INIT lines carry no signal columns
            continue
        cols["ts_ns"].append(t + offset_ns)
        cols["sport"].append(sport)
        cols["event"].append(EVENTS.get(ev, str(ev)))
        for (c, q), v in zip(fields, vals):
            cols[c].append(v / (1 << q) if q else v)
    schema = {"ts_ns": pl.Int64, "sport": pl.UInt16, "event": pl.String}
    schema |= {c: (pl.Float64 if q else pl.Int64) for c, q in fields}
    return pl.DataFrame(cols, schema=schema)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the senders and their signals")
    ap.add_argument("--check", action="store_true", help="build, register and unregister every sender (root)")
    a = ap.parse_args()
    if a.check:
        ensure_toolchain()
        for name in ALL:
            info = register(name)
            unregister(name)
            print(f"{name}: ok ({info['source']}, object {info['object_sha256'][:12]})")
        return
    for name, s in ALL.items():
        algo = s.algo or f"(zoo: {s.kernel_source})"
        print(f"{name:18} {algo:32} cc/{s.source:22} {' '.join(c for c, _ in signal_fields(name))}")


if __name__ == "__main__":
    main()
