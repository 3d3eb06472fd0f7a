#!/usr/bin/env bash
# Run a list of emulator runs unattended and collect their results.
#
#   vagrant/run-experiments.sh FILE.yaml [--dry-run] [--collect DIR] [--only NAME,...]
#
# Each run in FILE.yaml becomes one `emu run TOPO --lb .. --cc .. --recovery ..
# --workload .. --target ..` (see vagrant/experiments/lb-compare.yaml); its output
# goes to results/experiments/<batch>/<run>/ with the run's log, command and exit
# code, and the batch's summary.json. With --collect DIR (in the VM:
# /vagrant/results/vm, the shared folder) the batch folder is copied there after
# every run, so a batch stopped half-way still shows what finished.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
py=$root/.venv/bin/python
[[ -x $py ]] || py=python3
exec "$py" "$here/run_experiments.py" "$@"
