# benchlib.sh - what the benchmark scripts (scripts/bench-*.sh) share;
# sourced by them after they set root and llmsim, never run itself:
#
#   . "$root/scripts/benchlib.sh"
#
# Messages name the script that sourced it (bench-moe: ...).

me=$(basename "$0" .sh)

# Exit 1 unless GNU time is there: every benchmark measures with it.
bench_need_time() {
	if [ ! -x /usr/bin/time ]; then
		echo "$me: /usr/bin/time is needed (Debian package 'time')" >&2
		exit 1
	fi
}

# bench_step JOB RUNS LABEL TARGET_S OUT: RUNS runs of `llmsim run JOB
# --json` timed into the file OUT (appended: one "wall_s user_s sys_s
# rss_KiB" line a run); prints each run, then the median wall time, the
# median CPU time (user + system: the shared machine's load inflates wall
# time, not CPU time) and the median peak resident set under LABEL against
# the targets (under TARGET_S seconds of wall time, under 1 GiB). Returns 1
# when a target is missed; exits 1 when a run fails.
bench_step() {
	i=0
	while [ $i -lt "$2" ]; do
		if ! /usr/bin/time -f '%e %U %S %M' -o "$5" -a \
		     "$llmsim" run "$1" --json --no-store \
		     > /dev/null; then
			echo "$me: llmsim run failed" >&2
			exit 1
		fi
		i=$((i + 1))
	done
	awk '
		{ wall[NR] = $1; cpu[NR] = $2 + $3; rss[NR] = $4 }
		END {
			for (i = 1; i <= NR; i++)
				printf "run %d: %.2f s wall, %.2f s CPU, %.1f MiB peak RSS\n", i, wall[i], cpu[i], rss[i] / 1024
		}' "$5"
	med_wall=$(awk '{ print $1 }' "$5" | sort -g | sed -n "$(( ($2 + 1) / 2 ))p")
	med_cpu=$(awk '{ print $2 + $3 }' "$5" | sort -g | sed -n "$(( ($2 + 1) / 2 ))p")
	med_rss=$(awk '{ print $4 }' "$5" | sort -g | sed -n "$(( ($2 + 1) / 2 ))p")
	awk -v w="$med_wall" -v c="$med_cpu" -v r="$med_rss" -v label="$3" -v t="$4" 'BEGIN {
		printf "%s: median %.2f s wall (target < %g s), %.2f s CPU, ", label, w, t, c
		printf "median %.1f MiB peak RSS (target < 1024 MiB)\n", r / 1024
		exit (w < t && r < 1048576) ? 0 : 1
	}'
}
