#!/bin/sh
# Every experiment of docs/papers.md, one after the other (each testbed run under
# flock /tmp/hscc-testbed.lock). Runs already made (in /tmp/hscc_experiments/) are reused.
#   sudo sh samples/testbed/experiments/run_all.sh
set -e
cd "$(dirname "$0")/../../.."
PY=${PY:-.venv/bin/python}
$PY samples/testbed/experiments/ctcp.py --figure 4
$PY samples/testbed/experiments/ctcp.py --figure 6
$PY samples/testbed/experiments/ctcp.py --figure 4s
$PY samples/testbed/experiments/fusion.py --part fig56
$PY samples/testbed/experiments/hrf.py
$PY samples/testbed/experiments/kyushu.py
$PY samples/testbed/experiments/fusion.py --part table1
$PY samples/testbed/experiments/ctcp.py --figure 3
$PY samples/testbed/experiments/ctcp.py --analyze-only
$PY samples/testbed/experiments/tables.py --inject docs/papers.md
