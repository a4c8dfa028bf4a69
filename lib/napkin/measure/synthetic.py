"""A synthetic llama-architecture GGUF: seeded random weights, chosen size and format.

Speed does not depend on what the weights say, only on their shape and format,
so random weights measure a machine as honestly as a real model does, and
need no download. Two choices make the file a clean napkin test:

- no ``output.weight``: llama.cpp then ties the output layer to ``token_embd``,
  so every weight byte is read once per generated token and the tensor data
  equals the bytes read per token;
- few, wide layers (hidden size 2048 or more): narrow layers are bound by
  thread synchronisation, not memory.

Quantized blocks are written directly as random bytes with a sane scale, which
is ten times faster than quantizing random floats. Same seed, same bytes.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["check_format", "data_offset", "FORMATS", "sha256", "Shape", "shape_for_size",
           "SPECIAL_TOKENS", "tensor_bytes", "VOCAB", "write"]

#: Weight formats the synthetic model can be written in, as llama.cpp names them.
FORMATS = ("F16", "Q8_0", "Q4_0")
VOCAB = 32000
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")


@dataclass(frozen=True)
class Shape:
    """Architecture of a synthetic model (llama layout, Hugging Face field meanings)."""

    hidden_size: int = 2048
    num_hidden_layers: int = 2
    num_attention_heads: int = 16
    num_key_value_heads: int = 16
    head_dim: int = 128
    intermediate_size: int = 5632
    vocab_size: int = VOCAB
    context_length: int = 4096

    def __post_init__(self):
        for name, value in vars(self).items():
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"Shape.{name} must be a positive integer, got {value!r}")
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads must be a multiple of num_key_value_heads")
        if self.vocab_size < len(SPECIAL_TOKENS) + 256:
            raise ValueError(f"vocab_size must be at least {len(SPECIAL_TOKENS) + 256}")
        for name in ("hidden_size", "intermediate_size", "head_dim"):
            if getattr(self, name) % 32:
                raise ValueError(f"Shape.{name} must be a multiple of 32 (the quant block)")

    def config(self) -> dict:
        """The Hugging Face ``config.json`` this shape corresponds to."""
        return {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                "hidden_size": self.hidden_size, "num_hidden_layers": self.num_hidden_layers,
                "num_attention_heads": self.num_attention_heads,
                "num_key_value_heads": self.num_key_value_heads, "head_dim": self.head_dim,
                "intermediate_size": self.intermediate_size, "vocab_size": self.vocab_size,
                "max_position_embeddings": self.context_length, "tie_word_embeddings": True}

    def tensors(self) -> list[tuple[str, tuple[int, int] | tuple[int]]]:
        """(name, (rows, columns)) of every tensor, in the order they are written."""
        h, q = self.hidden_size, self.num_attention_heads * self.head_dim
        kv, ffn = self.num_key_value_heads * self.head_dim, self.intermediate_size
        out = [("token_embd.weight", (self.vocab_size, h))]
        for i in range(self.num_hidden_layers):
            out += [(f"blk.{i}.attn_norm.weight", (h,)), (f"blk.{i}.attn_q.weight", (q, h)),
                    (f"blk.{i}.attn_k.weight", (kv, h)), (f"blk.{i}.attn_v.weight", (kv, h)),
                    (f"blk.{i}.attn_output.weight", (h, q)), (f"blk.{i}.ffn_norm.weight", (h,)),
                    (f"blk.{i}.ffn_gate.weight", (ffn, h)), (f"blk.{i}.ffn_up.weight", (ffn, h)),
                    (f"blk.{i}.ffn_down.weight", (h, ffn))]
        return out + [("output_norm.weight", (h,))]


def _block_bytes(fmt: str) -> tuple[int, int]:
    """(weights per block, bytes per block) in llama.cpp's layout."""
    import gguf

    kind = getattr(gguf.GGMLQuantizationType, fmt)
    return gguf.GGML_QUANT_SIZES[kind]


