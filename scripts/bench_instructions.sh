#!/usr/bin/env bash
# Machine instructions (valgrind cachegrind, deterministic, unlike wall time on a shared
# machine) of the in-process benchmarks at two commits, and their ratio:
#   scripts/bench_instructions.sh BASE [HEAD]      (HEAD defaults to the checkout)
# Each commit runs its own bench/ scripts from a temporary worktree with this
# checkout's .venv. Needs valgrind; takes ~10 minutes per commit.
set -euo pipefail
base=${1:?usage: $0 BASE [HEAD]}
head=${2:-HEAD}
root=$(git rev-parse --show-toplevel)
command -v valgrind >/dev/null || { echo "valgrind not found (apt install valgrind)"; exit 1; }
tmp=$(mktemp -d)
trap 'for d in "$tmp"/wt-*; do git -C "$root" worktree remove --force "$d" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
benches=(bench_core bench_tables bench_pipeline "bench_roce --skip-netns --packets 50000")
declare -A ir
for rev in "$base" "$head"; do
    wt="$tmp/wt-$(git -C "$root" rev-parse --short "$rev")"
    git -C "$root" worktree add -q --detach "$wt" "$rev"
    for b in "${benches[@]}"; do
        read -r script args <<<"$b"
        [[ -f $wt/bench/$script.py ]] || continue
        # shellcheck disable=SC2086
        n=$(cd "$wt" && PYTHONPATH=$wt valgrind --tool=cachegrind --cache-sim=no \
              --cachegrind-out-file=/dev/null "$root/.venv/bin/python" "bench/$script.py" $args \
              2>&1 >/dev/null | sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d ,)
        ir["$rev $script"]=$n
    done
done
printf '%-16s %16s %16s %8s\n' benchmark "$base" "$head" ratio
for b in "${benches[@]}"; do
    read -r script _ <<<"$b"
    x=${ir["$base $script"]:-}; y=${ir["$head $script"]:-}
    [[ -n $x && -n $y ]] || continue
    printf '%-16s %16s %16s %8s\n' "$script" "$x" "$y" "$(awk "BEGIN{printf \"%.4f\", $y/$x}")"
done
