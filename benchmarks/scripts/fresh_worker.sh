# Sourced by the warm-up scripts (warmup_fit.sh, long_prompt_prediction.sh): a fresh `tandem worker`
# process on MODEL (llama-100m, created once in the bench-model cache) behind a `tandem frontend`,
# started afresh each round as a deployment starts one.
#   fresh_worker_setup OUT_DIR                      sets $out, $model, $name; builds tandem if stale
#   fresh_worker_start ROUND ID WORKER_PORT FRONTEND_PORT [worker flags...]   returns once healthy
#   fresh_worker_stop ID FRONTEND_PORT
fresh_worker_setup() {
  cd "$(dirname "${BASH_SOURCE[0]}")/../.."
  export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
  out="$1"
  local cache="${TANDEM_CACHE:-$HOME/.cache/tandem}/bench-models"
  model="${MODEL:-$cache/llama-100m}"
  mkdir -p "$out"
  ./tandem --version >/dev/null  # builds if stale
  [ -f "$model/config.json" ] || ./tandem model create --shape llama-100m --seed 1 --dtype bf16 --out "$model" >/dev/null
  name=$(basename "$model")
}

fresh_worker_start() {
  local round="$1" id="$2" worker_port="$3" frontend_port="$4"
  shift 4
  ./tandem worker --port "$worker_port" --worker-id "$id" --model "$model" "$@" > "$out/worker-$round.log" 2>&1 &
  ./tandem frontend --port "$frontend_port" --worker "127.0.0.1:$worker_port" > "$out/frontend-$round.log" 2>&1 &
  for _ in $(seq 1 300); do curl -s "localhost:$frontend_port/health" | grep -q healthy && break; sleep 1; done
}

fresh_worker_stop() {
  pkill -f "worker-id $1" || true
  pkill -f "port $2" || true
}
