#!/bin/sh
# Regenerates the aioquic traces of samples/quic/ (README.md there says what each one is).
set -e
cd "$(dirname "$0")"
M="python make_traces.py --rate 6e6 --rtt 0.04 --seconds 10 --seed 1"
$M --cc reno --queue 400 --loss 0 -o aioquic-reno-buf400.qlog.gz
$M --cc reno --queue 30 --loss 0.005 -o aioquic-reno-loss.qlog.gz --client aioquic-reno-loss-client.qlog.gz
$M --cc cubic --queue 400 --loss 0 -o aioquic-cubic-buf400.qlog.gz
$M --cc cubic --queue 30 --loss 0.005 -o aioquic-cubic-loss.qlog.gz
