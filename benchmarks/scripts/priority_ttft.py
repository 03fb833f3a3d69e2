#!/usr/bin/env python3
"""Priority scheduling under saturation (docs/benchmarks.md, "Priority scheduling").

One `tandem serve --engine mocker --speedup-ratio 1` (real-time timing model) with a small batch
(--max-num-seqs 4), saturated by background streams of priority 0, while a probe sends one
stream every 0.5 s: first come, first served (the probe at priority 0, as fcfs takes no other),
then --scheduling-policy priority (the probe at -10). Reports the time to first token of probes
and background streams, p50 and p90, per policy (a table of four figures: no chart).
  benchmarks/scripts/priority_ttft.py [out-dir]
"""
import json, os, socket, subprocess, sys, threading, time, urllib.request

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/tandem-priority"
BACKGROUND, PROBES, PROBE_EVERY, MAX_TOKENS = 16, 24, 0.5, 64


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def ttft(port, priority):
    body = {"model": "tandem/mocker-qwen3-0.6b", "max_tokens": MAX_TOKENS, "stream": True, "ignore_eos": True,
            "messages": [{"role": "user", "content": "Tell me a story about lighthouses."}]}
    if priority:
        body["priority"] = priority
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", json.dumps(body).encode(),
                                 {"content-type": "application/json"})
    start = time.monotonic(); first = None
    with urllib.request.urlopen(req, timeout=120) as r:
        for line in r:
            if first is None and line.startswith(b"data: {"):
                choices = json.loads(line[6:]).get("choices") or [{}]
                if choices[0].get("delta", {}).get("content"):  # the first chunk, sent at once, holds only the role
                    first = time.monotonic() - start
    return first


def pct(xs, q):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000


def run(policy):
    port = free_port()
    log = open(os.path.join(OUT, f"serve-{policy}.log"), "w")
    server = subprocess.Popen([os.path.join(ROOT, "tandem"), "serve", "--engine", "mocker", "--speedup-ratio", "1",
                               "--max-num-seqs", "4", "--scheduling-policy", policy, "--host", "127.0.0.1", "--port", str(port)],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1); break
            except Exception:
                time.sleep(0.5)
        stop = threading.Event(); background = []
        def loop():
            while not stop.is_set():
                background.append(ttft(port, 0))
        threads = [threading.Thread(target=loop) for _ in range(BACKGROUND)]
        for t in threads: t.start()
        time.sleep(5)  # saturated: a queue stands behind the batch
        probes = []
        for i in range(PROBES):
            probes.append(ttft(port, -10 if policy == "priority" else 0))
            print(f"  {policy}: probe {i + 1}/{PROBES}", file=sys.stderr, flush=True)
            time.sleep(PROBE_EVERY)
        stop.set()
        for t in threads: t.join()
        return probes, background
    finally:
        server.terminate(); server.wait(30)


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = {}
    for policy in ("fcfs", "priority"):
        rows[policy] = run(policy)
    lines = ["| policy | probe TTFT p50 / p90 (ms) | background TTFT p50 / p90 (ms) | probes, background streams |", "|---|---|---|---|"]
    for policy, (probes, bg) in rows.items():
        lines.append(f"| {policy} | {pct(probes, .5):.0f} / {pct(probes, .9):.0f} | {pct(bg, .5):.0f} / {pct(bg, .9):.0f} | {len(probes)}, {len(bg)} |")
    f, p = rows["fcfs"][0], rows["priority"][0]
    lines.append(f"\nprobe p50 priority ÷ fcfs: {pct(p, .5) / pct(f, .5):.3f}")
    text = "\n".join(lines)
    print(text)
    open(os.path.join(OUT, "priority.md"), "w").write(text + "\n")
    json.dump({k: {"probes_s": v[0], "background_s": v[1]} for k, v in rows.items()}, open(os.path.join(OUT, "priority.json"), "w"))

if __name__ == "__main__":
    main()
