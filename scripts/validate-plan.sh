#!/bin/sh
# validate-plan.sh - the planner against the full simulation and against
# practitioners (issue 12's checks):
#
#  1. Ranking: for each job, every valid layout that fits is estimated
#     by the analytical tier; its best 20 and 20 more spread over the
#     ranking are simulated in full (tests/tools/plan_rank.c). Printed:
#     Spearman's rank correlation over the 40 and over the best 20, the
#     analytical rank of the fastest simulated layout, the estimate's
#     median and largest error. Fails when the fastest is outside the
#     analytical top 20 or the correlation is below 0.9.
#  2. Practitioners: for each training case of
#     results/reference/training/cases.tsv and of the MoE cases
#     (results/reference/moe/cases.tsv), the rank of the layout that
#     was measured among the plan's best 20 simulated in full for its GPU
#     count (tests/tools/plan_dev.c), with the part of the step that
#     differs most when the plan's best is faster. A report, not a gate
#     (PLAN_DEV_MAX_S skips a case whose plan takes longer).
#
# Environment: LLMSIM_TOOLS (default build/tools).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tools=${LLMSIM_TOOLS:-$root/build/tools}
case $tools in /*) ;; *) tools=$(pwd)/$tools ;; esac
max_s=${PLAN_DEV_MAX_S:-600}
failed=0
cd "$root" || exit 1

echo "ranking: the analytical tier against the full simulation"
printf '%-34s %6s %8s %4s %7s %9s %7s %9s %8s\n' job GPUs ranked n rho \
	rho_top20 fastest med_err max_err
for j in workloads/jobs/default.yaml workloads/jobs/llama2-7b-mi300x.yaml \
	 workloads/jobs/llama3-8b-fsdp-mi355x.yaml \
	 workloads/jobs/llama3-70b-h100-64.yaml \
	 results/reference/training/T-NEMO2407-LLAMA2-13B-16.yaml \
	 results/reference/training/T-DGXC-NEM4-15B-BF16-16.yaml \
	 results/reference/training/T-KOR-22B-seqsel.yaml \
	 results/reference/training/T-NAR21-7p5B.yaml \
	 results/reference/training/T-DGXC-L31-8B-BF16-8.yaml \
	 results/reference/training/T-DGXC-L31-70B-BF16-64.yaml \
	 tests/scenarios/qwen3-30b-ep8-deepep/job.yaml \
	 results/reference/moe/T-MB260401-H100-QWEN3-30B-FP8-EP16.yaml; do
	"$tools/plan_rank" "$j" 2>/dev/null || failed=1
done

echo
echo "practitioners: the measured layout's rank among the plan's best 20"
echo "case | GPUs | measured layout, simulated step | plan's best, step | rank among the 20 simulated, analytical rank | what the best saves"
for dir in training moe; do
	grep -v '^#' "results/reference/$dir/cases.tsv" |
	while IFS='	' read -r id file rest; do
		[ -n "$id" ] || continue
		timeout "$max_s" "$tools/plan_dev" \
			"results/reference/$dir/$file" 2>/dev/null ||
			echo "$id: no plan within $max_s s (or it failed)"
	done
done
exit $failed
