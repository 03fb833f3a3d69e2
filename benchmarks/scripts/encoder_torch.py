#!/usr/bin/env python3
"""PyTorch's rate on the same encoder (the anchor of encoder_embed.sh): the forward pass of
engine-adapters/src/test/python/reference_encoder.py in float32, eager. Its matrix products run on
OpenBLAS's THREADS threads (OPENBLAS_NUM_THREADS, set by the caller) and the rest on one torch
thread (TORCH_THREADS, default 1): on this project's 2-core machine the fastest of the four
settings of 1 or 2 each at 128 tokens (two of each contend: 6x slower).

    OPENBLAS_NUM_THREADS=2 python3 encoder_torch.py MODEL_DIR SHAPE TOKENS INPUTS THREADS
"""
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../engine-adapters/src/test/python"))
import torch  # noqa: E402
import reference_encoder as ref  # noqa: E402


def main():
    model, shape, tokens, inputs, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    torch.set_num_threads(int(os.environ.get("TORCH_THREADS", "1")))
    cfg = json.load(open(f"{model}/config.json"))
    w, _ = ref.load_safetensors(f"{model}/model.safetensors")
    w = {k: v.to(torch.float32) for k, v in w.items()}
    rnd = random.Random(3)
    with torch.no_grad():
        for rnd_i in range(3):
            n = max(2, inputs // 4) if rnd_i < 2 else inputs
            start = time.perf_counter()
            for _ in range(n):
                ids = [2] + [10 + rnd.randrange(90) for _ in range(tokens - 2)] + [3]
                states = ref.forward(cfg, w, ids)
                states.mean(0)
            s = time.perf_counter() - start
    print(f"pytorch {shape} tokens={tokens} threads={threads}: {n / s:.2f} inputs/s, {n * tokens / s:.0f} tokens/s, {1000 * s / n:.1f} ms an input")


if __name__ == "__main__":
    main()
