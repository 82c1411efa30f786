#!/usr/bin/env bash
# Install the peer tools the benchmark compares against (development dependencies only; the
# test suite never needs them): tshark, tcptrace and GNU time from Debian, dpkt from PyPI
# (the `bench` extra), scapy is already a runtime dependency. Builds the benchmark captures.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    need=()
    command -v tshark >/dev/null || need+=(tshark)
    command -v tcptrace >/dev/null || need+=(tcptrace)
    [ -x /usr/bin/time ] || need+=(time)
    if [ ${#need[@]} -gt 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
    fi
else
    for t in tshark tcptrace; do command -v $t >/dev/null || echo "setup: $t missing (apt-get install -y $t as root)"; done
fi
"$PY" -m pip install -q -e '.[bench]'
"$PY" benchmarks/make_capture.py
