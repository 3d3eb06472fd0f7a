#!/usr/bin/env bash
# Inside the VM: keep the working copy in step with the shared folder, run things
# there, copy results back to the shared folder. Called by vagrant/vm.mk.
#
#   in-vm.sh sync                        /vagrant -> /home/vagrant/emu (keeps its .venv)
#   in-vm.sh test [PYTEST ARGS...]       sync, then the test suite (BMv2 cases included)
#   in-vm.sh run TOPO [emu run ARGS...]  sync, one `emu run`, results -> /vagrant/results/vm/
#   in-vm.sh crosscheck [ARGS...]        sync, `emu crosscheck` (embedded vs BMv2)
#   in-vm.sh experiments FILE.yaml       sync, vagrant/run-experiments.sh FILE.yaml
set -euo pipefail

PROJECT_SRC=${PROJECT_SRC:-/vagrant}
PROJECT=${PROJECT:-/home/vagrant/emu}
RESULTS_BACK=${RESULTS_BACK:-$PROJECT_SRC/results/vm}

sync_tree() {
    mkdir -p "$PROJECT"
    # Excluded paths are never deleted on the VM side (no --delete-excluded), so the
    # VM's own .venv, build/ and results/ survive every sync.
    rsync -a --delete \
        --exclude '/.venv/' --exclude '/build/' --exclude '/results/' \
        --exclude '__pycache__/' --exclude '.mypy_cache/' --exclude '.pytest_cache/' \
        --exclude '.ruff_cache/' --exclude '/emu.egg-info/' --exclude '/.vagrant/' \
        --exclude '/vagrant/.vagrant/' \
        "$PROJECT_SRC/" "$PROJECT/"
}

collect() {
    if [[ -d $PROJECT/results ]]; then
        mkdir -p "$RESULTS_BACK"
        rsync -a "$PROJECT/results/" "$RESULTS_BACK/"
        echo "in-vm: results copied to ${RESULTS_BACK#"$PROJECT_SRC"/} in the project folder"
    fi
}

[[ $(id -u) -eq 0 ]] || exec sudo -E bash "$0" "$@"
cmd=${1:-}
shift || true
case $cmd in
    sync)
        sync_tree ;;
    test)
        sync_tree
        cd "$PROJECT" && make setup && .venv/bin/python -m pytest "$@" ;;
    run)
        sync_tree
        status=0
        (cd "$PROJECT" && make setup && .venv/bin/python -m emu run "$@") || status=$?
        collect
        exit "$status" ;;
    crosscheck)
        sync_tree
        cd "$PROJECT" && make setup && .venv/bin/python -m emu crosscheck "$@" ;;
    experiments)
        sync_tree
        [[ $# -ge 1 ]] || { echo "usage: in-vm.sh experiments FILE.yaml" >&2; exit 2; }
        file=$1; shift
        [[ $file = /* ]] || file=$PROJECT/$file
        cd "$PROJECT" && make setup
        bash "$PROJECT/vagrant/run-experiments.sh" "$file" --collect "$RESULTS_BACK" "$@" ;;
    *)
        echo "usage: in-vm.sh sync|test|run|crosscheck|experiments [ARGS...]" >&2
        exit 2 ;;
esac
