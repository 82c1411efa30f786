"""`hscc-trace annotate`: the capture written again as pcapng with packet comments, read back by
tshark (docs/annotate.md).

What is checked, on bundled samples (a lossy Reno flow, a Reno and a CUBIC flow sharing a link,
a receiver-side capture, a gzip'ed capture) and on pcap / pcapng files made here (µs and ns,
both byte orders, several sections and interfaces, existing comments, a Simple Packet Block):

* every original field is equal: tshark's per-frame fields of the input and of the output —
  time, lengths, link type, an MD5 of the frame's bytes (``frame.md5_hash``), IP and TCP
  fields — and, read by the project's own reader, every record's bytes, timestamp (ns),
  captured and original length and link type;
* the comments are where they should be: tshark's ``frame.comment`` on exactly the frames the
  notes name, in order; the verdict at the first packet of each flow (tshark's first frame of
  ``tcp.stream`` N); each episode's end comment on the receiver's first ACK at or above the
  episode's recovery point, its start comment on a retransmission of bytes already sent (at
  the sender), both checked against tshark's own relative sequence and ACK numbers;
* bad input: one line on stderr and exit code 2; a failed write leaves the old file.

tshark (Debian's ``tshark``; .ci/run installs it) is required: without it these tests skip,
and fail under CI.
"""

from __future__ import annotations

import gzip
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, cannot_run, external

from hscc_trace.analysis import annotate as A
from hscc_trace.capture.reader import ReadInfo, iter_batches
from hscc_trace.capture.writer import write_commented
from hscc_trace.errors import InputError

#: one worker runs them all under pytest-xdist: the annotated samples (module fixtures) are made once
pytestmark = pytest.mark.xdist_group("annotate")

SAMPLES = REPO / "samples"
RENO_LOSS = SAMPLES / "reno-loss" / "capture.pcap"
RENO_VS_CUBIC = SAMPLES / "reno-vs-cubic" / "capture.pcap"
RECEIVER = SAMPLES / "reno-rtt60-receiver" / "capture.pcap"
GZIPPED = SAMPLES / "cubic-loss-1pct" / "capture.pcap.gz"

#: per-frame fields compared between input and output (tshark -T fields)
FIELDS = (
    "frame.number",
    "frame.time_epoch",
    "frame.len",
    "frame.cap_len",
    "frame.encap_type",
    "frame.md5_hash",
    "frame.protocols",
    "ip.src",
    "ip.dst",
    "ip.id",
    "ip.ttl",
    "ipv6.src",
    "ipv6.dst",
    "tcp.stream",
    "tcp.srcport",
    "tcp.dstport",
    "tcp.seq_raw",
    "tcp.ack_raw",
    "tcp.len",
    "tcp.flags",
    "tcp.window_size_value",
    "tcp.options",
    "tcp.checksum",
)


def tshark_bin() -> str:
    path = shutil.which("tshark")
    if path is None:
        cannot_run("tshark not installed (apt-get install tshark)")
    return str(path)


