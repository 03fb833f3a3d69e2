#!/usr/bin/python3
"""Reference logits for Tandem's built-in engine, computed by an independent PyTorch implementation.

For each model directory given (written by `tandem model create`), reads config.json and the
safetensors weights with its own parser, runs the full causal forward pass in float32 (bf16/f16
weights are widened exactly), and writes a JSON fixture: two prompts (the second shares the first's
leading 16 tokens), 20 greedy decode steps for each, and the logits after the prompt and after each
step, and the final norm's output for the prompt's last token (`hidden`: its embedding, which the
LM head reads). The Java test regenerates the model from the same config and seed, checks the weights' hash,
and compares its logits.

    python3 reference_logits.py OUT.json MODEL_DIR SEED DTYPE [CONTEXT]

CONTEXT, where given, is the context the Java test serves the model with (it picks LongRoPE's short
or long factors once for every sequence, as llama.cpp does, where transformers picks them per
forward pass by the sequence's length); the script checks that the two rules agree on every step.
With LORA=DIR in the environment the PEFT LoRA adapter in DIR (adapter_config.json,
adapter_model.safetensors) is merged into the weights first, W + scaling·B·A in float32 (scaling
lora_alpha / r, or lora_alpha / √r with use_rslora), the fixture recording the adapter's hash and
LORA_SPEC (a JSON object: how the Java test regenerates the adapter).
With QUANTIZE=q8_0 in the environment the weights are first rounded as llama.cpp's Q8_0 rounds them
(the engine's --quantization q8_0): every linear layer's matrix, the embedding and the LM head whose
rows are whole runs of 64, then the forward pass as above on those values. With QUANTIZE=q4_0 the
layers' matrices are rounded as llama.cpp's Q4_0 rounds them where their rows are whole runs of 128
(else as Q8_0 where they are of 64), the embedding and the LM head as Q8_0 (as the engine's
--quantization q4_0 holds them).
Needs Debian's python3-torch (1.13) and nothing else.
"""
import hashlib
import json
import math
import os
import struct
import sys

import torch

STEPS = 20


def load_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        chunk = bytearray(data[b:e])
        if t["dtype"] == "F32":
            x = torch.frombuffer(chunk, dtype=torch.float32)
        elif t["dtype"] == "BF16":
            x = (torch.frombuffer(chunk, dtype=torch.int16).to(torch.int32) << 16).view(torch.float32)
        elif t["dtype"] == "F16":
            x = torch.frombuffer(chunk, dtype=torch.float16).to(torch.float32)
        else:
            raise ValueError(f"{path}: {name} has dtype {t['dtype']}")
        out[name] = x.reshape(t["shape"]).clone()
    return out, hashlib.sha256(raw).hexdigest()


