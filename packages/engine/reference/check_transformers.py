#!/usr/bin/env python3
"""Check the reference (families.py) against transformers 5 + peft themselves.

For a machine that has transformers 5, peft and torch (a GPU is used when
there is one; this cannot run where the fixtures are made, which has neither
library). For every case in cases.py (or the ones named) it

  1. writes the case's authored config.json (the v5 or classic form make_fixtures
     writes) and loads it with AutoConfig, builds AutoModelForCausalLM.from_config
     (eager attention, fp32), fills the weights with the same kind of random values
     as make_fixtures (rounded to the case's dtype) and save_pretrained's it in that
     dtype (safetensors): config.json and model.safetensors are transformers' own;
  2. computes transformers' logits for the two sequences, the loss of the padded
     batch, greedy continuations (6 + 8 tokens, each by a forward pass of the
     sequence so far; whether generate() agrees is reported too);
  3. wraps it with peft (LoraConfig r=4, alpha=8, target_modules="all-linear"),
     makes every lora_B non-zero, saves the adapter, computes LoRA logits, the LoRA
     gradients of the padded-batch loss and one clipped AdamW step;
  4. runs the repo's reference on the saved folder (configs.parse of transformers'
     config.json, families.forward on the saved weights and adapter) and compares:
     logits, loss and gradients within 1e-5 (max |a - b| / max |b|), greedy tokens equal;
  5. compares the key set of transformers' config.json with what make_fixtures
     writes for the v5 form (config_json.v5_config).

The cases are cases.py's LEGACY and NEW (the authored configs make_fixtures
writes) and DEFAULTS (each family's config class at its defaults, made tiny).
Everything is written to OUT/<case>/ in the fixture layout (golden values are
transformers'), plus OUT/<case>/report.json and OUT/report.json; the committed
copy is ../fixtures-transformers (its README.md says how it was made).

Run: python3 check_transformers.py OUT [case ...]     (exit status 1 on any mismatch)
"""

import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cases import DEFAULTS, LEGACY, NEW  # noqa: E402
from config_json import classic_config, v5_config  # noqa: E402
from configs import parse  # noqa: E402
from families import batch_loss, forward  # noqa: E402
from fixture_io import read_safetensors, write_safetensors, write_tokenizer  # noqa: E402
from make_fixtures import BETAS, EPS, LORA_ALPHA, LORA_R, LR, WD, legacy_config  # noqa: E402

TOL = 1e-5
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def rel(a, b):
    a, b = a.detach().double().cpu(), b.detach().double().cpu()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def authored_config(case, legacy):
    if legacy:
        return legacy_config(case)[0]
    if case["form"] == "defaults":
        return dict(case["config"])
    c = dict(case, dtype_name=str(case["dtype"]).replace("torch.", ""))
    return v5_config(c) if c["form"] == "v5" else classic_config(c)


def randomize(model, case, g, tied):
    """Same distributions as make_fixtures, rounded to the case's dtype."""
    gemma = model.config.model_type == "gemma3_text"
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                t = torch.randn(p.shape, generator=g) * 0.1 + (0.0 if gemma else 1.0)
            elif "embed_tokens" in name:
                t = torch.randn(p.shape, generator=g) * (case.get("embed_std") or (0.4 if tied else 1.0))
            elif name.startswith("lm_head"):
                t = torch.randn(p.shape, generator=g) * 0.2
            elif name.endswith(".bias"):
                t = torch.randn(p.shape, generator=g) * 0.05
            else:
                t = torch.randn(p.shape, generator=g) * 0.15
            p.copy_(t.to(case["dtype"]).to(torch.float32))


def greedy_hf(model, prompt, n):
    """Greedy tokens by transformers' forward of the whole sequence so far (no cache)."""
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(n):
            logits = model(torch.tensor([ids], device=DEVICE), use_cache=False).logits[0, -1]
            ids.append(int(torch.argmax(logits)))
    return ids[len(prompt):]


def generate_hf(model, prompt, n):
    """transformers' generate() (KV cache). For a longrope model whose sequence
    crosses original_max_position_embeddings it disagrees with its own forward
    pass (transformers 5.18); the report records whether it agrees."""
    from transformers import GenerationConfig

    gc = GenerationConfig(do_sample=False, max_new_tokens=n, eos_token_id=None, pad_token_id=0, bos_token_id=1)
    out = model.generate(torch.tensor([prompt], device=DEVICE), generation_config=gc,
                         attention_mask=torch.ones(1, len(prompt), dtype=torch.long, device=DEVICE))
    return out[0, len(prompt):].tolist()


