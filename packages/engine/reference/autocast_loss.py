"""The mean next-token loss of a model folder on given token rows, in fp32 and
under PyTorch's bf16 autocast on the CPU (the peer of svc's bf16 training):

    python3 autocast_loss.py MODEL_DIR '[[ids...], [ids...]]'

Prints one JSON object: fp32, bf16_autocast (the losses), torch and
transformers (their versions). Every position but each row's last is
labelled with the next token, as the engine's test labels them."""

import json
import sys

import torch
import transformers
from transformers import AutoModelForCausalLM


def main() -> None:
    model_dir, rows = sys.argv[1], json.loads(sys.argv[2])
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    ids = torch.tensor(rows, dtype=torch.long)

    def loss() -> float:
        with torch.no_grad():
            return float(model(input_ids=ids, labels=ids).loss)

    fp32 = loss()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16 = loss()
    print(json.dumps({"fp32": fp32, "bf16_autocast": bf16, "torch": torch.__version__,
                      "transformers": transformers.__version__}))


if __name__ == "__main__":
    main()
