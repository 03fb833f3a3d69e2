#!/usr/bin/env python3
"""The anchors of the GPU device check, measured on the same GPU in the same call.

  python3 anchors.py OUT.json MODEL_DIR [MODEL_DIR ...]

- copy bandwidth: a 2 GiB device-to-device copy (bytes read + bytes written per second), the
  limit batch-1 decode is held to (weight bytes read per token);
- bf16 matmul rate of torch at the prefill shapes of each model (tokens x hidden by hidden x
  intermediate, and back), the rate Tandem's prefill GEMM is compared with;
- Hugging Face transformers generating from the same safetensors directory, batch 1, greedy:
  eager, then with a static cache and torch.compile (on the 0.6B shape only).

Each part is written to OUT.json as soon as it is measured, so a part that runs out of time
leaves the others.
"""
import json
import sys
import time

import torch

out_path = sys.argv[1]
models = sys.argv[2:]
report = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0)}


def save():
    with open(out_path, "w") as f:
        json.dump(report, f, indent=2)


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / reps


def log(msg):
    print("[anchors] " + msg, file=sys.stderr, flush=True)


# Copy bandwidth.
n = 2 << 30
a = torch.empty(n, dtype=torch.uint8, device="cuda")
b = torch.empty_like(a)
seconds = timed(lambda: b.copy_(a), 20)
report["copy_bandwidth_bytes_per_s"] = 2 * n / seconds
log("device copy: %.0f GB/s (read + write)" % (2 * n / seconds / 1e9))
del a, b
save()

for model_dir in models:
    with open(model_dir + "/config.json") as f:
        cfg = json.load(f)
    name = model_dir.rstrip("/").split("/")[-1]
    entry = report.setdefault("models", {}).setdefault(name, {})
    hidden, inter = cfg["hidden_size"], cfg["intermediate_size"]
    rates = {}
    for tokens in (512, 2048, 8192):
        x = torch.randn(tokens, hidden, dtype=torch.bfloat16, device="cuda")
        w1 = torch.randn(hidden, inter, dtype=torch.bfloat16, device="cuda")
        w2 = torch.randn(inter, hidden, dtype=torch.bfloat16, device="cuda")
        h = torch.empty(tokens, inter, dtype=torch.bfloat16, device="cuda")
        s = timed(lambda: (torch.matmul(x, w1, out=h), torch.matmul(h, w2)), 20)
        rates[str(tokens)] = 2 * 2 * tokens * hidden * inter / s
        log("%s: bf16 matmul at %d tokens: %.0f TFLOP/s" % (name, tokens, rates[str(tokens)] / 1e12))
    entry["bf16_matmul_flops"] = rates
    save()

    if "0.6b" not in name:
        continue  # transformers (and its minute of torch.compile) only on the 0.6B shape the targets name
    try:
        from transformers import AutoModelForCausalLM
    except Exception as e:  # noqa: BLE001 - report why and go on
        entry["transformers_error"] = repr(e)
        save()
        continue
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.bfloat16).cuda().eval()
    prompt = torch.randint(0, min(cfg["vocab_size"], 100000), (1, 128), device="cuda")
    new = 64

    def generate(**kw):
        return model.generate(prompt, max_new_tokens=new, min_new_tokens=new, do_sample=False, **kw)

    with torch.no_grad():
        s = timed(generate, 2)
        entry["transformers_eager_tokens_per_s"] = new / s
        log("%s: transformers eager: %.1f tokens/s" % (name, new / s))
        save()
        # Compiled: a static cache, which generate() compiles itself (transformers' own settings,
        # CUDA graphs included); where that fails, torch.compile of the forward without graphs
        # (wrapping the forward in reduce-overhead ourselves fails on transformers 5's cache:
        # "accessing tensor output of CUDAGraphs that has been overwritten").
        model.generation_config.cache_implementation = "static"
        for variant in ("generate's own compile", "torch.compile without CUDA graphs"):
            try:
                if variant != "generate's own compile":
                    model.forward = torch.compile(model.forward, mode="max-autotune-no-cudagraphs", fullgraph=False)
                start = time.perf_counter()
                generate()
                generate()
                log("%s: %s warm-up %.0f s" % (name, variant, time.perf_counter() - start))
                s = timed(generate, 2)
                entry["transformers_compiled_tokens_per_s"] = new / s
                entry["transformers_compiled_variant"] = "static cache, " + variant
                log("%s: transformers static cache + %s: %.1f tokens/s" % (name, variant, new / s))
                break
            except Exception as e:  # noqa: BLE001 - report why and try the next
                entry.setdefault("transformers_compiled_errors", {})[variant] = repr(e)[:2000]
                log("%s: %s failed: %s" % (name, variant, repr(e)[:300]))
        save()
    del model
    torch.cuda.empty_cache()
