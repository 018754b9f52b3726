"""Transformer building blocks written out in plain torch (explicit matmul attention)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class MultiHeadAttention(nn.Module):
    """Scaled dot-product attention over `heads` heads with explicit batched matmuls."""

    def __init__(self, d_model: int, heads: int, dropout: float, bias: bool = True):
        super().__init__()
        self.heads, self.d_head = heads, d_model // heads
        self.q = nn.Linear(d_model, d_model, bias=bias)
        self.k = nn.Linear(d_model, d_model, bias=bias)
        self.v = nn.Linear(d_model, d_model, bias=bias)
        self.out = nn.Linear(d_model, d_model, bias=bias)
        self.drop = nn.Dropout(dropout)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        n, length, _ = x.shape
        return x.view(n, length, self.heads, self.d_head).transpose(1, 2)

    def forward(self, query, memory, mask: torch.Tensor | None = None):
        q, k, v = self.split(self.q(query)), self.split(self.k(memory)), self.split(self.v(memory))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_head)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        context = torch.matmul(self.drop(torch.softmax(scores, -1)), v)
        n, _, length, _ = context.shape
        return self.out(context.transpose(1, 2).reshape(n, length, -1))


class FeedForward(nn.Module):
    def __init__(self, d_model: int, d_inner: int, dropout: float, act: type[nn.Module] = nn.ReLU):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_model, d_inner), act(), nn.Linear(d_inner, d_model),
                                 nn.Dropout(dropout))

    def forward(self, x):
        return self.net(x)


class EncoderLayer(nn.Module):
    """Self-attention and feed-forward sub-layers, each residual with post layer norm."""

    def __init__(self, d_model, heads, d_inner, dropout, act=nn.ReLU, eps=1e-6):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, heads, dropout)
        self.ff = FeedForward(d_model, d_inner, dropout, act)
        self.norm1, self.norm2 = nn.LayerNorm(d_model, eps=eps), nn.LayerNorm(d_model, eps=eps)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        x = self.norm1(x + self.drop(self.attn(x, x, mask)))
        return self.norm2(x + self.ff(x))


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder attention, feed-forward; post layer norm."""

    def __init__(self, d_model, heads, d_inner, dropout):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, heads, dropout)
        self.ff = FeedForward(d_model, d_inner, dropout)
        self.norms = nn.ModuleList(nn.LayerNorm(d_model, eps=1e-6) for _ in range(3))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, memory, causal_mask):
        x = self.norms[0](x + self.drop(self.self_attn(x, x, causal_mask)))
        x = self.norms[1](x + self.drop(self.cross_attn(x, memory)))
        return self.norms[2](x + self.ff(x))


def sinusoid_table(length: int, d_model: int) -> torch.Tensor:
    """Fixed sinusoidal position encodings, shape (length, d_model)."""
    pos = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(length, d_model)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)
    return table


class Seq2SeqTransformer(nn.Module):
    """Encoder-decoder Transformer; the target projection shares the target embedding."""

    def __init__(self, src_vocab, tgt_vocab, d_model=512, heads=8, d_inner=2048, layers=6,
                 dropout=0.1, max_len=256):
        super().__init__()
        self.src_emb = nn.Embedding(src_vocab, d_model)
        self.tgt_emb = nn.Embedding(tgt_vocab, d_model)
        self.register_buffer("positions", sinusoid_table(max_len, d_model), persistent=False)
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.ModuleList(EncoderLayer(d_model, heads, d_inner, dropout) for _ in range(layers))
        self.decoder = nn.ModuleList(DecoderLayer(d_model, heads, d_inner, dropout) for _ in range(layers))
        self.scale = math.sqrt(d_model)
        self.logit_scale = d_model ** -0.5  # keeps tied-projection logits O(1)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def embed(self, emb: nn.Embedding, tokens: torch.Tensor) -> torch.Tensor:
        return self.drop(emb(tokens) * self.scale + self.positions[: tokens.shape[1]])

    def forward(self, src, tgt):
        memory = self.embed(self.src_emb, src)
        for layer in self.encoder:
            memory = layer(memory)
        length = tgt.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool, device=tgt.device).triu(1)
        x = self.embed(self.tgt_emb, tgt)
        for layer in self.decoder:
            x = layer(x, memory, causal)
        return F.linear(x, self.tgt_emb.weight) * self.logit_scale
