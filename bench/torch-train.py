#!/usr/bin/env python3
"""LoRA training speed of svc's torch backend against transformers + peft, in the same run.

    python3 bench/torch-train.py [--shapes smollm2-135m,qwen2.5-0.5b,llama-3.2-1b]
                                 [--batch 8] [--seq 512] [--rank 16] [--steps 20] [--warmup 5]
                                 [--device cuda] [--peak-tflops 798] [--no-baseline]
                                 [--descriptions FILE | --write-descriptions FILE]

Random weights in each shape's published config (the engine reads it: node and
a built repo are needed, or --descriptions written by --write-descriptions
where they are), bf16 on CUDA (frozen base weights in bf16, LoRA and
AdamW in fp32, matmuls under autocast; transformers + peft: the model in bf16,
eager attention, under the same autocast), LoRA r=16 (alpha 32) on all linear
layers, AdamW, global-norm clipping, random token ids. svc's backend runs as
the trainer runs it (compiled layers on CUDA; SVC_TORCH_COMPILE as there) and,
where that is compiled, eager too. Prints per shape and backend: tokens/s over
the timed steps, peak GPU memory, model-FLOPs utilisation against
--peak-tflops (H100 bf16 dense as measured: 798) and the warm-up's seconds.

MFU counts 6 FLOPs per non-embedding parameter per token plus attention
(12 * layers * seq * hidden), the convention of full training; LoRA skips the
frozen weights' gradients (about 4 per parameter), so its "hardware" FLOPs are
lower — both figures are printed. The target (issue 12): >= 1.5x transformers
+ peft on each shape. `--device cpu --shapes tiny` is a smoke run of the script
(fp32, no autocast, both backends).
"""

import argparse
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "packages", "trainer-torch"))

import torch  # noqa: E402

from svc_trainer.__main__ import compile_setting, compiles  # noqa: E402
from svc_trainer.describe import describe  # noqa: E402
from svc_trainer.lora import attach, resolve_targets, tensor_name  # noqa: E402
from svc_trainer.model import Decoder, module_shape  # noqa: E402
from svc_trainer.trainer import token_loss  # noqa: E402

