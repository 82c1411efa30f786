#!/bin/sh
# Regenerate every real sample under samples/ (not samples/synthetic/). Run as root from the
# repository root:  sudo sh samples/testbed/make_all.sh [python]
# Takes ~10 minutes (runs are sequential; each sets up and tears down its own namespaces).
set -eu
PY=${1:-.venv/bin/python}
RUN="$PY samples/testbed/run.py"
# Reno, drop-tail buffer = 1 BDP (10 Mbit/s x 40 ms = 50 kB = 33 x 1500 B); also the receiver-side capture
$RUN --name reno-bdp --cc reno --rate 10mbit --delay 20ms --buffer-pkts 33 --loss 0 --duration 10 \
     --capture both --receiver-out samples/reno-bdp-receiver
# Reno, 0.5 % random loss, buffer 3 BDP (so losses are random, not overflow)
$RUN --name reno-loss --cc reno --rate 10mbit --delay 20ms --buffer-pkts 100 --loss 0.005 --duration 10 --seed 1
# CUBIC, 100 ms base RTT, buffer 1 BDP (10 Mbit/s x 100 ms = 125 kB = 83 x 1500 B)
$RUN --name cubic-longrtt --cc cubic --rate 10mbit --delay 50ms --buffer-pkts 83 --loss 0 --duration 15
# CUBIC, 0.5 % random loss
$RUN --name cubic-loss --cc cubic --rate 10mbit --delay 20ms --buffer-pkts 100 --loss 0.005 --duration 10 --seed 2
# BBR (v1 in this kernel), buffer 1.5 BDP
$RUN --name bbr --cc bbr --rate 10mbit --delay 20ms --buffer-pkts 50 --loss 0 --duration 10
# Reno and CUBIC sharing the bottleneck (ports 40001 -> 5001 reno, 40002 -> 5002 cubic)
$RUN --name reno-vs-cubic --cc reno,cubic --rate 10mbit --delay 20ms --buffer-pkts 33 --loss 0 --duration 15
# Receive-window-limited: SO_RCVBUF 24 kB at the receiver, BDP 100 kB (20 Mbit/s x 40 ms).
# Reno (like app-limited): replaying Linux Reno must hold the unused window where the kernel held it
$RUN --name rwnd-limited --cc reno --rate 20mbit --delay 20ms --buffer-pkts 100 --loss 0 --duration 10 --rwnd 24576
# Application-limited, Reno: the writer paces 1448-byte writes at 2 Mbit/s over a 10 Mbit/s link
$RUN --name app-limited --cc reno --rate 10mbit --delay 20ms --buffer-pkts 50 --loss 0 --duration 10 --app-rate 2mbit
# --- more paths for identification (issue 17): rates 10-50 Mbit/s, base RTT 10-100 ms, buffers 0.3-4 BDP,
# random loss, competing flows, receiver-side captures. Short runs (2.5-8 s) keep samples/ small.
# BBR: 20 Mbit/s x 10 ms (BDP 17 pkts), buffer 1 BDP
$RUN --name bbr-rtt10 --cc bbr --rate 20mbit --delay 5ms --buffer-pkts 17 --loss 0 --duration 4
# BBR: 10 Mbit/s x 100 ms (BDP 83 pkts), shallow buffer 0.3 BDP
$RUN --name bbr-rtt100 --cc bbr --rate 10mbit --delay 50ms --buffer-pkts 25 --loss 0 --duration 8
# BBR: 1 % random loss, buffer 2 BDP; also captured at the receiver
$RUN --name bbr-loss --cc bbr --rate 10mbit --delay 20ms --buffer-pkts 67 --loss 0.01 --duration 6 --seed 3 \
     --capture both --receiver-out samples/bbr-loss-receiver
# BBR: 40 Mbit/s x 20 ms (BDP 67 pkts), buffer 1 BDP
$RUN --name bbr-40m --cc bbr --rate 40mbit --delay 10ms --buffer-pkts 67 --loss 0 --duration 2.5
# BBR (40001) vs CUBIC (40002), buffer 2 BDP
$RUN --name bbr-vs-cubic --cc bbr,cubic --rate 10mbit --delay 20ms --buffer-pkts 67 --loss 0 --duration 8
# Reno: 50 Mbit/s x 10 ms (BDP 42 pkts), buffer 0.5 BDP
$RUN --name reno-50m --cc reno --rate 50mbit --delay 5ms --buffer-pkts 21 --loss 0 --duration 2.5
# Reno: deep buffer 4 BDP (10 Mbit/s x 10 ms, BDP 8.3 pkts)
$RUN --name reno-4bdp --cc reno --rate 10mbit --delay 5ms --buffer-pkts 33 --loss 0 --duration 6
# Reno: 1 % random loss at 60 ms, buffer 2 BDP
$RUN --name reno-loss-rtt60 --cc reno --rate 20mbit --delay 30ms --buffer-pkts 200 --loss 0.01 --duration 6 --seed 4
# Reno: 60 ms, shallow buffer 0.3 BDP; also captured at the receiver
$RUN --name reno-rtt60 --cc reno --rate 10mbit --delay 30ms --buffer-pkts 15 --loss 0 --duration 6 \
     --capture both --receiver-out samples/reno-rtt60-receiver
