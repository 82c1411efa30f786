#!/bin/sh
# The samples of the BPF congestion controls (samples/testbed/cc/, registered by run.py for the run and
# unregistered after it). Each algorithm runs under at least two paths, one where its distinctive
# behaviour shows. Short runs, gzip-compressed captures; the sender closes only when all its data is
# acknowledged (--wait-acked: tcp_probe, which stops at shutdown, then covers the whole transfer); a run
# whose emulator timing misses the test bounds (a loaded host) is repeated (--retry-late). Run as root from
# the repository root:
#     sudo sh samples/testbed/make_bpf.sh [python] [name-filter]
# (called by make_all.sh; ~6 minutes). With a name filter only the matching samples are made.
set -eu
PY=${1:-.venv/bin/python}
ONLY=${2:-}
run() {
  case "$1" in *"$ONLY"*) ;; *) return 0 ;; esac
  $PY samples/testbed/run.py --name "$@" --gzip --wait-acked --retry-late 4 > /dev/null
  echo "$1 done"
}
# Vegas: deep buffer (3 BDP), no random loss: Vegas leaves slow start on diff > γ and holds α..β packets queued
run vegas-deepbuf --cc bpf_vegas --rate 10mbit --delay 20ms --buffer-pkts 100 --loss 0 --duration 5
# Vegas under 0.5 % random loss: Reno's recovery, Vegas' per-round steps in between
run vegas-loss --cc bpf_vegas --rate 10mbit --delay 20ms --buffer-pkts 100 --loss 0.005 --duration 5 --seed 11
# Westwood+: 1 % random loss, buffer 3 BDP: after each recovery cwnd = ssthresh = B·RTTmin, not cwnd/2
run westwood-loss --cc bpf_westwood --rate 10mbit --delay 20ms --buffer-pkts 100 --loss 0.01 --duration 5 --seed 12
# Westwood+: 10 Mbit/s x 20 ms (BDP 17), 1-BDP buffer: overflow losses every ~0.4 s, B·RTTmin ≈ BDP clears the
# queue after each
run westwood-bdp --cc bpf_westwood --rate 10mbit --delay 10ms --buffer-pkts 17 --loss 0 --duration 5
# HighSpeed: 20 Mbit/s x 100 ms (BDP 167), buffer 0.5 BDP: windows 150-250, a(w) = 3-4, b(w) = 0.38-0.41
run highspeed-bdp --cc bpf_highspeed --rate 20mbit --delay 50ms --buffer-pkts 84 --loss 0 --duration 6
# HighSpeed: 0.1 % random loss at 60 ms, buffer 2 BDP: losses at windows above Low_Window
run highspeed-loss --cc bpf_highspeed --rate 20mbit --delay 30ms --buffer-pkts 200 --loss 0.001 --duration 5 --seed 13
# Compound TCP: 20 Mbit/s x 100 ms, 1-BDP buffer: dwnd grows by α·win^k per round and retreats at diff ≥ γ,
# holding the queue near γ without loss
run ctcp-bdp --cc bpf_ctcp --rate 20mbit --delay 50ms --buffer-pkts 167 --loss 0 --duration 5
# Compound TCP: the same path with a 20-packet buffer (0.12 BDP, below γ = 30): losses before diff reaches γ;
# γ auto-tuning lowers γ towards ¾ of the loss component's backlog
run ctcp-smallbuf --cc bpf_ctcp --rate 20mbit --delay 50ms --buffer-pkts 20 --loss 0 --duration 6
# TCP-Fusion: 40 Mbit/s x 20 ms (BDP 67, W_inc = B·1 ms/MSS ≈ 3.3), 1-BDP buffer: increase, steady and decrease
# phases as the queue grows, Westwood decrease at each overflow
run fusion-40m --cc bpf_fusion --rate 40mbit --delay 10ms --buffer-pkts 67 --loss 0 --duration 4
# TCP-Fusion: 0.2 % random loss at 20 Mbit/s x 40 ms, buffer 1.5 BDP
run fusion-loss --cc bpf_fusion --rate 20mbit --delay 20ms --buffer-pkts 100 --loss 0.002 --duration 5 --seed 14
# HRF-TCP and the HRF paper's rows: (1) 80 ms base RTT = 2 RTTref, 0.1 % random loss, BDP 133: CR (4 packets per
# RTT) while the link is vacant, CI once a queue forms; (2) 20 ms base RTT = RTTref/2, 1-BDP buffer
for row in hrf:bpf_hrf hrf-cr:bpf_hrf_cr hrf-ci:bpf_hrf_ci hrf-w-cr-reno:bpf_hrf_wcrreno hrf-w-cr-cr:bpf_hrf_wcrcr; do
  run "${row%%:*}-rtt80-loss" --cc "${row#*:}" --rate 20mbit --delay 40ms --buffer-pkts 100 --loss 0.001 --duration 5 \
      --seed 15
  run "${row%%:*}-rtt20" --cc "${row#*:}" --rate 20mbit --delay 10ms --buffer-pkts 33 --loss 0 --duration 4
done
# Kyushu-TCP over HighSpeed and over CUBIC: (1) 20 Mbit/s x 60 ms (BDP 100), buffer 1 BDP: overflow losses near
# 200 packets, the window held at w2 = 0.9·w1 for Tc²·w2 packets; (2) 0.05 % random loss, buffer 2 BDP
for row in ktcp-hs:bpf_ktcp_hs ktcp-cubic:bpf_ktcp_cubic; do
  run "${row%%:*}-bdp" --cc "${row#*:}" --rate 20mbit --delay 30ms --buffer-pkts 100 --loss 0 --duration 6
  run "${row%%:*}-loss" --cc "${row#*:}" --rate 20mbit --delay 30ms --buffer-pkts 200 --loss 0.0005 --duration 6 \
      --seed 16
done
# Kyushu-TCP over CUBIC under random loss where its hold shows: at 60 ms CUBIC climbs back from 0.7·w1 to w2 =
# 0.9·w1 too slowly between random losses (ktcp-cubic-loss: one hold, 0.35 s before the end); at 20 ms (BDP 35,
# 2-BDP buffer, 0.05 % loss) it gets there 0.6-1 s after a loss and the window is held at w2 until Tc²·w2 packets are sent
run ktcp-cubic-loss-rtt20 --cc bpf_ktcp_cubic --rate 20mbit --delay 10ms --buffer-pkts 70 --loss 0.0005 --duration 8 \
    --seed 18
