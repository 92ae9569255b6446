#!/usr/bin/env bash
# make demo: the main job end to end. Reuses or starts Redis and Postgres,
# migrates, starts the simulator unless OPENAI_API_KEY is set, runs a worker,
# enqueues a CSV job that needs at least 3 continuations, shows progress and
# prints the merged result, its metadata and cost.
set -euo pipefail
cd "$(dirname "$0")/.."

export DATABASE_URL=${DATABASE_URL:-postgres://root@127.0.0.1:5432/carryover?sslmode=disable}
export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}
export CARRYOVER_QUEUE=${CARRYOVER_QUEUE:-carryover_demo}
export LOG_LEVEL=${LOG_LEVEL:-info}
run_dir=$(mktemp -d "${TMPDIR:-/tmp}/carryover-demo.XXXXXX")
pids=()
# Stops what the demo started and removes its logs; after a failure it
# shows the end of each log first.
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$rc" -ne 0 ]; then
    for f in "$run_dir"/*.log; do
      [ -s "$f" ] && { echo "== last lines of $(basename "$f")" >&2; tail -n 20 "$f" >&2; }
    done
  fi
  rm -rf "$run_dir"
}
trap cleanup EXIT

# build compiles the binaries and says every 10 s how far it got: a first
# run compiles every dependency (a minute or two), later runs almost
# nothing. A failed build prints the compiler's output.
build() {
  local log="$run_dir/build.log" pid start=$SECONDS next=10 n what
  echo "== building bin/ (the first run compiles every dependency: a minute or two)" >&2
  go build -v -o bin/ ./cmd/... 2>"$log" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ $((SECONDS - start)) -ge "$next" ]; then
      n=$(wc -l <"$log")
      if [ "$n" -eq 0 ]; then what="linking the binaries"; else what="$n packages compiled, then linking"; fi
      echo "   still building: $((SECONDS - start))s ($what)" >&2
      next=$((next + 10))
    fi
  done
  if ! wait "$pid"; then cat "$log" >&2; return 1; fi
  : >"$log"
}

bash scripts/services.sh
build
echo "== migrating" >&2
bin/worker migrate

if [ -z "${OPENAI_API_KEY:-}" ]; then
  port=${SIMULATOR_PORT:-8089}
  while (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; do port=$((port + 1)); done
  echo "== no OPENAI_API_KEY: starting the OpenAI-compatible simulator on 127.0.0.1:$port" >&2
  bin/simulator --addr "127.0.0.1:$port" --latency "${SIMULATOR_LATENCY:-150ms}" 2>"$run_dir/simulator.log" &
  pids+=($!)
  export OPENAI_BASE_URL="http://127.0.0.1:$port/v1" OPENAI_API_KEY="simulator-demo"
  for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
  # The simulator's CSV has these columns (internal/simulator/generate.go).
  prompt="[[sim format=csv size=9000 seed=42]] Generate a CSV of customer orders with columns id,name,city,amount,note,updated_at."
  max_tokens=400
else
  echo "== OPENAI_API_KEY is set: using ${OPENAI_BASE_URL:-the OpenAI API}" >&2
  prompt="Generate a CSV of 300 fictional customer orders with the header id,name,city,amount,note,updated_at. Quote fields that contain commas. Output only the CSV."
  max_tokens=1200
fi

echo "== starting a worker (log: $run_dir/worker.log, removed at exit; its last lines are shown if the demo fails)" >&2
bin/worker --concurrency 4 2>"$run_dir/worker.log" &
pids+=($!)

echo "== enqueueing a CSV job" >&2
id=$(bin/enqueue --model "${CARRYOVER_MODEL:-gpt-4.1-mini}" --format csv --max-output-tokens "$max_tokens" \
  --max-attempts 20 "$prompt")
echo "job $id" >&2
echo "== progress (polling job $id; the merged result follows on stdout)" >&2
status=0
bin/enqueue wait "$id" --timeout 5m || status=$?
echo "== status" >&2
bin/enqueue status "$id"
echo "== metadata" >&2
bin/enqueue result "$id" --meta
exit $status
