#!/usr/bin/env bash
# A fabricsim sweep as a Slurm job array: each array task runs one slice of the
# cross product on one node, and a dependent job joins the slices.
#
#   sbatch docs/slurm-sweep.sh            # submits the array (8 slices here)
#
# The same two commands work under any batch scheduler that gives a task index:
#   fabricsim sweep SCENARIO --set ... --shard K/N --out DIR     (K = 1..N)
#   fabricsim sweep-merge DIR/sweep.shard-*.csv -o DIR/sweep.csv
#
#SBATCH --job-name=fabricsim-sweep
#SBATCH --array=1-8
#SBATCH --cpus-per-task=8
#SBATCH --time=02:00:00
#SBATCH --output=sweep/slurm-%A_%a.out
set -euo pipefail

SCENARIO=${SCENARIO:-examples/alltoall-oversubscribed.toml}
OUT=${OUT:-sweep}
FABRICSIM=${FABRICSIM:-target/release/fabricsim}
mkdir -p "$OUT"

if [ -z "${SLURM_ARRAY_TASK_ID:-}" ]; then
    echo "run this under sbatch (it reads SLURM_ARRAY_TASK_ID)" >&2
    exit 2
fi

# one slice per array task; its runs use the task's cores
"$FABRICSIM" sweep "$SCENARIO" \
    --set fabric.link_latency=100ns,500ns,1us,2us \
    --set cluster.nodes=16,32,64,128 \
    --set fabric.link_rate=200Gbps,400Gbps \
    --shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT" \
    --jobs "${SLURM_CPUS_PER_TASK:-0}" --quiet --out "$OUT" >/dev/null

# the first task queues the merge after the whole array has finished
if [ "$SLURM_ARRAY_TASK_ID" = "${SLURM_ARRAY_TASK_MIN:-1}" ]; then
    sbatch --dependency="afterok:$SLURM_ARRAY_JOB_ID" --job-name=fabricsim-merge \
        --output="$OUT/slurm-merge-%j.out" \
        --wrap "$FABRICSIM sweep-merge $OUT/sweep.shard-*.csv -o $OUT/sweep.csv"
fi