def q8_0(t):
    """ggml's quantize_row_q8_0_ref, then dequantized: per 32 values of a row, d = max|w| / 127 in f32,
    each value roundf(w * (1/d)) (half away from zero; in double, as C's roundf decides), times d as f16."""
    rows, cols = t.shape
    g = t.reshape(rows, cols // 32, 32)
    d = g.abs().amax(-1, keepdim=True) / 127
    inv = torch.where(d != 0, 1.0 / d, torch.zeros_like(d))
    v = (g * inv).double()
    q = torch.sign(v) * torch.floor(v.abs() + 0.5)
    return (q * d.half().double()).float().reshape(rows, cols)


def q4_0(t):
    """ggml's quantize_row_q4_0_ref, then dequantized: per 32 values of a row, m the first of largest
    magnitude, d = m / -8 in f32, each q = min(15, trunc(w * (1/d) + 8.5)) in f32, then (q - 8) * d as f16."""
    rows, cols = t.shape
    g = t.reshape(rows, cols // 32, 32)
    m = g.gather(-1, g.abs().argmax(-1, keepdim=True))  # argmax: the first of equal magnitudes, as ggml's strict <
    d = m / -8
    inv = torch.where(d != 0, 1.0 / d, torch.zeros_like(d))
    q = torch.clamp(torch.trunc(g * inv + 8.5), max=15)
    return ((q.double() - 8) * d.half().double()).float().reshape(rows, cols)


def quantize(w, quantization):
    """The matrices the engine quantizes: 2-D weights other than norms, with columns a multiple of 64;
    for q4_0 the layers' matrices of columns a multiple of 128, the embedding and LM head as q8_0."""
    for name, t in w.items():
        if t.dim() == 2 and t.shape[1] % 64 == 0 and "norm" not in name:
            layer = "embed_tokens" not in name and "lm_head" not in name
            w[name] = q4_0(t) if quantization == "q4_0" and layer and t.shape[1] % 128 == 0 else q8_0(t)
    return w


def merge_lora(w, lora_dir):
    """W + scaling·B·A for every adapted projection (the engine adds B·(A·x) to W·x instead)."""
    with open(f"{lora_dir}/adapter_config.json") as f:
        acfg = json.load(f)
    t, digest = load_safetensors(f"{lora_dir}/adapter_model.safetensors")
    r, alpha = acfg["r"], acfg.get("lora_alpha", 8)
    scaling = alpha / math.sqrt(r) if acfg.get("use_rslora") else alpha / r
    merged = 0
    for name, a in t.items():
        if ".lora_A." not in name:
            continue
        b = t[name.replace(".lora_A.", ".lora_B.")]
        target = name.split("base_model.model.", 1)[1].replace(".lora_A.weight", ".weight")
        w[target] = w[target] + scaling * (b @ a)
        merged += 1
    if merged == 0:
        raise SystemExit(f"{lora_dir}: no lora_A tensors")
    return w, digest


def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


GEMMA3 = "Gemma3ForCausalLM"
GEMMA2 = "Gemma2ForCausalLM"


def rotary_dim(cfg):
    """RoPE rotates the first int(head_dim * partial_rotary_factor) dimensions of each head."""
    return int(head_dim(cfg) * cfg.get("partial_rotary_factor", 1.0))


def longrope(cfg, rs, seq_len):
    """LongRoPE as transformers reads it: the original context from the top-level
    original_max_position_embeddings (its ratio to max_position_embeddings the factor), long_factor
    once the sequence is longer than it, and cos/sin scaled by the attention factor."""
    if "original_max_position_embeddings" in cfg:
        original = cfg["original_max_position_embeddings"]
        factor = cfg["max_position_embeddings"] / original
    else:
        original = cfg["max_position_embeddings"]
        factor = rs.get("factor", 1.0)
    attention = rs.get("attention_factor")
    if attention is None:
        attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(original))
    ext = torch.tensor(rs["long_factor"] if seq_len > original else rs["short_factor"], dtype=torch.float64)
    return ext, attention


def inv_freq(cfg, seq_len, local=False):
    """Full layers: rope_theta with rope_scaling; Gemma 3's sliding layers: rope_local_base_freq,
    unscaled. Returns the frequencies and the factor on cos and sin (LongRoPE's; else 1)."""
    dim = rotary_dim(cfg)
    base = cfg.get("rope_local_base_freq", 10000.0) if local else cfg.get("rope_theta", 10000.0)
    f = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    rs = None if local else cfg.get("rope_scaling")
    scale = 1.0
    if rs:
        kind = rs.get("rope_type", rs.get("type"))
        if kind == "linear":
            f = f / rs["factor"]
        elif kind == "llama3":
            factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
            old = rs["original_max_position_embeddings"]
            wavelen = 2 * math.pi / f
            scaled = torch.where(wavelen > old / lo, f / factor, f)
            smooth = (old / wavelen - lo) / (hi - lo)
            smoothed = (1 - smooth) * scaled / factor + smooth * scaled
            medium = (wavelen >= old / hi) & (wavelen <= old / lo)
            f = torch.where(medium, smoothed, scaled)
        elif kind == "longrope":
            ext, scale = longrope(cfg, rs, seq_len)
            f = f / ext
    return f, scale


def rms_norm(x, w, eps, offset=0.0):
    """Gemma's weights are offsets: its norm multiplies by 1 + w (offset 1)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (offset + w)


def rotate(x, pos, rope):
    # x: (heads, T, d); Hugging Face layout: of the first r = 2·len(freqs) dimensions, i pairs with
    # i + r/2; the dimensions after r pass through (partial_rotary_factor).
    freqs, scale = rope
    angles = pos[:, None].to(torch.float64) * freqs[None, :]
    cos = (torch.cat([angles.cos(), angles.cos()], -1) * scale).to(torch.float32)
    sin = (torch.cat([angles.sin(), angles.sin()], -1) * scale).to(torch.float32)
    r = 2 * freqs.shape[0]
    xr, rest = x[..., :r], x[..., r:]
    half = r // 2
    rot = torch.cat([-xr[..., half:], xr[..., :half]], -1)
    return torch.cat([xr * cos + rot * sin, rest], -1)


def layer_window(cfg, layer):
    """Hugging Face's rule: Mistral and Phi-3 slide in every layer with a sliding_window; Qwen2/Qwen3 only
    with use_sliding_window, in the layers from max_window_layers on; Gemma 2 in every other layer
    from the first; Gemma 3 in all but every sliding_window_pattern-th layer (or, for each, as
    layer_types lists)."""
    arch = cfg["architectures"][0]
    window = cfg.get("sliding_window")
    if arch in ("Qwen2ForCausalLM", "Qwen3ForCausalLM") and not cfg.get("use_sliding_window", False):
        return None
    if arch not in ("MistralForCausalLM", "Phi3ForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", GEMMA2, GEMMA3) or not window:
        return None
    if "layer_types" in cfg:
        return window if cfg["layer_types"][layer] == "sliding_attention" else None
    if arch == GEMMA2:
        return window if layer % 2 == 0 else None
    if arch == GEMMA3:
        return window if (layer + 1) % cfg.get("sliding_window_pattern", 6) != 0 else None
    if arch in ("MistralForCausalLM", "Phi3ForCausalLM"):
        return window
    return window if layer >= cfg.get("max_window_layers", 28) else None


def forward(cfg, w, tokens, dtype):
    arch = cfg["architectures"][0]
    gemma = arch in (GEMMA2, GEMMA3)
    eps = cfg["rms_norm_eps"]
    one = 1.0 if gemma else 0.0
    H, KV, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg)
    T = len(tokens)
    pos = torch.arange(T)
    x = w["model.embed_tokens.weight"][torch.tensor(tokens)]
    if gemma:
        # Hugging Face multiplies by sqrt(hidden) cast to the weights' dtype (33.94 is 34 in bf16).
        wdtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dtype]
        x = x * torch.tensor(math.sqrt(cfg["hidden_size"])).to(wdtype).to(torch.float32)
    scale = cfg.get("query_pre_attn_scalar", D) ** -0.5 if gemma else D ** -0.5
    causal = torch.full((T, T), float("-inf")).triu(1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        window = layer_window(cfg, l)
        freqs = inv_freq(cfg, T, local=arch == GEMMA3 and window is not None)
        mask = causal  # each position attends to the last `window` positions, itself included
        if window:
            mask = causal + torch.full((T, T), float("-inf")).tril(-window)
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps, one)

        def proj(name, inp):
            y = inp @ w[p + name + ".weight"].T
            if p + name + ".bias" in w:
                y = y + w[p + name + ".bias"]
            return y

        if arch == "Phi3ForCausalLM":  # q, k, v as consecutive rows of one qkv_proj
            qkv = proj("self_attn.qkv_proj", h)
            q, k, v = qkv[:, :H * D], qkv[:, H * D:(H + KV) * D], qkv[:, (H + KV) * D:]
        else:
            q, k, v = proj("self_attn.q_proj", h), proj("self_attn.k_proj", h), proj("self_attn.v_proj", h)
        q = q.reshape(T, H, D).transpose(0, 1)
        k = k.reshape(T, KV, D).transpose(0, 1)
        v = v.reshape(T, KV, D).transpose(0, 1)
        if arch in ("Qwen3ForCausalLM", GEMMA3):
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps, one)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps, one)
        q, k = rotate(q, pos, freqs), rotate(k, pos, freqs)
        k = k.repeat_interleave(H // KV, 0)
        v = v.repeat_interleave(H // KV, 0)
        scores = q @ k.transpose(1, 2) * scale
        cap = cfg.get("attn_logit_softcapping")
        if cap:  # Gemma 2: scores capped by tanh before the mask and the softmax
            scores = cap * torch.tanh(scores / cap)
        att = torch.softmax(scores + mask, -1) @ v
        o = proj("self_attn.o_proj", att.transpose(0, 1).reshape(T, H * D))
        if gemma:  # Gemma normalises each sub-layer's output too, before the residual
            x = x + rms_norm(o, w[p + "post_attention_layernorm.weight"], eps, one)
            h = rms_norm(x, w[p + "pre_feedforward_layernorm.weight"], eps, one)
        else:
            x = x + o
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if arch == "Phi3ForCausalLM":  # gate then up, as the two halves of one gate_up_proj
            g, u = (h @ w[p + "mlp.gate_up_proj.weight"].T).chunk(2, -1)
        else:
            g = h @ w[p + "mlp.gate_proj.weight"].T
            u = h @ w[p + "mlp.up_proj.weight"].T
        if gemma:
            m = (torch.nn.functional.gelu(g, approximate="tanh") * u) @ w[p + "mlp.down_proj.weight"].T
            x = x + rms_norm(m, w[p + "post_feedforward_layernorm.weight"], eps, one)
        else:
            x = x + (torch.nn.functional.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps, one)
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    logits = x[-1] @ head.T
    cap = cfg.get("final_logit_softcapping")
    if cap:
        logits = cap * torch.tanh(logits / cap)
    return logits, x[-1]


def check_longrope_regime(cfg, prompt, context):
    """The engine's rule (long factors iff its context exceeds the original) and transformers' (iff
    the sequence does) must agree on every forward pass of this case, or the fixture tests neither."""
    rs = cfg.get("rope_scaling") or {}
    if rs.get("rope_type", rs.get("type")) != "longrope":
        return
    original = cfg.get("original_max_position_embeddings", cfg["max_position_embeddings"])
    for length in range(len(prompt), len(prompt) + STEPS + 1):
        if (length > original) != (context > original):
            raise SystemExit(f"a sequence of {length} tokens and a context of {context} pick different LongRoPE factors"
                             f" (original {original}): choose a config or CONTEXT on one side")


def run(cfg, w, prompt, dtype, context):
    check_longrope_regime(cfg, prompt, context)
    tokens = list(prompt)
    logits, generated, hidden = [], [], None
    for step in range(STEPS + 1):
        out, last = forward(cfg, w, tokens, dtype)
        logits.append([float("%.7g" % float(v)) for v in out])
        if step == 0:
            hidden = [float("%.7g" % float(v)) for v in last]
        if step < STEPS:
            nxt = int(torch.argmax(out))
            generated.append(nxt)
            tokens.append(nxt)
    return {"prompt": prompt, "generated": generated, "logits": logits, "hidden": hidden}


def main():
    out_path, model_dir, seed, dtype = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    torch.set_num_threads(2)
    with open(f"{model_dir}/config.json") as f:
        cfg = json.load(f)
    context = int(sys.argv[5]) if len(sys.argv) > 5 else cfg["max_position_embeddings"]
    w, digest = load_safetensors(f"{model_dir}/model.safetensors")
    quantization = os.environ.get("QUANTIZE") or None
    if quantization not in (None, "q8_0", "q4_0"):
        raise SystemExit(f"QUANTIZE={quantization}: q8_0 or q4_0")
    if quantization:
        w = quantize(w, quantization)
    lora = os.environ.get("LORA") or None
    if lora:
        w, lora_digest = merge_lora(w, lora)
    vocab = cfg["vocab_size"]
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(0, vocab, (23,), generator=g).tolist()
    b = a[:16] + torch.randint(0, vocab, (9,), generator=g).tolist()
    fixture = {
        "config": cfg,
        "seed": seed,
        "dtype": dtype,
        "sha256": digest,
        "torch": torch.__version__,
        "cases": [run(cfg, w, a, dtype, context), run(cfg, w, b, dtype, context)],
    }
    if len(sys.argv) > 5:
        fixture["context"] = context
    if quantization:
        fixture["quantization"] = quantization
    if lora:
        fixture["lora"] = dict(json.loads(os.environ["LORA_SPEC"]), sha256=lora_digest)
    with open(out_path, "w") as f:
        json.dump(fixture, f)


if __name__ == "__main__":
    main()
