#!/usr/bin/env python3
"""make_4b_books.py OUTDIR — the random-weight Qwen3.5-4B-shaped model of make_parity_models.py
(same config and parameters), saved as bf16 safetensors under OUTDIR/qwen3_5_4b, without the
transformers reference forward (the batching benchmark of run_gpu_batch.sh needs the weights
only). Runs on the GPU machine."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import make_parity_models as mp  # noqa: E402


def main(out):
    d = os.path.join(out, "qwen3_5_4b")
    if os.path.exists(os.path.join(d, "config.json")):
        return 0
    t0 = time.time()
    torch.manual_seed(mp.SEED)
    gen = torch.Generator().manual_seed(mp.SEED)
    family, cfg, cls = mp.build("qwen3_5_4b")
    with torch.device("cuda"):
        model = cls(cfg).float().eval()
    mp.init_params(model, family, gen)
    a_logs = {k: v.detach().clone() for k, v in model.named_parameters() if k.endswith("A_log")}
    model = model.to(torch.bfloat16)
    with torch.no_grad():
        for k, v in model.named_parameters():
            if k in a_logs:
                v.data = a_logs[k]
    os.makedirs(d, exist_ok=True)
    model.save_pretrained(d, safe_serialization=True, max_shard_size="4GB")
    print(f"saved {sorted(os.listdir(d))} ({time.time() - t0:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
