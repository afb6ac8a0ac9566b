#!/usr/bin/env bash
# Run the timing-sensitive test modules N times in a row (default 10) while the CPU is kept busy, to show that
# they wait for conditions rather than for fixed times.  The load is `stress --cpu 2` when Debian's `stress`
# package is installed, else two Python busy loops (nothing to install).  Stops at the first failing round.
#
#   scripts/stress-tests.sh                 # 10 rounds of the default modules
#   ROUNDS=3 scripts/stress-tests.sh tests/test_shutdown.py tests/test_redis_queue.py
#
# Prints one line per round and a closing "N passed, N failed" line; exits non-zero if any round failed.
set -uo pipefail
cd "$(dirname "$0")/.."

ROUNDS="${ROUNDS:-10}"
WORKERS="${STRESS_CPUS:-2}"
if [ "$#" -gt 0 ]; then
    MODULES=("$@")
else
    # The modules whose tests wait on other processes, threads, timers or the network.
    MODULES=(
        tests/test_redis_queue.py
        tests/test_otel_genai.py
        tests/test_shutdown.py
        tests/test_operability.py
        tests/test_store_faults.py
        tests/test_reliability_faults.py
        tests/test_client_limits.py
        tests/test_security.py
        tests/test_fd_limit.py
        tests/test_stream_hardening.py
    )
fi
PYTHON=".venv/bin/python"
[ -x "$PYTHON" ] || { echo "no .venv: run scripts/setup.sh --test first" >&2; exit 2; }

load_pids=()
stop_load() {
    for pid in "${load_pids[@]}"; do
        kill "$pid" 2>/dev/null
    done
    for pid in "${load_pids[@]}"; do
        wait "$pid" 2>/dev/null
    done
}
trap stop_load EXIT

# The load ends by itself after an hour at the latest (a bound, should this script be killed without its trap).
if command -v stress >/dev/null 2>&1; then
    echo "load: stress --cpu $WORKERS"
    stress --cpu "$WORKERS" --timeout 3600 >/dev/null 2>&1 &
    load_pids+=("$!")
else
    echo "load: $WORKERS Python busy loops (install Debian's stress for the same with stress --cpu $WORKERS)"
    for _ in $(seq "$WORKERS"); do
        "$PYTHON" -c 'import time
end = time.monotonic() + 3600
while time.monotonic() < end:
    pass' &
        load_pids+=("$!")
    done
fi

passed=0
failed=0
for round in $(seq "$ROUNDS"); do
    started=$(date +%s)
    log="$(mktemp -t ragtap-stress-XXXXXX.log)"
    if "$PYTHON" -m pytest -q -x -p no:randomly "${MODULES[@]}" >"$log" 2>&1; then
        passed=$((passed + 1))
        echo "round $round: $(tail -n 1 "$log") ($(( $(date +%s) - started )) s, load $(cut -d' ' -f1 /proc/loadavg))"
        rm -f "$log"
    else
        failed=$((failed + 1))
        echo "round $round: FAILED ($(( $(date +%s) - started )) s, load $(cut -d' ' -f1 /proc/loadavg)); log: $log"
        grep -E "^(FAILED|ERROR)|Error|assert" "$log" | head -20
        break
    fi
done
echo "stress rounds: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
