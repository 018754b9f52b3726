"""Sequence models and their training recipes: Transformer (Multi30k), LSTM LM (WikiText-2),
GNMT-style translation (WMT16), BERT-base pre-training (Wikipedia), GRU classifier (SST-2).

`reduced=True` shortens sequences for fast unit tests; the architecture is unchanged.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .attention import EncoderLayer, Seq2SeqTransformer
from .recipe import Recipe, TensorSpec, adam, cross_entropy_last, sgd

MULTI30K_VOCAB = 5_500   # "about 5-6k tokens" per language (data README); an approximation
MULTI30K_LENGTH = 32     # padded sentence length of a batch (sentences are up to 52 tokens)
WIKITEXT2_VOCAB = 33_278
WIKITEXT2_BPTT = 35
WMT16_VOCAB = 32_320     # shared BPE vocabulary of the MLPerf GNMT reference, padded to x8
WMT16_LENGTH = 32        # padded length of a length-bucketed batch (the reference caps sentences at 50)
BERT_VOCAB, BERT_LENGTH, BERT_PREDICTIONS = 30_522, 128, 20
SST2_VOCAB, SST2_LENGTH = 15_000, 64   # SST-2 word vocabulary; sentences padded to 64 tokens


def smoothed_target_cross_entropy(logits, batch):
    """Translation loss: cross-entropy against the target tokens (batch[2]), label smoothing 0.1."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[2].reshape(-1), label_smoothing=0.1)


def _length(full: int, reduced: bool) -> int:
    return min(full, 4) if reduced else full


def transformer_recipe(reduced: bool) -> Recipe:
    """Gavel's Transformer: 6+6 layers, d_model 512, label-smoothed cross-entropy, Adam."""
    length = _length(MULTI30K_LENGTH, reduced)

    return Recipe(
        task="translation",
        model=lambda: Seq2SeqTransformer(MULTI30K_VOCAB, MULTI30K_VOCAB),
        batch=lambda n: (TensorSpec((n, length), "int", MULTI30K_VOCAB),
                         TensorSpec((n, length), "int", MULTI30K_VOCAB),
                         TensorSpec((n, length), "int", MULTI30K_VOCAB)),
        forward=lambda model, batch: model(batch[0], batch[1]),
        criterion=smoothed_target_cross_entropy,
        optimizer=adam(1e-4, betas=(0.9, 0.98), eps=1e-9),
        note="source, shifted target and gold target tokens of one padded length",
    )


