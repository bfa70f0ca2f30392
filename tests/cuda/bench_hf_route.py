#!/usr/bin/env python3
"""bench_hf_route.py — the PyTorch route the GPU evaluator replaces (docs/evaluator.md): HF
transformers 5.17 on a random-weight model of the paper's shape in fp32, teacher-forced one token
at a time with use_cache=True (what a researcher patches to quantize the recurrent state per
step), the SSM state of every layer rounded after each step per policy:

  fp32       no rounding (the reference run)
  fp16-sr    every state element stochastically rounded to fp16 (conv:fp16-sr): u = fp32 bits +
             16 random low bits, truncated, as the codec's SR (random bits from torch's generator)

    python3 bench_hf_route.py MODEL_DIR [--positions 256] [--warmup 16]

Prints tokens/s per policy run (the wall time of the decode loop after warm-up, CUDA-synchronised)
and which cache attribute held the states.
"""
import sys
import time

import torch


def state_lists(cache):
    """(where, [(holder, attribute or index)]) of the cache's recurrent (SSM) state tensors: the
    attribute names differ by model and transformers version, so look for names holding
    'recurrent' or 'ssm' on the cache and on its per-layer objects"""
    found = []

    def scan(obj, label):
        for name, v in vars(obj).items():
            if "recurrent" not in name and "ssm" not in name:
                continue
            if isinstance(v, torch.Tensor):
                found.append((obj, name, f"{label}.{name}"))
            elif isinstance(v, list):
                for i, t in enumerate(v):
                    if isinstance(t, torch.Tensor):
                        found.append((v, i, f"{label}.{name}[]"))
    scan(cache, type(cache).__name__)
    for L in getattr(cache, "layers", None) or []:
        scan(L, type(L).__name__)
    where = sorted({f[2] for f in found})
    return (", ".join(where) if where else None), [(f[0], f[1]) for f in found]


def round_fp16_sr(t, gen):
    x = t.float()
    bits = x.view(torch.int32)
    r = torch.randint(0, 1 << 13, x.shape, device=x.device, dtype=torch.int32, generator=gen)
    y = (bits + r) & ~0x1FFF  # fp32 -> fp16 mantissa (13 low bits dropped), SR by adding random bits
    return y.view(torch.float32).to(torch.float16).to(t.dtype)


def run(model, ids, policy, warmup, gen):
    from transformers import DynamicCache  # noqa: F401 (the model makes its own cache)
    cache = None
    where = None
    n = ids.shape[1]
    with torch.no_grad():
        for t in range(n):
            if t == warmup:
                torch.cuda.synchronize()
                t0 = time.time()
            out = model(input_ids=ids[:, t:t + 1], past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            if policy == "fp16-sr":
                where, states = state_lists(cache)
                for holder, key in states:
                    if isinstance(holder, list):
                        holder[key] = round_fp16_sr(holder[key], gen)
                    else:
                        setattr(holder, key, round_fp16_sr(getattr(holder, key), gen))
        torch.cuda.synchronize()
    dt = time.time() - t0
    return (n - warmup) / dt, where


def main(argv):
    P, W = 256, 16
    if "--positions" in argv:
        i = argv.index("--positions")
        P = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    if "--warmup" in argv:
        i = argv.index("--warmup")
        W = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    from transformers import AutoModelForCausalLM
    t0 = time.time()
    m = AutoModelForCausalLM.from_pretrained(argv[0], dtype=torch.float32).cuda().eval()
    print(f"loaded {argv[0]} in {time.time() - t0:.1f} s ({type(m).__name__})", flush=True)
    gen = torch.Generator(device="cuda").manual_seed(1)
    ids = torch.randint(0, m.config.vocab_size, (1, P), device="cuda", generator=gen)
    for pol in ("fp32", "fp16-sr"):
        tps, where = run(m, ids, pol, W, gen)
        print(f"HF route {pol}: {tps:.1f} tokens/s per policy run ({P - W} timed positions after {W} warm-up; "
              f"state attribute: {where})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