COMMON = {"hidden_act": "silu", "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2}
SHAPES = {
    "smollm2-135m": {
        **COMMON, "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 576,
        "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3,
        "vocab_size": 49152, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": 100000,
        "tie_word_embeddings": True,
    },
    "qwen2.5-0.5b": {
        **COMMON, "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
        "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
        "vocab_size": 151936, "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "tie_word_embeddings": True, "use_sliding_window": False, "sliding_window": None, "max_window_layers": 21,
    },
    "llama-3.2-1b": {
        **COMMON, "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
        "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
        "head_dim": 64, "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0, "tie_word_embeddings": True,
        "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192},
    },
    # A smoke shape for --device cpu.
    "tiny": {
        **COMMON, "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 512, "max_position_embeddings": 1024, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "tie_word_embeddings": True,
    },
}


def counts(desc):
    """(non-embedding parameters, model FLOPs per token at 6/parameter + attention, LoRA's ~4/parameter)."""
    C, L = desc["hiddenSize"], desc["numHiddenLayers"]
    linear = sum(o * i for o, i in (module_shape(desc, m) for m in desc["modules"])) * L
    return linear, C, L


def flops_per_token(desc, seq):
    linear, C, L = counts(desc)
    head = desc["vocabSize"] * C
    attention = 12 * L * seq * C
    return 6 * (linear + head) + attention, 4 * (linear + head) + attention


def random_batch(generator, vocab, batch, seq, device):
    ids = torch.randint(0, vocab, (batch, seq), generator=generator).to(device)
    targets = torch.full_like(ids, -100)
    targets[:, :-1] = ids[:, 1:]
    return ids, targets


def timed(step, steps, warmup, device):
    """(seconds of the timed steps, peak bytes, seconds of the warm-up steps: compilation included)."""
    began = time.perf_counter()
    for _ in range(warmup):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(device)
    warm = time.perf_counter() - began
    began = time.perf_counter()
    for _ in range(steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - began
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else 0
    return seconds, peak, warm


def description(shape, args):
    """The engine's description of a shape's config: from --descriptions where it
    has one (a GPU box without node), else asked of the engine through node."""
    if args.descriptions and os.path.exists(args.descriptions):
        with open(args.descriptions) as f:
            known = json.load(f)
        if shape in known:
            return known[shape]
    return describe(SHAPES[shape])


def svc_backend(desc, args, device, compiled):
    model = Decoder(desc)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model.to(device, dtype=dtype)
    torch.manual_seed(0)
    with torch.no_grad():  # drawn where the model is (a 1B model's draws are slow on the CPU)
        for name, p in model.named_parameters():
            p.copy_(torch.ones_like(p) if p.dim() == 1 and "norm" in name else torch.randn_like(p) * 0.02)
    if compiled:
        model.compile_layers()
    spec = {"r": args.rank, "alpha": 2 * args.rank, "targetModules": resolve_targets(desc, ["all-linear"])}
    tensors = {}
    for layer in range(desc["numHiddenLayers"]):
        for module in desc["modules"]:
            out_f, in_f = module_shape(desc, module)
            tensors[tensor_name(layer, module, "A")] = (torch.rand(args.rank, in_f) * 2 - 1) / in_f**0.5
            tensors[tensor_name(layer, module, "B")] = torch.zeros(out_f, args.rank)
    params = [p for _, p in attach(model, spec, tensors)]
    fused = {"fused": True} if device.type == "cuda" else {}
    optimizer = torch.optim.AdamW(params, lr=1e-4, **fused)
    bf16 = device.type == "cuda"
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if bf16 else torch.enable_grad
    generator = torch.Generator().manual_seed(1)

    def step():
        ids, targets = random_batch(generator, desc["vocabSize"], args.batch, args.seq, device)
        loss, _ = token_loss(model, ids, targets, autocast)
        (loss / (targets != -100).sum()).backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return timed(step, args.steps, args.warmup, device)


def transformers_peft(config, args, device):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    hf = {k: v for k, v in config.items() if k not in ("architectures", "torch_dtype")}
    cfg = AutoConfig.for_model(**hf)
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    with device:  # initialised on the device
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation="eager")
    model = get_peft_model(model, LoraConfig(r=args.rank, lora_alpha=2 * args.rank, target_modules="all-linear",
                                             lora_dropout=0.0, task_type="CAUSAL_LM"))
    model.to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    cuda = device.type == "cuda"
    optimizer = torch.optim.AdamW(params, lr=1e-4, **({"fused": True} if cuda else {}))
    generator = torch.Generator().manual_seed(1)
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if cuda else torch.enable_grad

    def step():
        ids, _ = random_batch(generator, config["vocab_size"], args.batch, args.seq, device)
        with autocast():
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return timed(step, args.steps, args.warmup, device)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="smollm2-135m,qwen2.5-0.5b,llama-3.2-1b")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--peak-tflops", type=float, default=798.0, help="the GPU's bf16 dense rate (H100: 798)")
    parser.add_argument("--no-baseline", action="store_true", help="skip transformers + peft")
    parser.add_argument("--descriptions", help="a JSON file of the shapes' engine descriptions (for a machine "
                        "without node); --write-descriptions makes it where node and a built repo are")
    parser.add_argument("--write-descriptions", metavar="FILE", help="write every shape's description and exit")
    args = parser.parse_args()
    if args.write_descriptions:
        with open(args.write_descriptions, "w") as f:
            json.dump({shape: describe(config) for shape, config in SHAPES.items()}, f)
        return
    device = torch.device(args.device)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(device) if device.type == 'cuda' else 'cpu'}; "
          f"batch {args.batch} x seq {args.seq}, LoRA r={args.rank} all-linear, {args.steps} timed steps "
          f"after {args.warmup}")
    header = (f"{'shape':<14} {'backend':<22} {'tokens/s':>10} {'peak GiB':>9} {'MFU 6N':>7} {'MFU 4N':>7} "
              f"{'vs peft':>8} {'warm-up s':>10}")
    print(header, flush=True)
    # svc's backend as the trainer runs it (compiled layers on CUDA; SVC_TORCH_COMPILE as in the trainer),
    # and eager beside it where that differs
    compiled = compiles({}, device, compile_setting())
    for shape in args.shapes.split(","):
        config = SHAPES[shape]
        tokens = args.batch * args.seq * args.steps
        rows = []
        desc = description(shape, args)
        full, lora = flops_per_token(desc, args.seq)
        runs = [("svc torch" + (" (compiled)" if compiled else ""), lambda: svc_backend(desc, args, device, compiled))]
        if compiled:
            runs.append(("svc torch (eager)", lambda: svc_backend(desc, args, device, False)))
        if not args.no_baseline:
            runs.append(("transformers + peft", lambda: transformers_peft(config, args, device)))
        for name, run in runs:
            try:
                seconds, peak, warm = run()
            except ImportError as error:
                print(f"  ({name}: not installed: {error})", flush=True)
                continue
            rows.append((name, tokens / seconds, peak, warm))
            torch.cuda.empty_cache() if device.type == "cuda" else None
        baseline = next((rate for name, rate, _, _ in rows if name == "transformers + peft"), None)
        for name, rate, peak, warm in rows:
            mfu = lambda flops: f"{100 * flops * rate / (args.peak_tflops * 1e12):6.1f}%"  # noqa: E731
            ratio = f"{rate / baseline:7.2f}x" if baseline else "      -"
            print(f"{shape:<14} {name:<22} {rate:10.0f} {peak / 2**30:9.2f} {mfu(full)} {mfu(lora)} {ratio} "
                  f"{warm:10.1f}", flush=True)


if __name__ == "__main__":
    main()
