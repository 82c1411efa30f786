#!/bin/sh
# The open-set zoo (samples/zoo/): the BPF ports of Linux congestion controls hscc-trace has no replay for
# (samples/testbed/cc/zoo/), each across three paths, plus the field conditions (samples/field/): Linux
# Reno, CUBIC and BBR under an ECN-marking CoDel queue, ACK aggregation, delay jitter and a policer.
# Every run takes the testbed lock (one testbed run at a time on a machine). Run as root from the
# repository root:
#     sudo sh samples/testbed/make_zoo.sh [python] [name-filter]
# (~25 minutes). With a name filter only the matching samples are made.
set -eu
PY=${1:-.venv/bin/python}
ONLY=${2:-}
run() {
  dir="$1"; shift
  case "$dir" in *"$ONLY"*) ;; *) return 0 ;; esac
  if [ -n "${KEEP:-}" ] && [ -f "samples/$dir/meta.json" ]; then return 0; fi  # KEEP=1: only the missing ones
  flock /tmp/hscc-testbed.lock $PY samples/testbed/run.py --name "$(basename "$dir")" --out "samples/$dir" "$@" \
      --gzip --wait-acked --retry-late 3 > /dev/null
  echo "$dir done"
}
# Paths (--delay is one-way): (1) 20 Mbit/s x 40 ms, 1-BDP buffer (67 packets), no random loss;
# (2) 10 Mbit/s x 100 ms, 0.5-BDP buffer (42), 0.5 % random loss; (3) 50 Mbit/s x 10 ms, 2-BDP buffer (83).
# DCTCP runs behind an ECN-marking CoDel queue on every path (it reacts to CE marks, not to delay or loss), with a
# 4-BDP buffer (267 / 167 / 167 packets) so that the AQM, not the drop-tail limit, governs the queue.
zoo() {  # path number, algorithm
  alg=$2 extra="" b1=67 b2=42 b3=83
  [ "$alg" = dctcp ] && extra="--aqm codel --ecn" b1=267 b2=167 b3=167
  case $1 in
  1) run "zoo/$alg-20m-40ms" --cc "zoo_$alg" --rate 20mbit --delay 20ms --buffer-pkts $b1 --loss 0 --duration 4 $extra ;;
  2) run "zoo/$alg-10m-100ms-loss" --cc "zoo_$alg" --rate 10mbit --delay 50ms --buffer-pkts $b2 --loss 0.005 \
         --duration 6 --seed 21 $extra ;;
  3) run "zoo/$alg-50m-10ms" --cc "zoo_$alg" --rate 50mbit --delay 5ms --buffer-pkts $b3 --loss 0 --duration 2 $extra ;;
  esac
}
ZOO="bic htcp scalable veno yeah illinois lp nv cdg dctcp"
for alg in $ZOO; do zoo 1 $alg; done
for alg in $ZOO; do zoo 2 $alg; done
# Field conditions on 20 Mbit/s x 40 ms: (a) CoDel (target 5 ms, interval 100 ms) marking ECT packets CE, ECN on at
# the sender, a 4-BDP buffer the AQM keeps short; (b) ACKs released in bursts every 8 ms; (c) 0-4 ms uniform delay
# jitter per packet in both directions (order kept), 1-BDP buffer; (d) a 10 Mbit/s token-bucket policer (30 kB bucket)
# in front of the 20 Mbit/s link.
for cc in reno cubic bbr; do
  run "field/$cc-codel-ecn" --cc $cc --rate 20mbit --delay 20ms --buffer-pkts 267 --loss 0 --duration 4 --aqm codel --ecn
  run "field/$cc-ackagg" --cc $cc --rate 20mbit --delay 20ms --buffer-pkts 67 --loss 0 --duration 4 --ack-agg 8ms
  run "field/$cc-jitter" --cc $cc --rate 20mbit --delay 20ms --buffer-pkts 67 --loss 0 --duration 4 --jitter 4ms
  run "field/$cc-policer" --cc $cc --rate 20mbit --delay 20ms --buffer-pkts 67 --loss 0 --duration 4 \
      --policer-rate 10mbit --policer-burst 30000
done
for alg in $ZOO; do zoo 3 $alg; done