def greedy_ref(spec, W, prompt, n, lora=None):
    ids = list(prompt)
    with torch.no_grad():
        for _ in range(n):
            ids.append(int(torch.argmax(forward(spec, W, ids, lora)[-1])))
    return ids[len(prompt):]


def peft_name(param_name):
    return param_name.replace(".default", "")


def load_reference(folder, trainable=False):
    cfg = json.load(open(os.path.join(folder, "config.json")))
    spec = parse(cfg)
    W = {k: v.float() for k, v in read_safetensors(os.path.join(folder, "model.safetensors")).items()}
    lora = None
    adapter = os.path.join(folder, "adapter", "adapter_model.safetensors")
    tensors = {}
    if os.path.exists(adapter):
        acfg = json.load(open(os.path.join(folder, "adapter", "adapter_config.json")))
        tensors = {k: v.float().clone().requires_grad_(trainable) for k, v in read_safetensors(adapter).items()}
        layers = [dict() for _ in range(spec["layers"])]
        for name, t in tensors.items():
            if not name.endswith("lora_A.weight"):
                continue
            parts = name.split(".")
            l, module = int(parts[4]), parts[6]
            layers[l][module] = (t, tensors[name.replace("lora_A", "lora_B")])
        lora = {"scale": acfg["lora_alpha"] / acfg["r"], "layers": layers}
    return cfg, spec, W, lora, tensors