def tshark(path: Path, *args: str) -> str:
    r = subprocess.run(
        [tshark_bin(), "-n", "-r", str(path), "-o", "frame.generate_md5_hash:TRUE", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    # (a capture cut short: tshark reads every whole packet, says so and exits 2)
    assert r.returncode == 0 or "cut short in the middle of a packet" in r.stderr, r.stderr
    return r.stdout


#: what tshark reads besides FIELDS: relative sequence and ACK numbers, and the comments
EXTRA = ("tcp.seq", "tcp.ack", "frame.comment")
#: what a pcapng input has and a pcap input does not: compared between two pcapng files
INTERFACE = ("frame.interface_id", "frame.section_number", "frame.packet_flags", "frame.interface_name")
_SEP = "\x1f"  # (joins the values of a field that occurs more than once: no comment holds it)
_TABLES: dict[tuple[str, float], list[dict[str, str]]] = {}


def table(path: Path) -> list[dict[str, str]]:
    """Every frame's FIELDS and EXTRA as tshark reads them: one tshark run per file."""
    key = (str(path), path.stat().st_mtime)
    if key not in _TABLES:
        names = (*FIELDS, *EXTRA, *INTERFACE)
        out = tshark(
            path,
            "-T",
            "fields",
            "-E",
            "separator=\t",
            "-E",
            "occurrence=a",
            "-E",
            f"aggregator={_SEP}",
            *[x for n in names for x in ("-e", n)],
        )
        _TABLES[key] = [dict(zip(names, line.split("\t"))) for line in out.splitlines()]
    return _TABLES[key]


def comments(path: Path) -> dict[int, list[str]]:
    """frame number -> its comments (tshark's frame.comment, in block order)."""
    return {int(r["frame.number"]): r["frame.comment"].split(_SEP) for r in table(path) if r["frame.comment"]}


def records(path: Path) -> list[tuple[bytes, int, int, int, int]]:
    """(bytes, ts ns, captured length, original length, link type) of every record (our reader)."""
    info = ReadInfo()
    out = []
    for b in iter_batches(str(path), info):
        for o, c, w, t, lt in zip(
            b.off.tolist(), b.cap.tolist(), b.wire.tolist(), b.ts_ns.tolist(), b.linktype.tolist()
        ):
            out.append((bytes(b.buf[o : o + c]), t, c, w, lt))
    return out


def assert_same_packets(src: Path, out: Path, names: tuple[str, ...] = FIELDS) -> None:
    a = [[r[n] for n in names] for r in table(src)]
    b = [[r[n] for n in names] for r in table(out)]
    assert len(a) == len(b) and len(a) > 0
    diff = [(x, y) for x, y in zip(a, b) if x != y]
    assert not diff, diff[:3]
    assert records(src) == records(out)


def expected_comments(notes: list[A.Note], prefix: str = A.PREFIX) -> dict[int, list[str]]:
    return A.comments_by_frame(notes, prefix)


def annotated(tmp_path_factory, src: Path, name: str, algos: list[str], **kw) -> tuple[Path, A.Annotated]:
    out = tmp_path_factory.mktemp("annotate") / name
    return out, A.annotate(src, out, algos, **kw)


@pytest.fixture(scope="module")
def reno_loss(tmp_path_factory):
    return annotated(tmp_path_factory, RENO_LOSS, "reno-loss.pcapng", ["reno", "cubic"])


@pytest.fixture(scope="module")
def two_flows(tmp_path_factory):
    return annotated(tmp_path_factory, RENO_VS_CUBIC, "reno-vs-cubic.pcapng", ["reno", "cubic"])


@pytest.fixture(scope="module")
def receiver(tmp_path_factory):
    return annotated(tmp_path_factory, RECEIVER, "receiver.pcapng", ["reno"])


@pytest.fixture(scope="module")
def gzipped(tmp_path_factory):
    return annotated(tmp_path_factory, GZIPPED, "cubic-loss-1pct.pcapng.gz", ["cubic"])


def check_placement(out: Path, res: A.Annotated, *, sender_side: bool) -> None:
    """Every comment where the notes say, and the notes where the capture says they belong."""
    got = comments(out)
    assert got == expected_comments(res.notes)
    rows = [r for r in table(out) if r["tcp.stream"]]
    frames = [
        (
            int(r["frame.number"]),
            int(r["tcp.stream"]),
            int(r["tcp.seq"]),
            int(r["tcp.ack"]),
            int(r["tcp.len"]),
            r["ip.src"] or r["ipv6.src"],
        )
        for r in rows
    ]
    first: dict[int, int] = {}
    for f, st, *_ in frames:
        first.setdefault(st, f)
    at = {f: k for k, (f, *_) in enumerate(frames)}
    verdicts = {n.flow_id: n for n in res.notes if n.kind == A.VERDICT}
    assert set(verdicts) == set(res.verdicts) and verdicts
    for fid, n in verdicts.items():
        assert n.frame == first[fid], (fid, n.frame, first[fid])  # flow id = tcp.stream without --filter
        label = res.verdicts[fid]  # cubic, behaves as reno, ambiguous: reno, westwood, unknown, not enough data
        named = label not in ("unknown", "not enough data") and not label.startswith(("ambiguous", "behaves as"))
        assert got[n.frame][0] == A.PREFIX + n.text
        assert n.text.startswith(f"flow {fid} " + (f"identified: {label} (" if named else f"{label} ("))
    # episodes: the recovery point in the comment against tshark's relative sequence and ACK numbers
    starts = {(n.flow_id, _episode(n)): n for n in res.notes if n.kind == A.EPISODE_START}
    ends = {(n.flow_id, _episode(n)): n for n in res.notes if n.kind == A.EPISODE_END}
    assert starts and set(ends) <= set(starts)
    for (fid, k), n in [*starts.items(), *ends.items()]:
        f, stream, seq, ack, plen, src = frames[at[n.frame]]
        assert stream == fid
        rp = int(starts[(fid, k)].text.split("recovery point seq ")[1].split(",")[0])
        earlier = [x for x in frames[: at[n.frame]] if x[1] == stream and x[5] == src]
        if n.kind == A.EPISODE_END:
            # the receiver's first cumulative ACK at or above the recovery point ends it
            assert plen == 0 and ack >= rp, (n, ack, rp)
            acks = [x[3] for x in earlier if x[4] == 0]
            assert acks and acks[-1] < rp, (n, acks[-3:], rp)
        elif plen > 0:
            # a retransmission began it: bytes already sent, below the recovery point
            sent = max(x[2] + x[4] for x in earlier)
            assert seq < sent and seq < rp, (n, seq, sent, rp)
        elif sender_side:
            # an ACK began it: at the sender only the ACK that ended the episode before, when
            # data retransmitted in that one is still outstanding (Linux enters recovery again)
            assert (fid, k - 1) in ends and ends[(fid, k - 1)].frame == n.frame, n
        else:
            # away from the sender: an ACK from the receiver, below the recovery point
            assert ack < rp, (n, ack, rp)


def _episode(n: A.Note) -> int:
    return int(n.text.split(" episode ")[1].split()[0])


def test_every_field_of_every_packet_is_unchanged_reno_loss(reno_loss):
    out, res = reno_loss
    assert res.written.format == "pcap-ns" and res.written.tsresol == 9
    assert res.written.records == 7886 and res.errors == [] and res.warnings == []
    assert_same_packets(RENO_LOSS, out)


def test_comments_on_the_right_frames_reno_loss(reno_loss):
    out, res = reno_loss
    check_placement(out, res, sender_side=True)
    # the verdict as docs/annotate.md shows it: behaves as reno with 0.0 % (the Linux Reno replay
    # reproduces this sender's window exactly; senders outside the library set it too), CUBIC the
    # runner-up
    assert res.verdicts == {0: "behaves as reno"}
    got = comments(out)
    assert got[1][0].startswith("hscc-trace: flow 0 behaves as reno (error 0.0 % over ")
    assert ", runner-up cubic " in got[1][0]
    assert got[1][1] == (
        "hscc-trace: flow 0: data 10.77.0.1:40001 → 10.77.0.2:5001, MSS 1448 B, captured at the sender, "
        "24 congestion events"
    )
    # 24 episodes, a start and an end each: the frames `frame.comment contains "episode"` selects
    eps = [n for n in res.notes if n.kind in (A.EPISODE_START, A.EPISODE_END)]
    assert len(eps) == 48
    listed = {f for f, texts in got.items() if any("episode" in t for t in texts)}
    assert listed == {n.frame for n in eps}
    # reno's replay follows the sender: it never departs
    assert not [n for n in res.notes if n.kind in (A.DEPARTS, A.REJOINS)]


def test_the_display_filter_selects_the_episodes(gzipped):
    out, res = gzipped  # (tshark reads the gzip'ed pcapng as it is)
    listed = tshark(out, "-Y", 'frame.comment contains "episode"', "-T", "fields", "-e", "frame.number").split()
    assert sorted(map(int, listed)) == sorted({n.frame for n in res.notes if "episode" in n.kind}) != []


def test_two_flows_each_verdict_at_its_first_packet(two_flows):
    out, res = two_flows
    assert res.verdicts == {0: "behaves as reno", 1: "cubic"}
    # (tshark's fields of 20 341 input frames are not compared here: the other samples do that)
    assert records(RENO_VS_CUBIC) == records(out)
    check_placement(out, res, sender_side=True)
    got = comments(out)
    # tshark: stream 0 begins at frame 1, stream 1 at frame 4 (each with its SYN)
    assert got[1][0].startswith("hscc-trace: flow 0 behaves as reno (")
    assert got[4][0].startswith("hscc-trace: flow 1 identified: cubic (")


def test_receiver_side_capture(receiver):
    out, res = receiver
    assert res.verdicts == {0: "behaves as reno"}
    assert_same_packets(RECEIVER, out)
    check_placement(out, res, sender_side=False)
    assert "captured at the receiver" in comments(out)[1][1]


def test_gzip_in_gzip_out(gzipped, tmp_path):
    out, res = gzipped
    assert res.written.format == "pcap-ns.gz" and out.read_bytes()[:2] == b"\x1f\x8b"
    plain = tmp_path / "x.pcapng"
    plain.write_bytes(gzip.decompress(out.read_bytes()))
    assert_same_packets(GZIPPED, plain)
    check_placement(plain, res, sender_side=True)


def test_departures_of_a_replay_that_does_not_follow(tmp_path):
    """Reno's replay on a CUBIC sender: every "departs" comment sits on the ACK that closes a
    round where |replayed − peak flight| exceeds max(15 % of the flight, 0.5 packets) after K
    rounds in a row within it; each "rejoins" on the first of the next K rounds within it (K =
    AGREE_ROUNDS, and 3 as --agree-rounds gives it)."""
    from hscc_trace import api
    from hscc_trace.replay.metrics import round_table

    # the rounds from the fit's own table, judged here by hand
    ev = api.events(GZIPPED, 0)
    rep = api.replay(ev, ["reno"])["reno"]
    rt = round_table(ev.acks, ev.rounds, rep, ev.mss).join(ev.rounds.select("round", "end_ns"), on="round")
    ends = dict(zip(rt["round"].to_list(), rt["end_ns"].to_list()))
    ts, fr = rep["ts_ns"].to_list(), rep["frame"].to_list()
    for k in (A.AGREE_ROUNDS, 3):
        out = tmp_path / f"x{k}.pcapng"
        res = A.annotate(GZIPPED, out, ["reno"], agree_rounds=k)
        moves = [n for n in res.notes if n.kind in (A.DEPARTS, A.REJOINS)]
        assert len(moves) >= 2 and moves[0].kind == A.DEPARTS
        agree, want = False, []
        run: list[int] = []
        for r, g, a in zip(rt["round"], rt["replayed_pkts"], rt["actual_pkts"]):
            if abs(g - a) <= max(0.15 * a, 0.5):
                run.append(r)
                if not agree and len(run) == k:
                    agree = True
                    if want:
                        want.append((A.REJOINS, run[0]))
            else:
                if agree:
                    want.append((A.DEPARTS, r))
                agree, run = False, []
        assert [(n.kind, int(n.text.split(" round ")[1].split(":")[0])) for n in moves] == want
        # each on the ACK that closed its round: the last ACK at or before the round's end
        for n in moves:
            end = ends[int(n.text.split(" round ")[1].split(":")[0])]
            assert n.frame == max(f for f, t in zip(fr, ts) if t <= end)
        assert _epb_comments(out.read_bytes()) == expected_comments(res.notes)


def test_the_filter_analyzes_some_flows_and_writes_every_packet(tmp_path):
    # only port 5002 analyzed: its flow is flow 0 of the filtered capture; every packet is still
    # written, and the verdict is on that flow's SYN, frame 4 of the file
    out = tmp_path / "f.pcapng"
    res = A.annotate(RENO_VS_CUBIC, out, ["cubic"], bpf="tcp port 5002", prefix="HT ")
    assert res.written.records == 20341 and res.verdicts == {0: "cubic"}
    got = _epb_comments(out.read_bytes())
    assert got == expected_comments(res.notes, "HT ")
    assert got[4][0].startswith("HT flow 0 identified: cubic") and "10.77.0.1:40002" in got[4][1]
    assert 1 not in got


def _epb_comments(blob: bytes) -> dict[int, list[str]]:
    """frame -> comments, read from the file's packet blocks here (not by the writer's code)."""
    out: dict[int, list[str]] = {}
    frame = 0
    for btype, blk in _blocks(blob):
        if btype not in (2, 3, 6):
            continue
        frame += 1
        if btype == 3:
            continue
        o = "<" if struct.unpack_from("<I", blk, 4)[0] == len(blk) else ">"
        cap = struct.unpack_from(o + "I", blk, 20)[0]
        p = 28 + cap + ((-cap) & 3)
        while p + 4 <= len(blk) - 4:
            code, n = struct.unpack_from(o + "HH", blk, p)
            if code == 0:
                break
            if code == 1:
                out.setdefault(frame, []).append(blk[p + 4 : p + 4 + n].decode())
            p += 4 + n + ((-n) & 3)
    return out


def test_a_capture_cut_short_is_written_as_far_as_it_was_read(tmp_path):
    data = gzip.decompress(GZIPPED.read_bytes())
    src = tmp_path / "cut.pcap"
    src.write_bytes(data[: len(data) // 2 + 7])  # (ends inside a record)
    out = tmp_path / "cut.pcapng"
    res = A.annotate(src, out, ["cubic"])
    n = len(records(src))
    assert res.written.records == n and len(records(out)) == n
    assert [w.partial for w in res.warnings] == [True]  # the reader's one warning, not the writer's too
    assert f"file ends inside record {n + 1}" in res.warnings[0].message
    assert_same_packets(src, out)
    assert "cut short" not in subprocess.run([tshark_bin(), "-r", str(out)], capture_output=True, text=True).stderr


# --- the writer on files made here --------------------------------------------------------------


def _first_records(n: int) -> list[tuple[bytes, int, int, int, int]]:
    return records(RENO_LOSS)[:n]


def _pcap(recs, *, nsec: bool, be: bool) -> bytes:
    o = ">" if be else "<"
    magic = 0xA1B23C4D if nsec else 0xA1B2C3D4
    out = [struct.pack(o + "IHHiIII", magic, 2, 4, 0, 0, 96, 101)]
    for data, ts, c, w, _lt in recs:
        frac = ts % 10**9 if nsec else (ts % 10**9) // 1000
        out.append(struct.pack(o + "IIII", ts // 10**9, frac, c, w) + data)
    return b"".join(out)


def _opt(o: str, code: int, val: bytes) -> bytes:
    return struct.pack(o + "HH", code, len(val)) + val + b"\0" * ((-len(val)) & 3)


def _block(o: str, btype: int, body: bytes) -> bytes:
    n = 12 + len(body)
    return struct.pack(o + "II", btype, n) + body + struct.pack(o + "I", n)


def _epb(o: str, ifid: int, t: int, data: bytes, w: int, opts: bytes = b"") -> bytes:
    body = struct.pack(o + "IIIII", ifid, t >> 32, t & 0xFFFFFFFF, len(data), w) + data + b"\0" * ((-len(data)) & 3)
    return _block(o, 6, body + (opts + b"\0\0\0\0" if opts else b""))


def _idb(o: str, tsresol: int, name: bytes = b"") -> bytes:
    opts = _opt(o, 9, bytes([tsresol])) + (_opt(o, 2, name) if name else b"") + b"\0\0\0\0"
    return _block(o, 1, struct.pack(o + "HHI", 101, 0, 0) + opts)


def _shb(o: str, length: int, comment: bytes = b"") -> bytes:
    opts = (_opt(o, 1, comment) + b"\0\0\0\0") if comment else b""
    return _block(o, 0x0A0D0D0A, struct.pack(o + "IHHq", 0x1A2B3C4D, 1, 0, length) + opts)


def _pcapng(recs) -> bytes:
    """Two sections: little-endian with two interfaces (ns and µs), a name resolution block, an
    existing comment and flags on record 3, a Simple Packet Block as record 14 (an ACK, whole:
    an SPB's captured length is its original length) and an interface statistics block, its
    section length given; then a big-endian section."""
    le: list[bytes] = [_idb("<", 9), _idb("<", 6, b"second"), _block("<", 4, b"\0\0\0\0")]
    for i, (data, ts, _c, w, _lt) in enumerate(recs[:15], 1):
        if i == 14:
            le.append(_block("<", 3, struct.pack("<I", w) + data + b"\0" * ((-len(data)) & 3)))
            continue
        ifid = i % 2
        t = ts if ifid == 0 else ts // 1000
        opts = _opt("<", 1, b"an older comment") + _opt("<", 2, struct.pack("<I", 1)) if i == 3 else b""
        le.append(_epb("<", ifid, t, data, w, opts))
    le.append(_block("<", 5, struct.pack("<III", 0, 0, 0)))
    body = b"".join(le)
    first = _shb("<", len(body), b"made by the test")
    be = [_idb(">", 9)] + [_epb(">", 0, ts, data, w) for data, ts, _c, w, _lt in recs[15:30]]
    return first + body + _shb(">", -1) + b"".join(be)


def _blocks(blob: bytes) -> list[tuple[int, bytes]]:
    out, p, o = [], 0, "<"
    while p < len(blob):
        if blob[p : p + 4] == b"\x0a\x0d\x0d\x0a":
            o = "<" if blob[p + 8 : p + 12] == b"\x4d\x3c\x2b\x1a" else ">"
        t, n = struct.unpack_from(o + "II", blob, p)
        out.append((t, blob[p : p + n]))
        p += n
    return out


@pytest.mark.parametrize("nsec,be", [(False, False), (True, True)])
def test_pcap_microseconds_and_big_endian_nanoseconds(tmp_path, nsec, be):
    src = tmp_path / "in.pcap"
    src.write_bytes(_pcap(_first_records(40), nsec=nsec, be=be))
    out = tmp_path / "out.pcapng"
    with open(out, "wb") as f:
        w = write_commented(str(src), f, {1: ["one"], 7: ["seven", "and 7"], 40: ["last"], 41: ["beyond"]})
    assert (w.records, w.comments, w.commented, w.tsresol) == (40, 4, 3, 9 if nsec else 6)
    assert w.unplaced == {41: 1}
    assert_same_packets(src, out)
    assert comments(out) == {1: ["one"], 7: ["seven", "and 7"], 40: ["last"]}
    # the one interface says the resolution: if_tsresol (option 9) = 6 (µs) or 9 (ns)
    blob = out.read_bytes()
    idb = blob[struct.unpack_from("<I", blob, 4)[0] :]
    assert struct.unpack_from("<IIHHI", idb) == (1, 32, 101, 0, 96)  # 8 + 8 + if_tsresol 8 + end 4 + 4
    assert idb[16:21] == b"\x09\x00\x01\x00" + bytes([9 if nsec else 6])


def test_pcapng_blocks_kept_comments_added(tmp_path):
    src = tmp_path / "in.pcapng"
    src.write_bytes(_pcapng(_first_records(30)))
    out = tmp_path / "out.pcapng"
    with open(out, "wb") as f:
        w = write_commented(
            str(src), f, {1: ["new 1"], 3: ["new 3a", "new 3b"], 14: ["on an SPB"], 16: ["be"], 30: ["end"]}
        )
    assert w.format == "pcapng" and w.records == 30
    assert (w.comments, w.commented, w.kept_comments) == (5, 4, 1)
    assert w.dropped == {"comments meant for Simple Packet Blocks, which have no options": 1}
    assert_same_packets(src, out, FIELDS + INTERFACE)
    assert comments(out) == {1: ["new 1"], 3: ["an older comment", "new 3a", "new 3b"], 16: ["be"], 30: ["end"]}
    # block by block: the same blocks, byte for byte, but the commented ones and the first SHB's
    # section length (now -1: the section grew)
    a, b = _blocks(src.read_bytes()), _blocks(out.read_bytes())
    assert [t for t, _ in a] == [t for t, _ in b]
    changed = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    assert changed == [0, 4, 6, 22, 36]  # SHB, records 1, 3, 16 (big-endian section) and 30
    assert struct.unpack_from("<q", b[0][1], 16)[0] == -1


def test_annotating_an_annotated_file_keeps_its_comments(tmp_path, gzipped):
    first, res = gzipped
    out = tmp_path / "again.pcapng"
    res2 = A.annotate(first, out, ["cubic"], prefix="again: ")
    assert res2.written.format == "pcapng.gz" and res2.written.kept_comments == res.written.comments
    assert_same_packets(first, out, FIELDS + INTERFACE)
    old, new = comments(first), expected_comments(res2.notes, "again: ")
    got = comments(out)
    assert set(got) == set(old) | set(new)
    for f, texts in got.items():
        assert texts == old.get(f, []) + new.get(f, [])


@pytest.mark.parametrize(
    "name",
    [
        "pcapplusplus__many_interfaces-1.pcapng",  # 11 interfaces of 3 link types
        "zeek__irc-dcc-send.pcapng",
        "pcapplusplus__nanosecs_big_endian.pcap",
        "tcptrace__dlt_null.pcap",
        "pcapplusplus__sll.pcap",
        "ODD__pcap-parser__modified-format.pcap",  # Kuznetzov records: their extra fields dropped
    ],
)
def test_external_captures_of_other_tools(tmp_path, name):
    src = external(name) / name
    out = tmp_path / "out.pcapng"
    with open(out, "wb") as f:
        w = write_commented(str(src), f, {1: ["first"], 3: ["third"]})
    assert_same_packets(src, out, FIELDS + INTERFACE if name.endswith(".pcapng") else FIELDS)
    assert comments(out) == {k: v for k, v in {1: ["first"], 3: ["third"]}.items() if k <= w.records}
    if "modified" in name:
        assert list(w.dropped.values()) == [w.records]


# --- the command: bad input, standard input and output, atomic files ---------------------------


def main(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    """``hscc-trace annotate ARGS`` in this process: (exit code, stderr)."""
    from hscc_trace import cli

    monkeypatch.setattr(sys, "argv", ["hscc-trace", "annotate", *args])
    with pytest.raises(SystemExit) as e:
        cli.main()
    return int(e.value.code or 0), capsys.readouterr().err


def assert_error(code_err: tuple[int, str], *needles: str) -> None:
    code, err = code_err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hscc-trace: error: "), err
    for n in needles:
        assert n in lines[0], lines[0]


def test_bad_input_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    out = tmp_path / "o.pcapng"

    def run(*args: str) -> tuple[int, str]:
        return main(monkeypatch, capsys, *args)

    assert_error(run(str(tmp_path / "nope.pcap"), "-o", str(out)), "no such file")
    assert_error(run(str(tmp_path), "-o", str(out)), "is a directory")
    (tmp_path / "t.pcap").write_text("not a capture\n" * 4)
    assert_error(run(str(tmp_path / "t.pcap"), "-o", str(out)), "not a pcap/pcapng capture")
    (tmp_path / "e.pcap").write_bytes(b"")
    assert_error(run(str(tmp_path / "e.pcap"), "-o", str(out)), "empty file")
    assert_error(run(str(GZIPPED), "-o", str(out), "--tolerance", "0"), "tolerance must be above 0")
    assert_error(run(str(GZIPPED), "-o", str(out), "--algo", "nosuch"), "nosuch")
    assert_error(run(str(GZIPPED), "-o", str(out), "--flow", "3"), "no flow 3 (the capture has only flow 0)")
    assert_error(run(str(GZIPPED), "-o", str(out), "--algo", "cubic", "--param", "x"), "expected ALGO.NAME=VALUE")
    assert_error(run(str(GZIPPED)), "Missing option")
    assert_error(run(str(GZIPPED), "-o", str(tmp_path / "t.pcap" / "x.pcapng"), "--algo", "cubic"), "cannot write")
    assert not out.exists()


def test_stdin_in_stdout_out():
    """A gzip'ed capture on standard input, the pcapng on standard output (`| wireshark -k -i -`)."""
    r = subprocess.run(
        [sys.executable, "-m", "hscc_trace", "annotate", "-", "-o", "-", "--algo", "cubic"],
        input=GZIPPED.read_bytes(),
        capture_output=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    err = r.stderr.decode()
    assert err.startswith("standard output: 3353 packets, ") and "flow 0: cubic" in err, err
    assert "Traceback" not in err and "/tmp" not in err
    blob = r.stdout
    assert blob[:4] == b"\x0a\x0d\x0d\x0a"
    assert sum(1 for t, _ in _blocks(blob) if t == 6) == 3353
    assert _epb_comments(blob)[1][0].startswith("hscc-trace: flow 0 identified: cubic")


def test_a_failed_write_leaves_the_old_file(tmp_path, monkeypatch):
    out = tmp_path / "o.pcapng"
    out.write_bytes(b"old")

    def broken(path, f, comments, **kw):
        f.write(b"\x0a\x0d\x0d\x0a partial")
        raise InputError(f"{path}: pretend the disk is full")

    monkeypatch.setattr(A, "write_commented", broken)
    with pytest.raises(InputError, match="pretend"):
        A.annotate(GZIPPED, out, ["cubic"])
    assert out.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["o.pcapng"]


@pytest.mark.parametrize("exc,code", [(InputError("bad flow"), 2), (ZeroDivisionError("bug"), 70)])
def test_a_flow_that_cannot_be_analyzed(tmp_path, monkeypatch, capsys, exc, code):
    """The file is still written, with a "not analyzed" comment at the flow's first packet; the
    error is one line, and the exit code 2 (bad input) or 70 (a bug)."""
    from hscc_trace.analysis import pipeline

    def fails(*a, **kw):
        raise exc

    monkeypatch.setattr(pipeline, "analyze_flow", fails)
    out = tmp_path / "o.pcapng"
    got, err = main(monkeypatch, capsys, str(GZIPPED), "-o", str(out), "--algo", "cubic", "-q")
    assert got == code and "Traceback" not in err
    assert [ln for ln in err.splitlines() if ln.startswith("hscc-trace: error: ")] == [
        f"hscc-trace: error: {GZIPPED}: flow 0: "
        + (
            "bad flow"
            if code == 2
            else "internal error (ZeroDivisionError: bug); rerun with HSCC_TRACE_DEBUG=1 for a traceback"
        )
    ]
    assert _epb_comments(out.read_bytes())[1][0].startswith("hscc-trace: flow 0 not analyzed (")
    assert len(records(out)) == 3353
