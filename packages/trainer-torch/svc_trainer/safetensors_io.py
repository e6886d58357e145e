"""The safetensors format with torch alone: u64 little-endian header length N,
N bytes of JSON ({name: {dtype, shape, data_offsets}, "__metadata__": {...}}),
then the tensors' bytes."""

import json
import struct

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def read_safetensors(path):
    """(tensors {name: float32 tensor}, metadata {str: str}); F32, F16 and BF16 are read, others refused."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: shorter than its 8-byte header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise ValueError(f"{path}: header length {n} exceeds the file size")
    header = json.loads(data[8 : 8 + n].decode("utf8"))
    start = 8 + n
    metadata = header.pop("__metadata__", None) or {}
    tensors = {}
    for name, info in header.items():
        dtype = DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name} has dtype {info['dtype']} (only F32, F16, BF16 are read)")
        begin, end = info["data_offsets"]
        raw = bytearray(data[start + begin : start + end])
        t = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
        tensors[name] = t.reshape(info["shape"]).to(torch.float32)
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """Writes float32 tensors (in the given order) with string metadata."""
    header = {}
    chunks = []
    offset = 0
    for name, t in tensors:
        raw = t.detach().to("cpu", torch.float32).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode("utf8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in chunks:
            f.write(raw)