# CUBIC: 20 Mbit/s x 10 ms, buffer 0.5 BDP; also captured at the receiver
$RUN --name cubic-rtt10 --cc cubic --rate 20mbit --delay 5ms --buffer-pkts 8 --loss 0 --duration 4 \
     --capture both --receiver-out samples/cubic-rtt10-receiver
# CUBIC: deep buffer 4 BDP (10 Mbit/s x 10 ms)
$RUN --name cubic-4bdp --cc cubic --rate 10mbit --delay 5ms --buffer-pkts 33 --loss 0 --duration 8
# CUBIC: 0.2 % random loss at 100 ms, buffer 2 BDP
$RUN --name cubic-loss-rtt100 --cc cubic --rate 10mbit --delay 50ms --buffer-pkts 167 --loss 0.002 --duration 8 --seed 5
# Reno (40001) vs CUBIC (40002) at 20 Mbit/s x 20 ms, buffer 1 BDP
$RUN --name reno-vs-cubic-rtt20 --cc reno,cubic --rate 20mbit --delay 10ms --buffer-pkts 33 --loss 0 --duration 5
# --- the rest of the issue-17 grid, chosen by what the set above lacked (CUBIC and BBR at 50 Mbit/s, Reno at
# 100 ms, CUBIC with a 0.3-BDP buffer and under 1 % loss, BBR with a 4-BDP buffer, receiver-side captures of a
# CUBIC and a BBR run on new paths, BBR vs Reno and CUBIC vs CUBIC). Short runs, gzip-compressed captures, and a
# run whose emulator timing misses the test bounds (a loaded host) is repeated (--retry-late).
# CUBIC: 50 Mbit/s x 10 ms (BDP 42 pkts), buffer 0.5 BDP (reno-50m's path); also captured at the receiver
$RUN --name cubic-50m --cc cubic --rate 50mbit --delay 5ms --buffer-pkts 21 --loss 0 --duration 3 \
     --capture both --receiver-out samples/cubic-50m-receiver --gzip --retry-late 4
# BBR: 50 Mbit/s x 50 ms (BDP 208 pkts), buffer 0.5 BDP
$RUN --name bbr-50m --cc bbr --rate 50mbit --delay 25ms --buffer-pkts 104 --loss 0 --duration 3 --gzip --retry-late 4
# BBR: deep buffer 4 BDP (20 Mbit/s x 20 ms, BDP 33 pkts); also captured at the receiver
$RUN --name bbr-4bdp --cc bbr --rate 20mbit --delay 10ms --buffer-pkts 133 --loss 0 --duration 5 \
     --capture both --receiver-out samples/bbr-4bdp-receiver --gzip --retry-late 4
# Reno: 100 ms base RTT, 0.2 % random loss, buffer 2 BDP (cubic-loss-rtt100's path)
$RUN --name reno-rtt100 --cc reno --rate 10mbit --delay 50ms --buffer-pkts 167 --loss 0.002 --duration 12 --seed 6 \
     --gzip --retry-late 4
# CUBIC: shallow buffer 0.3 BDP (10 Mbit/s x 40 ms, BDP 33 pkts)
$RUN --name cubic-smallbuf --cc cubic --rate 10mbit --delay 20ms --buffer-pkts 10 --loss 0 --duration 8 --gzip --retry-late 4
# CUBIC: 1 % random loss at 20 Mbit/s x 30 ms (BDP 50 pkts), buffer 2 BDP
$RUN --name cubic-loss-1pct --cc cubic --rate 20mbit --delay 15ms --buffer-pkts 100 --loss 0.01 --duration 5 --seed 7 \
     --gzip --retry-late 4
# BBR (40001) vs Reno (40002) at 20 Mbit/s x 20 ms, buffer 1 BDP
$RUN --name bbr-vs-reno --cc bbr,reno --rate 20mbit --delay 10ms --buffer-pkts 33 --loss 0 --duration 6 --gzip --retry-late 4
# CUBIC (40001) vs CUBIC (40002) on reno-vs-cubic's path (10 Mbit/s x 40 ms, buffer 1 BDP)
$RUN --name cubic-vs-cubic --cc cubic,cubic --rate 10mbit --delay 20ms --buffer-pkts 33 --loss 0 --duration 8 --gzip --retry-late 4
# --- the BPF congestion controls (samples/testbed/cc/): Vegas, Westwood+, HighSpeed, Compound TCP, TCP-Fusion,
# HRF-TCP and its rows, Kyushu-TCP over HighSpeed and CUBIC
sh samples/testbed/make_bpf.sh "$PY"
$PY samples/testbed/make_index.py
