# tests/lib.sh - what the test scripts that drive the binary share;
# sourced (. "$(dirname "$0")/lib.sh"), never run itself: it is not
# executable, and make test runs only the executable tests/*.sh.
#
# After it: tmp, a fresh folder removed when the script ends; fail=0,
# which a failed check sets to 1; bad; check; use_checkout_data;
# wait_until; ended.

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0

bad() {	# bad MESSAGE...: print a failure, the script will exit 1
	echo "FAIL: $*"; fail=1
}

check() {	# check DESCRIPTION COMMAND...: the command must succeed
	what=$1
	shift
	if ! "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "FAIL: $what"; cat "$tmp/err"; fail=1
	fi
}

# use_checkout_data: the binary runs on this checkout's configs and
# workloads from any folder. Needs here (the tests folder); sets root
# (the checkout) and llmsim (LLMSIM made absolute; it must be set) and
# exports LLMSIM_DATA=root.
use_checkout_data() {
	root=$(dirname "$here")
	llmsim=${LLMSIM:?set LLMSIM to the llmsim binary}
	case $llmsim in /*) ;; *) llmsim=$(pwd)/$llmsim ;; esac
	LLMSIM_DATA=$root
	export LLMSIM_DATA
}

# long_sweep FILE: a sweep of 8 x 5 x 4 = 160 points of Llama 2 7B on one
# MI300X node (seconds of work: long enough to stop mid-way). Needs root.
long_sweep() {
	cat >"$1" <<YAML
name: long
base: $root/workloads/jobs/llama2-7b-mi300x.yaml
grid:
  training.seq_len: [512, 1024, 1536, 2048, 2560, 3072, 3584, 4096]
  training.global_batch_size: [64, 128, 192, 256, 320]
  parallelism.tp: [1, 2, 4, 8]
YAML
}

# wait_until TENTHS PID COMMAND...: poll COMMAND every 0.1 s until it
# succeeds, for at most TENTHS polls (a loaded CI machine is slow: give
# minutes, not a guess at the usual second); when PID is not empty and
# that process has ended, COMMAND gets one last try. Succeeds when
# COMMAND did.
wait_until() {
	_n=$1 _pid=$2
	shift 2
	_i=0
	while [ $_i -lt "$_n" ]; do
		"$@" && return 0
		if [ -n "$_pid" ] && ! kill -0 "$_pid" 2>/dev/null; then
			"$@"
			return
		fi
		sleep 0.1
		_i=$((_i + 1))
	done
	return 1
}

# ended PID: the process is gone, or a zombie (this container's init
# does not reap orphans, so a killed worker can stay one).
ended() {
	case $(ps -o stat= -p "$1" 2>/dev/null) in
	"" | Z*) return 0 ;;
	esac
	return 1
}