class WordLM(nn.Module):
    """Word-level LSTM language model (PyTorch word_language_model example, untied)."""

    def __init__(self, vocab: int, dim: int = 200, layers: int = 2, dropout: float = 0.2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.drop = nn.Dropout(dropout)
        self.rnn = nn.LSTM(dim, dim, layers, dropout=dropout)
        self.decoder = nn.Linear(dim, vocab)

    def forward(self, tokens):  # tokens: (time, batch)
        out, _ = self.rnn(self.drop(self.embed(tokens)))
        return self.decoder(self.drop(out))


def lm_recipe(reduced: bool) -> Recipe:
    """Gavel's LM: BPTT 35, plain SGD at lr 20 with gradient clipping 0.25."""
    length = _length(WIKITEXT2_BPTT, reduced)
    return Recipe(
        task="language-model",
        model=lambda: WordLM(WIKITEXT2_VOCAB),
        batch=lambda n: (TensorSpec((length, n), "int", WIKITEXT2_VOCAB),
                         TensorSpec((length, n), "int", WIKITEXT2_VOCAB)),
        forward=lambda model, batch: model(batch[0]),
        criterion=cross_entropy_last,
        optimizer=sgd(20.0, 0.0, momentum=0.0),
        clip_grad_norm=0.25,
    )


class BahdanauAttention(nn.Module):
    """Additive attention: score = v . tanh(Wq q + Wk k + b), softmax over source positions."""

    def __init__(self, dim: int):
        super().__init__()
        self.query = nn.Linear(dim, dim, bias=False)
        self.key = nn.Linear(dim, dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(dim))
        self.score = nn.Linear(dim, 1, bias=False)

    def forward(self, query, keys):  # (n, t, d), (n, s, d) -> context (n, t, d)
        hidden = torch.tanh(self.query(query).unsqueeze(2) + self.key(keys).unsqueeze(1) + self.bias)
        weights = torch.softmax(self.score(hidden).squeeze(-1), -1)
        return torch.bmm(weights, keys)


class GNMT(nn.Module):
    """GNMT-style translator (MLPerf reference shape): 4-layer LSTM encoder with a bidirectional
    first layer, 4-layer LSTM decoder with additive attention from its first layer, residual
    connections from the third layer, shared source/target embedding."""

    def __init__(self, vocab: int, dim: int = 1024, dropout: float = 0.2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.drop = nn.Dropout(dropout)
        self.enc = nn.ModuleList([nn.LSTM(dim, dim, batch_first=True, bidirectional=True),
                                  nn.LSTM(2 * dim, dim, batch_first=True),
                                  nn.LSTM(dim, dim, batch_first=True),
                                  nn.LSTM(dim, dim, batch_first=True)])
        self.dec_first = nn.LSTM(dim, dim, batch_first=True)
        self.attention = BahdanauAttention(dim)
        self.dec = nn.ModuleList(nn.LSTM(2 * dim, dim, batch_first=True) for _ in range(3))
        self.classifier = nn.Linear(dim, vocab)

    def encode(self, src):
        x = self.drop(self.embed(src))
        for i, rnn in enumerate(self.enc):
            out, _ = rnn(self.drop(x) if i > 0 else x)
            x = out + x if i >= 2 else out
        return x

    def forward(self, src, tgt):
        memory = self.encode(src)
        x, _ = self.dec_first(self.drop(self.embed(tgt)))
        context = self.attention(x, memory)
        for i, rnn in enumerate(self.dec):
            out, _ = rnn(torch.cat([self.drop(x), context], -1))
            x = out + x if i >= 1 else out
        return self.classifier(self.drop(x))


def gnmt_recipe(reduced: bool) -> Recipe:
    length = _length(WMT16_LENGTH, reduced)

    return Recipe(
        task="translation",
        model=lambda: GNMT(WMT16_VOCAB),
        batch=lambda n: tuple(TensorSpec((n, length), "int", WMT16_VOCAB) for _ in range(3)),
        forward=lambda model, batch: model(batch[0], batch[1]),
        criterion=smoothed_target_cross_entropy,
        optimizer=adam(2e-3),
    )


class BertPretrain(nn.Module):
    """BERT-base encoder (12 x 768, 12 heads, GELU) with masked-LM and next-sentence heads."""

    def __init__(self, vocab=BERT_VOCAB, dim=768, layers=12, heads=12, d_inner=3072,
                 max_len=512, dropout=0.1):
        super().__init__()
        self.words = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.segments = nn.Embedding(2, dim)
        self.embed_norm = nn.LayerNorm(dim, eps=1e-12)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(EncoderLayer(dim, heads, d_inner, dropout, nn.GELU, 1e-12)
                                    for _ in range(layers))
        self.pooler = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.nsp = nn.Linear(dim, 2)
        self.mlm_transform = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.LayerNorm(dim, eps=1e-12))
        self.mlm_bias = nn.Parameter(torch.zeros(vocab))
        self.apply(bert_init)

    def forward(self, tokens, segments, mlm_positions):
        length = tokens.shape[1]
        pos = self.positions.weight[:length]
        x = self.drop(self.embed_norm(self.words(tokens) + pos + self.segments(segments)))
        for layer in self.layers:
            x = layer(x)
        nsp_logits = self.nsp(self.pooler(x[:, 0]))
        index = mlm_positions.unsqueeze(-1).expand(-1, -1, x.shape[-1])
        masked = self.mlm_transform(torch.gather(x, 1, index))
        return F.linear(masked, self.words.weight, self.mlm_bias), nsp_logits


def bert_init(module: nn.Module) -> None:
    """BERT initialisation: N(0, 0.02) weights, zero biases."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, 0.0, 0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def bert_recipe(reduced: bool) -> Recipe:
    """BERT-base pre-training at sequence length 128, 20 masked predictions per sequence."""
    length = _length(BERT_LENGTH, reduced) * (2 if reduced else 1)
    preds = 2 if reduced else BERT_PREDICTIONS

    def criterion(outputs, batch):
        mlm_logits, nsp_logits = outputs
        return (F.cross_entropy(mlm_logits.reshape(-1, mlm_logits.shape[-1]), batch[3].reshape(-1))
                + F.cross_entropy(nsp_logits, batch[4]))

    return Recipe(
        task="masked-language-model",
        model=BertPretrain,
        batch=lambda n: (TensorSpec((n, length), "int", BERT_VOCAB), TensorSpec((n, length), "int", 2),
                         TensorSpec((n, preds), "int", length), TensorSpec((n, preds), "int", BERT_VOCAB),
                         TensorSpec((n,), "int", 2)),
        forward=lambda model, batch: model(batch[0], batch[1], batch[2]),
        criterion=criterion,
        optimizer=adam(1e-4, weight_decay=0.01, decoupled=True),
        note="tokens, segment ids, masked positions, masked-token labels, next-sentence labels",
    )


class GRUClassifier(nn.Module):
    """Embedding, bidirectional GRU, linear classifier on the final hidden states."""

    def __init__(self, vocab=SST2_VOCAB, dim=128, hidden=256, classes=2, dropout=0.5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, hidden, batch_first=True, bidirectional=True)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, tokens):
        _, h = self.rnn(self.drop(self.embed(tokens)))
        return self.fc(self.drop(torch.cat([h[-2], h[-1]], -1)))


def gru_recipe(reduced: bool) -> Recipe:
    """Binary sentiment classification of SST-2 sentences."""
    length = _length(SST2_LENGTH, reduced)
    return Recipe(
        task="text-classification",
        model=GRUClassifier,
        batch=lambda n: (TensorSpec((n, length), "int", SST2_VOCAB), TensorSpec((n,), "int", 2)),
        forward=lambda model, batch: model(batch[0]),
        criterion=cross_entropy_last,
        optimizer=adam(1e-3),
    )
