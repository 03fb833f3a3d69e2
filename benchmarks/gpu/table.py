#!/usr/bin/env python3
"""The device check's one table: Tandem's figures (gpu-check.json) beside the anchors
(anchors.json) measured in the same call, as ratios. Writes OUT_DIR/table.txt and table.json.

  python3 table.py OUT_DIR MODELS_DIR
"""
import json
import os
import sys

out = sys.argv[1]
models = sys.argv[2]


def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


tandem = load("gpu-check.json")
anchors = load("anchors.json")
copy = anchors.get("copy_bandwidth_bytes_per_s")
lines = ["device: %s (sm %s), driver CUDA %s, PTX %s" % (tandem.get("device"), tandem.get("compute_capability"),
                                                       tandem.get("driver_cuda"), tandem.get("ptx"))]
if copy:
    lines.append("device copy bandwidth (torch): %.0f GB/s" % (copy / 1e9))
rows = []
for m in tandem.get("models", []):
    name = m["model"]
    a = anchors.get("models", {}).get(name, {})
    row = {"model": name}
    if "error" in m:
        lines.append("%s: FAILED %s" % (name, m["error"]))
    for suffix, prompt in (("", 64), ("_1000", 1000)):
        if "logits_relative_error" + suffix in m:
            row["logits_relative_error" + suffix] = m["logits_relative_error" + suffix]
            row["greedy_identical" + suffix] = "%d/%d" % (m["greedy_identical_steps" + suffix], m["greedy_steps"])
            lines.append("%s, %d-token prompt: cuda vs cpu logits relative error %.2e, greedy tokens identical %s"
                         % (name, prompt, m["logits_relative_error" + suffix], row["greedy_identical" + suffix]))
    decode = m.get("decode_tokens_per_s", {})
    bpt = m.get("bytes_per_token")
    for batch, tps in decode.items():
        text = "%s: decode batch %s: %.1f tokens/s" % (name, batch, tps)
        if batch == "1" and copy and bpt:
            limit = copy / bpt
            row["batch1_share_of_limit"] = tps / limit
            text += " = %.0f%% of copy bandwidth / bytes per token (%.0f tokens/s)" % (100 * tps / limit, limit)
            for key, label in (("transformers_eager_tokens_per_s", "transformers eager"),
                               ("transformers_compiled_tokens_per_s", "transformers compiled")):
                if key in a:
                    row["batch1_vs_" + key] = tps / a[key]
                    text += "; %.2fx %s (%.1f)" % (tps / a[key], label, a[key])
        if batch == "32" and "1" in decode:
            row["batch32_over_batch1"] = tps / decode["1"]
            text += " = %.1fx batch 1" % (tps / decode["1"])
        lines.append(text)
    cfg_path = os.path.join(models, name, "config.json")
    cfg = json.load(open(cfg_path)) if os.path.exists(cfg_path) else {}
    for prompt, tps in m.get("prefill_tokens_per_s", {}).items():
        text = "%s: prefill %s tokens: %.1f tokens/s (%.1f ms)" % (name, prompt, tps, 1000 * int(prompt) / tps)
        torch_rate = a.get("bf16_matmul_flops", {}).get(prompt)
        if torch_rate and bpt and cfg:
            # matmul FLOPs per token ~ 2 x matmul parameters (bytes per token / element size).
            flops = tps * 2 * bpt / (2 if cfg.get("torch_dtype") in ("bfloat16", "float16") else 4)
            row["prefill_%s_vs_torch_matmul" % prompt] = flops / torch_rate
            text += " = %.1f TFLOP/s, %.0f%% of torch's bf16 matmul at this shape" % (flops / 1e12, 100 * flops / torch_rate)
        lines.append(text)
    for part, kernels in m.get("kernel_breakdown", {}).items():
        total = sum(k["ms"] for k in kernels) or 1e-12
        lines.append("%s: %s, %.3f ms of kernels:" % (name, part, total))
        for k in kernels[:8]:
            gbs = " %.0f GB/s" % k["weight_gb_per_s"] if k["weight_gb_per_s"] else ""
            lines.append("    %-22s %5d x %8.3f ms %5.1f%%%s" % (k["kernel"], k["launches"], k["ms"], 100 * k["ms"] / total, gbs))
    rows.append(row)
with open(os.path.join(out, "table.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
with open(os.path.join(out, "table.json"), "w") as f:
    json.dump({"rows": rows, "tandem": tandem, "anchors": anchors}, f, indent=2)
print("\n".join(lines))

# A chart beside the table where matplotlib is installed (the GPU machine's Python usually has it).
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models_done = [m for m in tandem.get("models", []) if m.get("decode_tokens_per_s")]
    if models_done:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4))
        for m in models_done:
            decode = m["decode_tokens_per_s"]
            line, = axes[0].plot([int(b) for b in decode], list(decode.values()), marker="o", label=m["model"])
            prefill = m.get("prefill_tokens_per_s", {})
            axes[1].plot([int(p) for p in prefill], [1000 * int(p) / v for p, v in prefill.items()], marker="o",
                         label=m["model"])
            bpt = m.get("bytes_per_token")
            if copy and bpt:
                axes[0].axhline(copy / bpt, linestyle="--", linewidth=0.8, color=line.get_color(),
                                label="%s batch-1 limit" % m["model"])
        axes[0].set(xscale="log", yscale="log", xlabel="batch", ylabel="decode tokens/s", title="Decode (cuda)")
        axes[1].set(xscale="log", yscale="log", xlabel="prompt tokens", ylabel="prefill ms", title="Prefill (cuda)")
        for ax in axes:
            ax.legend(fontsize=7)
            ax.grid(True, which="both", linewidth=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "table.png"), dpi=120)
except Exception as e:  # noqa: BLE001 - the chart is optional
    print("no chart: %r" % e)