def run_case(case, out, legacy=False):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    folder = os.path.join(out, case["name"])
    os.makedirs(folder, exist_ok=True)
    authored = authored_config(case, legacy)
    with open(os.path.join(folder, "config.authored.json"), "w") as f:
        json.dump(authored, f, indent=2, sort_keys=True)
    authored_dir = os.path.join(folder, "authored")
    os.makedirs(authored_dir, exist_ok=True)
    with open(os.path.join(authored_dir, "config.json"), "w") as f:
        json.dump(authored, f, indent=2, sort_keys=True)
    config = AutoConfig.from_pretrained(authored_dir)
    g = torch.Generator().manual_seed(case["seed"])
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32)
    tied = bool(getattr(config, "tie_word_embeddings", False))
    randomize(model, case, g, tied)
    model.to(case["dtype"]).save_pretrained(folder, safe_serialization=True)
    # compute with the saved folder as a user loads it (fp32): a model cast to
    # half and back in memory would also round its rotary and scale buffers
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32)
    model.to(DEVICE).eval()
    write_tokenizer(folder)

    lengths = [13, 8]
    seqs = [torch.randint(3, 259, (n,), generator=g).tolist() for n in lengths]
    seqs[0][0] = 1
    T, pad = max(lengths), 2
    labels = [[-100] * 4 + s[4:] for s in seqs]
    padded_ids = [s + [pad] * (T - len(s)) for s in seqs]
    padded_labels = [lab + [-100] * (T - len(lab)) for lab in labels]
    mask = [[1] * n + [0] * (T - n) for n in lengths]
    prompt = seqs[0][:6]

    golden, report = [], {"case": case["name"], "device": DEVICE, "checks": {}}
    with torch.no_grad():
        for i, s in enumerate(seqs):
            golden.append((f"logits.{i}", model(input_ids=torch.tensor([s], device=DEVICE)).logits[0].float().cpu()))
    greedy_base = greedy_hf(model, prompt, 8)
    generate_agrees = generate_hf(model, prompt, 8) == greedy_base

    lcfg = LoraConfig(r=LORA_R, lora_alpha=LORA_ALPHA, lora_dropout=0.0, target_modules="all-linear",
                      task_type="CAUSAL_LM")
    pm = get_peft_model(model, lcfg)
    lora_params = [(peft_name(n), p) for n, p in pm.named_parameters() if "lora_" in n]
    with torch.no_grad():
        for n, p in lora_params:
            if "lora_B" in n:
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    pm.save_pretrained(os.path.join(folder, "adapter"))
    pm.eval()
    with torch.no_grad():
        for i, s in enumerate(seqs):
            golden.append((f"logits_lora.{i}", pm(input_ids=torch.tensor([s], device=DEVICE)).logits[0].float().cpu()))
    greedy_lora = greedy_hf(pm, prompt, 8)

    before = {n: p.detach().clone() for n, p in lora_params}
    loss = pm(input_ids=torch.tensor(padded_ids, device=DEVICE), attention_mask=torch.tensor(mask, device=DEVICE),
              labels=torch.tensor(padded_labels, device=DEVICE)).loss
    loss.backward()
    params = [p for _, p in lora_params]
    for n, p in lora_params:
        golden.append((f"grad.{n}", p.grad.detach().float().cpu().clone()))
    grad_norm = float(torch.sqrt(sum((p.grad.double() ** 2).sum() for p in params)))
    max_grad_norm = round(grad_norm * 0.5, 6)
    torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
    torch.optim.AdamW(params, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD).step()
    for n, p in lora_params:
        golden.append((f"updated.{n}", p.detach().float().cpu().clone()))
    write_safetensors(os.path.join(folder, "golden.safetensors"), golden, {"format": "pt"})
    targets = sorted({n.split(".")[-3] for n, _ in lora_params})
    meta = {
        "input_ids": padded_ids, "labels": padded_labels, "lengths": lengths, "loss": float(loss),
        "grad_norm": grad_norm, "lora": {"r": LORA_R, "alpha": LORA_ALPHA, "targets": targets},
        "adamw": {"lr": LR, "weight_decay": WD, "beta1": BETAS[0], "beta2": BETAS[1], "eps": EPS,
                  "max_grad_norm": max_grad_norm},
        "greedy": {"prompt": prompt, "base": greedy_base, "lora": greedy_lora},
        "torch_version": torch.__version__, "source": "transformers",
    }
    with open(os.path.join(folder, "golden.json"), "w") as f:
        json.dump(meta, f, indent=1)

    # the reference on transformers' own files
    G = dict(golden)
    cfg, spec, W, lora, tensors = load_reference(folder, trainable=True)
    checks = report["checks"]
    with torch.no_grad():
        for i, s in enumerate(seqs):
            checks[f"logits.{i}"] = rel(forward(spec, W, s), G[f"logits.{i}"])
            checks[f"logits_lora.{i}"] = rel(forward(spec, W, s, lora), G[f"logits_lora.{i}"])
    ref_loss = batch_loss(spec, W, seqs, labels, lora)
    ref_loss.backward()
    checks["loss"] = abs(float(ref_loss) - float(loss)) / abs(float(loss))
    checks["grads"] = max(rel(t.grad, G[f"grad.{n}"]) for n, t in tensors.items())
    with torch.no_grad():
        for n, t in tensors.items():
            checks[f"init.{n}"] = rel(t, before[n].float().cpu())
    checks["init"] = max(checks.pop(k) for k in [k for k in checks if k.startswith("init.")])
    report["greedy_equal"] = (greedy_ref(spec, W, prompt, 8) == greedy_base
                              and greedy_ref(spec, W, prompt, 8, lora) == greedy_lora)
    report["targets"] = targets
    report["generate_agrees_with_forward"] = generate_agrees
    report["ok"] = report["greedy_equal"] and all(v <= TOL for v in checks.values())
    if not legacy and case["form"] == "v5":
        written = set(cfg)
        ours = set(authored)
        report["config_keys"] = {"written_not_authored": sorted(written - ours),
                                 "authored_not_written": sorted(ours - written)}
    report["config_written"] = cfg
    with open(os.path.join(folder, "report.json"), "w") as f:
        json.dump(report, f, indent=1, default=str)
    status = "ok" if report["ok"] else "MISMATCH"
    print(f"{case['name']}: {status} " + " ".join(f"{k}={v:.2e}" for k, v in checks.items())
          + f" greedy_equal={report['greedy_equal']}", flush=True)
    return report


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    out, wanted = sys.argv[1], set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    reports = []
    for legacy, group in ((True, LEGACY), (False, NEW), (False, DEFAULTS)):
        for case in group:
            if wanted and case["name"] not in wanted:
                continue
            try:
                reports.append(run_case(case, out, legacy))
            except Exception as e:  # keep going: one family failing says nothing of the others
                print(f"{case['name']}: ERROR {type(e).__name__}: {e}", flush=True)
                reports.append({"case": case["name"], "ok": False, "error": f"{type(e).__name__}: {e}"})
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(reports, f, indent=1, default=str)
    bad = [r["case"] for r in reports if not r.get("ok")]
    print(f"{len(reports) - len(bad)} passed, {len(bad)} failed" + (f": {', '.join(bad)}" if bad else ""))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
