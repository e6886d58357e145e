#!/usr/bin/env python3
"""Read what svc writes with transformers 5 and peft themselves.

ARTIFACTS is make_svc_artifacts.mjs's output, FIXTURES the committed fixture
folders (packages/engine/fixtures). For every case:

  - the fixture model (made by make_fixtures.py with the repo's reference)
    loads with AutoModelForCausalLM.from_pretrained and its logits are the
    fixture's golden logits (so the reference agrees with transformers);
  - peft's "all-linear" on it adapts the modules svc's "all-linear" names;
  - svc's adapter loads with PeftModel.from_pretrained, and svc's merged
    folder with from_pretrained, both giving the engine's logits.

Logits within 1e-4 (max |a - b| / max |b|). Writes OUT/svc-artifacts.json;
exit status 1 on any mismatch.

Run: python3 check_svc_artifacts.py ARTIFACTS FIXTURES OUT
"""

import copy
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_transformers import DEVICE, rel  # noqa: E402
from fixture_io import read_safetensors  # noqa: E402

TOL = 1e-4


def logits_of(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids], device=DEVICE)).logits[0].float().cpu()


def check(name, artifacts, fixtures):
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM

    art = os.path.join(artifacts, name)
    expected = json.load(open(os.path.join(art, "expected.json")))
    base_dir = os.path.join(fixtures, expected["base"])
    golden = read_safetensors(os.path.join(base_dir, "golden.safetensors"))
    ids = expected["input_ids"]
    load = dict(attn_implementation="eager", dtype=torch.float32)
    checks = {}

    base = AutoModelForCausalLM.from_pretrained(base_dir, **load).to(DEVICE).eval()
    checks["fixture_logits"] = rel(logits_of(base, ids), golden["logits.0"])

    probe = get_peft_model(copy.deepcopy(base), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    peft_targets = sorted({n.split(".")[-1] for n, m in probe.named_modules() if hasattr(m, "lora_A")})
    targets_equal = peft_targets == sorted(expected["targets"])

    want = torch.tensor(expected["logits_lora"]).view(len(ids), -1)
    adapted = PeftModel.from_pretrained(base, os.path.join(art, "adapter")).to(DEVICE).eval()
    checks["peft_logits"] = rel(logits_of(adapted, ids), want)
    merged = AutoModelForCausalLM.from_pretrained(os.path.join(art, "merged"), **load).to(DEVICE).eval()
    checks["merged_logits"] = rel(logits_of(merged, ids), want)

    ok = targets_equal and all(v <= TOL for v in checks.values())
    print(f"{name}: {'ok' if ok else 'MISMATCH'} " + " ".join(f"{k}={v:.2e}" for k, v in checks.items())
          + f" targets_equal={targets_equal}" + ("" if targets_equal else f" peft={peft_targets}"), flush=True)
    return {"case": name, "ok": ok, "checks": checks, "targets_equal": targets_equal,
            "peft_targets": peft_targets, "svc_targets": expected["targets"]}


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    artifacts, fixtures, out = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    reports = []
    for name in sorted(os.listdir(artifacts)):
        try:
            reports.append(check(name, artifacts, fixtures))
        except Exception as e:  # one case failing says nothing of the others
            print(f"{name}: ERROR {type(e).__name__}: {e}", flush=True)
            reports.append({"case": name, "ok": False, "error": f"{type(e).__name__}: {e}"})
    with open(os.path.join(out, "svc-artifacts.json"), "w") as f:
        json.dump(reports, f, indent=1)
    bad = [r["case"] for r in reports if not r["ok"]]
    print(f"{len(reports) - len(bad)} passed, {len(bad)} failed" + (f": {', '.join(bad)}" if bad else ""))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