def tensor_bytes(shape: Shape, fmt: str) -> int:
    """Bytes of tensor data a model of this shape and format holds (norms stay F32)."""
    check_format(fmt)
    per_block, block_bytes = _block_bytes(fmt)
    total = 0
    for _, dims in shape.tensors():
        n = int(np.prod(dims))
        total += 4 * n if len(dims) == 1 else n // per_block * block_bytes
    return total


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"synthetic models come in {', '.join(FORMATS)}; got {fmt!r}")


def shape_for_size(target_bytes: float, fmt: str, base: Shape | None = None) -> Shape:
    """The base shape with as many layers as bring the model closest to ``target_bytes``."""
    base = base or Shape(num_hidden_layers=1)
    one = tensor_bytes(Shape(**{**vars(base), "num_hidden_layers": 1}), fmt)
    two = tensor_bytes(Shape(**{**vars(base), "num_hidden_layers": 2}), fmt)
    per_layer, fixed = two - one, 2 * one - two
    layers = max(1, round((target_bytes - fixed) / per_layer))
    return Shape(**{**vars(base), "num_hidden_layers": layers})


def _random_blocks(rng: np.random.Generator, n_weights: int, fmt: str) -> np.ndarray:
    """Random quantized blocks: random payload bytes, every block scale a small float."""
    per_block, block_bytes = _block_bytes(fmt)
    blocks = rng.integers(0, 256, size=(n_weights // per_block, block_bytes), dtype=np.uint8)
    scale = np.frombuffer(np.float16(0.01).tobytes(), dtype=np.uint8)
    blocks[:, :2] = scale  # Q8_0 and Q4_0 both start each block with an F16 scale
    return blocks


def write(path: str | Path, shape: Shape, fmt: str, seed: int = 0) -> Path:
    """Write the model to ``path`` atomically (a partial file is never left behind)."""
    import gguf

    check_format(fmt)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        writer = gguf.GGUFWriter(str(tmp), arch="llama")
        _write_metadata(writer, shape, fmt, seed)
        kind = getattr(gguf.GGMLQuantizationType, fmt)
        for name, dims in shape.tensors():
            if len(dims) == 1:
                writer.add_tensor(name, np.ones(dims, dtype=np.float32))
            elif fmt == "F16":
                data = (rng.standard_normal(dims, dtype=np.float32) * 0.02).astype(np.float16)
                writer.add_tensor(name, data)
            else:
                blocks = _random_blocks(rng, dims[0] * dims[1], fmt)
                writer.add_tensor(name, blocks.reshape(dims[0], -1), raw_dtype=kind)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _write_metadata(writer, shape: Shape, fmt: str, seed: int) -> None:
    import gguf

    file_type = {"F16": gguf.LlamaFileType.MOSTLY_F16, "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
                 "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0}[fmt]
    writer.add_name(f"napkin synthetic llama {fmt} seed {seed}")
    writer.add_context_length(shape.context_length)
    writer.add_embedding_length(shape.hidden_size)
    writer.add_block_count(shape.num_hidden_layers)
    writer.add_feed_forward_length(shape.intermediate_size)
    writer.add_head_count(shape.num_attention_heads)
    writer.add_head_count_kv(shape.num_key_value_heads)
    writer.add_key_length(shape.head_dim)
    writer.add_value_length(shape.head_dim)
    writer.add_rope_dimension_count(shape.head_dim)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(shape.vocab_size)
    writer.add_file_type(int(file_type))
    # A SentencePiece-style vocabulary: special tokens, the 256 byte tokens llama.cpp
    # looks up (it needs <0x0A>), then filler pieces. Benchmarks feed token ids directly.
    fillers = shape.vocab_size - len(SPECIAL_TOKENS) - 256
    tokens = [*SPECIAL_TOKENS, *(f"<0x{b:02X}>" for b in range(256)),
              *(f"t{i}" for i in range(fillers))]
    types = [2, 3, 3] + [6] * 256 + [1] * fillers  # unknown, control, byte, normal
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * shape.vocab_size)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)


def sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def data_offset(path: str | Path) -> int:
    """Where the tensor data starts: everything before it is header and metadata."""
    import gguf

    return gguf.GGUFReader(str(path)).data_offset
