#!/usr/bin/env bash
# A/B: old vs new planner in the simulator, both builds side by side (one core each). usage: ab.sh OUT
out=$1; mkdir -p $out
J=/usr/lib/jvm/temurin-25-jdk-amd64/bin/java
sim() { local v=$1 name=$2; shift 2; $J --sun-misc-unsafe-memory-access=allow --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -cp "/tmp/$v-cli/tandem-cli-0.1.0-SNAPSHOT.jar:/tmp/$v-cli/lib/*" dev.tandem.cli.Main simulate "$@" --json $out/$v-$name.json > $out/$v-$name.txt 2>/dev/null; }
run() { local v=$1
  sim $v bursty20-30 --trace bursty --rate 20 --predictor holt-winters --season-s 900 --startup-s 30
  sim $v bursty100-30 --trace bursty --rate 100 --predictor holt-winters --season-s 900 --startup-s 30
  sim $v bursty20-5 --trace bursty --rate 20 --predictor holt-winters --season-s 900 --startup-s 5
  sim $v bursty100-5 --trace bursty --rate 100 --predictor holt-winters --season-s 900 --startup-s 5
  sim $v diurnal --trace diurnal --rate 20 --predictor holt-winters --season-s 3600
  sim $v mooncake --trace mooncake --predictor holt
  sim $v bursty20-holt --trace bursty --rate 20 --predictor holt
}
run old & run new & wait
python3 - $out <<'PY'
import json,sys,pathlib
out=pathlib.Path(sys.argv[1])
for n in ['bursty20-30','bursty100-30','bursty20-5','bursty100-5','diurnal','mooncake','bursty20-holt']:
  row=[n]
  for v in ['old','new']:
    d=json.loads((out/f'{v}-{n}.json').read_text())
    row.append(f"{v}: {100*d['sla_attainment']:.2f}% ws {d['worker_seconds']:.0f} ({d['worker_seconds_vs_static_peak']:.3f}) gpw×{d['goodput_per_worker_vs_static_peak']:.2f}")
  print(' | '.join(row))
PY
