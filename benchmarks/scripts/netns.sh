#!/usr/bin/env bash
# Hosts on one machine over a real network: network namespaces joined by veth pairs to a bridge.
#   netns.sh up            tdm-front (10.77.0.10: etcd, frontend, client), tdm-prefill (10.77.0.11),
#                          tdm-decode (10.77.0.12), a bridge tdm-br (10.77.0.1) in the root namespace
#   netns.sh shape RATE    shape what the prefill host sends (its KV, to the decode host) with tc
#                          tbf at RATE (e.g. 100mbit, 1gbit); `shape none` removes it
#   netns.sh down          removes all of it (safe to run twice, or after a failure)
# Needs root and iproute2. These machines' kernel has no netem, so no delay is added.
set -euo pipefail
hosts=(front:10 prefill:11 decode:12)
cmd="${1:-}"
case "$cmd" in
  up)
    "$0" down >/dev/null 2>&1 || true
    ip link add tdm-br type bridge
    ip addr add 10.77.0.1/24 dev tdm-br
    ip link set tdm-br up
    for h in "${hosts[@]}"; do
      name="${h%%:*}" last="${h##*:}"
      ns="tdm-$name"
      ip netns add "$ns"
      ip link add "tdm-$name-br" type veth peer name eth0 netns "$ns"
      ip link set "tdm-$name-br" master tdm-br up
      ip -n "$ns" addr add "10.77.0.$last/24" dev eth0
      ip -n "$ns" link set eth0 up
      ip -n "$ns" link set lo up
    done
    ;;
  shape)
    rate="${2:?usage: netns.sh shape RATE|none}"
    ip netns exec tdm-prefill tc qdisc del dev eth0 root 2>/dev/null || true
    if [ "$rate" != none ]; then
      # burst: at least one timer tick's worth of bytes at the rate (HZ ≥ 100), or tbf caps below it.
      bytes_per_s=$(numfmt --from=si "$(echo "${rate%bit}" | tr a-z A-Z)" 2>/dev/null || echo 0)
      burst=$(( bytes_per_s / 8 / 100 ))
      [ "$burst" -lt 262144 ] && burst=262144
      ip netns exec tdm-prefill tc qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 200ms
    fi
    ;;
  down)
    for h in "${hosts[@]}"; do
      ip netns del "tdm-${h%%:*}" 2>/dev/null || true
      ip link del "tdm-${h%%:*}-br" 2>/dev/null || true
    done
    ip link del tdm-br 2>/dev/null || true
    ;;
  *) echo "usage: netns.sh up | shape RATE|none | down" >&2; exit 2 ;;
esac
