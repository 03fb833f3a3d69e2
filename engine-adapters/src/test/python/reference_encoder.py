#!/usr/bin/env python3
"""An independent BERT encoder forward pass in PyTorch (float64), for EncoderReferenceTest.

Reads a model directory (config.json, model.safetensors: parsed here, no safetensors package
needed) and writes, for a few fixed inputs, the last layer's states pooled four ways (CLS, mean,
max, last token) and the weights' SHA-256, as JSON:

    python3 reference_encoder.py MODEL_DIR OUT.json
"""
import json
import math
import sys

import torch

import reference_logits



def load_safetensors(path):
    """The tensors (float64) and the file's SHA-256, read as reference_logits.py reads a checkpoint."""
    tensors, sha = reference_logits.load_safetensors(path)
    return {name: t.to(torch.float64) for name, t in tensors.items()}, sha


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w + b


def gelu(x, tanh):
    if tanh:
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def forward(cfg, w, ids):
    h, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    d = h // heads
    eps = cfg.get("layer_norm_eps", 1e-12)
    tanh = cfg.get("hidden_act", "gelu") != "gelu"
    offset = 0 if cfg["model_type"] == "bert" else cfg.get("pad_token_id", 1) + 1
    ids_t = torch.tensor(ids)
    pos = torch.arange(len(ids)) + offset
    x = w["embeddings.word_embeddings.weight"][ids_t] + w["embeddings.position_embeddings.weight"][pos] \
        + w["embeddings.token_type_embeddings.weight"][torch.zeros(len(ids), dtype=torch.long)]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    n = len(ids)
    for l in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{l}."
        lin = lambda v, name: v @ w[p + name + ".weight"].T + w[p + name + ".bias"]
        q = lin(x, "attention.self.query").reshape(n, heads, d).transpose(0, 1)
        k = lin(x, "attention.self.key").reshape(n, heads, d).transpose(0, 1)
        v = lin(x, "attention.self.value").reshape(n, heads, d).transpose(0, 1)
        att = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d), dim=-1) @ v
        att = att.transpose(0, 1).reshape(n, h)
        x = layer_norm(lin(att, "attention.output.dense") + x, w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"], eps)
        up = gelu(lin(x, "intermediate.dense"), tanh)
        x = layer_norm(lin(up, "output.dense") + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    return x


def main():
    model, out = sys.argv[1], sys.argv[2]
    cfg = json.load(open(f"{model}/config.json"))
    w, sha = load_safetensors(f"{model}/model.safetensors")
    w = {k[len("roberta."):] if k.startswith("roberta.") else k: v for k, v in w.items()}
    cases = [[2, 3], [2, 17, 20, 21, 3], [2] + [10 + (i * 7) % 60 for i in range(38)] + [3], [2] + [11 + (i * 13) % 70 for i in range(61)] + [3]]
    result = {"weights_sha256": sha, "cases": []}
    for ids in cases:
        states = forward(cfg, w, ids)
        result["cases"].append({
            "ids": ids,
            "cls": states[0].tolist(),
            "mean": states.mean(0).tolist(),
            "max": states.max(0).values.tolist(),
            "last": states[-1].tolist(),
        })
    with open(out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
