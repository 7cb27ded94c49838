#!/usr/bin/env python3
"""Writes a Llama-shaped GGUF model whose weights are RANDOM, with llama.cpp's gguf-py.

No model can be downloaded on the GPU machine, and the pool comparisons need none: what the
pools see (tensor shapes, KV cache, scratch sizes) is the shape's, not the weights'. The output
of such a model is noise, but it is deterministic, so greedy generation must still match token
for token across pool configurations. The tokenizer comes from llama.cpp's vocabulary-only file.

Every weight tensor is a window of one block of normal random numbers (scale 0.02), tiled: fast
enough to write an 8B model in seconds, and still random-looking to every kernel.

    scripts/llama-model.py --llama-cpp DIR --shape 1b --out llama-1b-f16.gguf
"""
import argparse
import os
import sys

import numpy as np

# (n_embd, n_layer, n_head, n_head_kv, n_ff): TinyLlama 1.1B, and Llama 3 8B (with the
# 32000-token vocabulary of the vocabulary file)
SHAPES = {
    "1b": (2048, 22, 32, 4, 5632),
    "8b": (4096, 32, 32, 8, 14336),
}
CONTEXT_LENGTH = 65536            # room for a 32768-token depth plus the prompt
RMS_EPS = 1e-5
ROPE_FREQ_BASE = 10000.0
WEIGHT_SCALE = 0.02               # a trained model's order of magnitude: activations stay finite
BLOCK_VALUES = 1 << 24            # the random block every tensor takes a window of
FILE_TYPE_F16 = 1                 # llama_ftype MOSTLY_F16
VOCAB_FILE = os.path.join("models", "ggml-vocab-llama-spm.gguf")
TOKENIZER_KEYS = (                # copied from the vocabulary file as they are
    "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.scores",
    "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
)


def tensors(n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab):
    """(name, numpy shape, dtype) of every tensor; numpy shapes are ggml's ne reversed"""
    n_embd_kv = n_embd // n_head * n_head_kv
    yield "token_embd.weight", (n_vocab, n_embd), np.float16
    for i in range(n_layer):
        yield f"blk.{i}.attn_norm.weight", (n_embd,), np.float32
        yield f"blk.{i}.attn_q.weight", (n_embd, n_embd), np.float16
        yield f"blk.{i}.attn_k.weight", (n_embd_kv, n_embd), np.float16
        yield f"blk.{i}.attn_v.weight", (n_embd_kv, n_embd), np.float16
        yield f"blk.{i}.attn_output.weight", (n_embd, n_embd), np.float16
        yield f"blk.{i}.ffn_norm.weight", (n_embd,), np.float32
        yield f"blk.{i}.ffn_gate.weight", (n_ff, n_embd), np.float16
        yield f"blk.{i}.ffn_up.weight", (n_ff, n_embd), np.float16
        yield f"blk.{i}.ffn_down.weight", (n_embd, n_ff), np.float16
    yield "output_norm.weight", (n_embd,), np.float32
    yield "output.weight", (n_vocab, n_embd), np.float16


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-cpp", required=True, help="llama.cpp source tree (gguf-py and the vocabulary file)")
    ap.add_argument("--shape", choices=sorted(SHAPES), required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()

    sys.path.insert(0, os.path.join(args.llama_cpp, "gguf-py"))
    import gguf  # noqa: E402 (from the tree given)

    vocab = gguf.GGUFReader(os.path.join(args.llama_cpp, VOCAB_FILE))
    n_vocab = len(vocab.fields["tokenizer.ggml.tokens"].data)
    n_embd, n_layer, n_head, n_head_kv, n_ff = SHAPES[args.shape]

    w = gguf.GGUFWriter(args.out, "llama")
    w.add_name(f"random-weight llama {args.shape} (RANDOM WEIGHTS: output is noise)")
    w.add_block_count(n_layer)
    w.add_context_length(CONTEXT_LENGTH)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(RMS_EPS)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_rope_freq_base(ROPE_FREQ_BASE)
    w.add_vocab_size(n_vocab)
    w.add_file_type(FILE_TYPE_F16)
    for key in TOKENIZER_KEYS:
        field = vocab.fields.get(key)
        if field is None:
            continue
        value = field.contents()
        vtype = gguf.GGUFValueType(field.types[0])
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_array(key, value)
        else:
            w.add_key_value(key, value, vtype)

    rng = np.random.default_rng(args.seed)
    block = (rng.standard_normal(BLOCK_VALUES, dtype=np.float32) * WEIGHT_SCALE)
    layout = list(tensors(n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab))
    for name, shape, dtype in layout:
        w.add_tensor_info(name, shape, np.dtype(dtype), int(np.prod(shape)) * np.dtype(dtype).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, shape, dtype in layout:
        count = int(np.prod(shape))
        window = np.roll(block, int(rng.integers(BLOCK_VALUES)))
        if name.endswith("norm.weight"):
            data = 1.0 + window[:count]  # norms near one, as trained ones are
        else:
            data = np.resize(window, count)
        w.write_tensor_data(data.astype(dtype).reshape(shape))
    w.close()
    params = sum(int(np.prod(s)) for _, s, _ in layout)
    print(f"{args.out}: llama {args.shape}, {params / 1e9:.2f}B parameters, RANDOM weights (f16)")


if __name__ == "__main__":
    main()
