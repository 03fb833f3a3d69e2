# Sourced by the benchmark scripts, from the repository's root: builds Tandem if it is stale, and
# `bench_model SHAPE` prints the directory of a generated model of that shape (random bf16 weights,
# seed 1, under $TANDEM_CACHE/bench-models), creating it on first use.
./tandem --version >/dev/null  # builds if stale
bench_model() {
  local dir="${TANDEM_CACHE:-$HOME/.cache/tandem}/bench-models/$1"
  mkdir -p "$(dirname "$dir")"
  [ -f "$dir/config.json" ] || ./tandem model create --shape "$1" --seed 1 --dtype bf16 --out "$dir" >/dev/null
  echo "$dir"
}
