"""svc's PyTorch training backend: the engine's model families, LoRA and trainer on torch alone.

The model is built from the engine's block description (docs/gpu-training.md),
so a family means the same computation on both backends; adapters, checkpoints
and the training events are the engine's, so either backend resumes the other's
checkpoints and the engine serves adapters trained here.
"""

__version__ = "0.1.0"
