#!/bin/sh
# Regenerate every real sample under samples/ (not samples/synthetic/). Run as root from the
# repository root:  sudo sh samples/testbed/make_all.sh [python]
# Takes ~3 minutes (runs are sequential; each sets up and tears down its own namespaces).
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
$PY samples/testbed/make_index.py
