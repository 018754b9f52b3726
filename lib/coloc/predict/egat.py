"""ISACPP's edge-fusion gated graph attention network (E-GGAT), in pure torch.

One graph per co-located set; its nodes are the jobs. Node features (ISACPP): the job's
graph features from the workloads table (batch size, FLOPs, parameter, activation and
input size, operator counts) and the device's memory bandwidth, CUDA cores, SM count,
memory clock and tensor cores; log1p-transformed (they span orders of magnitude), then
min-max normalized on the training fold. Option ``solo_feature`` adds the job's log solo
throughput and achieved utilization (not in the paper; off by default).

Edges j -> i carry the destination job i's pairwise slowdown next to j, as log(1 / norm).
ISACPP uses measured slowdowns; here the measured slowdown of a pair is that pair's
label, so the edge must not carry it. ``edge="lgbm"`` (default): the slowdown predicted by
the LightGBM pair baseline fitted on the training fold only, cross-fitted for the training
graphs (each training pair's edge comes from a model fitted without that pair, on inner
folds carved like the protocol's test folds);
``edge="constant"``: every edge carries 1 (self-loops 0), so only the graph structure is
used. Self-loops carry slowdown 0.

Each block: per head, attention score LeakyReLU(a_dst.Wh_i + a_src.Wh_j + a_edge.We_ij)
(the edge fused into the score), softmax over j (self included), message
sum_j alpha_ij (Wh_j + We_ij); heads concatenated and merged; a GRU cell gates the update
of the node state. A per-node head reads out normalized throughput (its bias starts at the
training mean). Loss SmoothL1, Adam, early stopping on the validation MAE of a split carved
from the training fold: random, or one held-out family / job type / device when the protocol
holds out families / job types / devices (``fit``'s ``groups``).
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import torch
from torch import nn

from coloc.predict.base import InsufficientData, Predictor, Tables, pair_queries, result
from coloc.predict.baselines import LightGBMPairs
from coloc.predict.inputs import graph_columns, job_frame, lookup
from coloc.predict.protocols import derived_seed, group_of, groups_in, inner_folds, touches
from coloc.predict.registry import check_params, register
from coloc.devices import ISACPP_FEATURES

EDGE_CHOICES = ("lgbm", "constant")


class GatedAttentionBlock(nn.Module):
    """Multi-head graph attention with the edge feature fused into the score, and a GRU gate."""

    def __init__(self, hidden: int, heads: int, edge_dim: int = 1):
        super().__init__()
        self.heads, self.hidden = heads, hidden
        self.node = nn.Linear(hidden, heads * hidden, bias=False)
        self.edge = nn.Linear(edge_dim, heads * hidden, bias=False)
        self.att_dst = nn.Parameter(torch.empty(heads, hidden))
        self.att_src = nn.Parameter(torch.empty(heads, hidden))
        self.att_edge = nn.Parameter(torch.empty(heads, hidden))
        for p in (self.att_dst, self.att_src, self.att_edge):
            nn.init.xavier_uniform_(p)
        self.merge = nn.Linear(heads * hidden, hidden)
        self.gru = nn.GRUCell(hidden, hidden)

    def forward(self, h: torch.Tensor, e: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        """h [B, N, H] node states, e [B, N, N, De] edge j -> i at [b, i, j], adj [B, N, N] bool."""
        b, n, _ = h.shape
        wh = self.node(h).view(b, n, self.heads, self.hidden)
        we = self.edge(e).view(b, n, n, self.heads, self.hidden)
        score = ((wh * self.att_dst).sum(-1).unsqueeze(2) + (wh * self.att_src).sum(-1).unsqueeze(1)
                 + (we * self.att_edge).sum(-1))  # [B, N(dst), N(src), K]
        score = nn.functional.leaky_relu(score, 0.2).masked_fill(~adj.unsqueeze(-1), float("-inf"))
        alpha = torch.softmax(score, dim=2).nan_to_num(0.0)  # padded rows have no neighbours
        msg = (alpha.unsqueeze(-1) * (wh.unsqueeze(1) + we)).sum(2)  # [B, N, K, H]
        m = nn.functional.elu(self.merge(msg.reshape(b, n, self.heads * self.hidden)))
        return self.gru(m.reshape(b * n, -1), h.reshape(b * n, -1)).view(b, n, -1)


class EGGATNet(nn.Module):
    """Node embedding, gated attention blocks, per-node readout of normalized throughput."""

    def __init__(self, in_dim: int, hidden: int = 512, heads: int = 3, layers: int = 2):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(in_dim, hidden), nn.ELU())
        self.blocks = nn.ModuleList(GatedAttentionBlock(hidden, heads) for _ in range(layers))
        self.readout = nn.Sequential(nn.Linear(hidden, hidden // 4), nn.ELU(), nn.Linear(hidden // 4, 1))

    def forward(self, x, e, adj):
        h = self.embed(x)
        for block in self.blocks:
            h = block(h, e, adj)
        return self.readout(h).squeeze(-1)


# ---------------------------------------------------------------------------- graphs


def set_graphs(sets: list[tuple[str, tuple[str, ...]]], node_x: pd.DataFrame, edge_fn):
    """Dense batch of graphs: x [B, N, F], e [B, N, N, 1], adj [B, N, N], mask [B, N].

    ``sets``: (device, job types) per graph; ``node_x`` indexed by (device, workload);
    ``edge_fn(device, dst, src)`` -> arrays of edge values for aligned lists.
    """
    n_max = max(len(jobs) for _, jobs in sets)
    b, f = len(sets), node_x.shape[1]
    devices = [d for d, jobs in sets for _ in jobs]
    names = [w for _, jobs in sets for w in jobs]
    feats = lookup(node_x, devices, names, "E-GGAT node").to_numpy(np.float32)
    x = np.zeros((b, n_max, f), np.float32)
    mask = np.zeros((b, n_max), bool)
    e = np.zeros((b, n_max, n_max, 1), np.float32)
    pos = 0
    dst_d, dst_w, src_w, slots = [], [], [], []
    for g, (device, jobs) in enumerate(sets):
        k = len(jobs)
        x[g, :k], mask[g, :k] = feats[pos:pos + k], True
        pos += k
        for i in range(k):
            for j in range(k):
                if i != j:
                    dst_d.append(device), dst_w.append(jobs[i]), src_w.append(jobs[j]), slots.append((g, i, j))
    if slots:
        values = np.asarray(edge_fn(dst_d, dst_w, src_w), np.float32)
        g_idx, i_idx, j_idx = map(np.array, zip(*slots))
        e[g_idx, i_idx, j_idx, 0] = values
    adj = mask[:, :, None] & mask[:, None, :]
    return tuple(torch.from_numpy(a) for a in (x, e, adj, mask))


def slowdown(norm) -> np.ndarray:
    """log(1 / norm), the edge value, with norm clipped to [0.05, 2]."""
    return -np.log(np.clip(np.asarray(norm, float), 0.05, 2.0))


class EdgeModel:
    """Edge values from the LightGBM pair baseline: fitted on the training fold only.

    ``training_edges`` gives each training pair's edges from a model fitted on the other
    folds of the training pairs (K-fold), so no edge carries its own pair's label.
    """

    def __init__(self, seed: int, k: int = 5, **params):
        self.seed, self.k, self.params = seed, k, params

    def _model(self) -> LightGBMPairs:
        return LightGBMPairs(seed=self.seed, spread=False, **self.params)

    def fit(self, train: Tables) -> "EdgeModel":
        self.full_ = self._model().fit(train)
        return self

    def predict(self, context: Tables, device, dst, src) -> np.ndarray:
        queries = pd.DataFrame({"device": list(device), "workload": list(dst), "co_runners": [(s,) for s in src]})
        return slowdown(self.full_.predict(queries, context)["pred_norm"])

    def training_edges(self, train: Tables, groups: str | None = None) -> dict:
        """{(device, dst, src): edge} for every training pair, each out-of-fold.

        The folds mirror the protocol (``groups``; see :func:`coloc.predict.protocols.inner_folds`).
        """
        pairs = train.pairs[train.pairs["feasible"].astype(bool)].reset_index(drop=True)
        if len(pairs) < 2:
            raise InsufficientData(f"egat edges: {len(pairs)} training pair(s); need 2 to cross-fit")
        queries = pair_queries(pairs)
        out = {}
        for fit_pairs, fill in inner_folds(pairs, groups, self.seed, self.k, "egat-edge-folds"):
            model = self._model().fit(train.with_pairs(pairs[fit_pairs]))
            held = queries[fill]
            values = slowdown(model.predict(held, train)["pred_norm"])
            for (d, w, co), v in zip(held[["device", "workload", "co_runners"]].itertuples(index=False), values):
                out[(d, w, co[0])] = float(v)
        return out


# ---------------------------------------------------------------------------- predictor


@register
class EGGAT(Predictor):
    """ISACPP's E-GGAT on co-located sets (see the module docstring for inputs and edges)."""

    name = "egat"

    def __init__(self, seed: int = 0, hidden: int = 512, heads: int = 3, layers: int = 2,
                 edge: str = "lgbm", lr: float = 1e-3, batch_size: int = 64, max_epochs: int = 200,
                 patience: int = 20, val_fraction: float = 0.15, solo_feature: bool = False,
                 clip_inputs: bool = True, edge_params: dict | None = None):
        super().__init__(seed)
        self.hidden, self.heads, self.layers, self.edge = hidden, heads, layers, edge
        self.lr, self.batch_size, self.max_epochs, self.patience = lr, batch_size, max_epochs, patience
        self.val_fraction, self.solo_feature, self.clip_inputs = val_fraction, solo_feature, clip_inputs
        self.edge_params = edge_params  # options of the LightGBM pair baseline of the edges (edge "lgbm")

    def check_params(self) -> None:
        if self.edge not in EDGE_CHOICES:
            raise ValueError(f"edge {self.edge!r}; expected one of {EDGE_CHOICES}")
        if self.edge_params is not None:
            check_params(LightGBMPairs, self.edge_params, "edge_params", fixed=("spread",))

    # -- node features
    def _raw_nodes(self, tables: Tables) -> pd.DataFrame:
        frame = job_frame(tables)
        cols = self.columns_ + list(ISACPP_FEATURES) + (["throughput", "util"] if self.solo_feature else [])
        return np.log1p(frame[cols].astype(float))

    def _nodes(self, tables: Tables) -> pd.DataFrame:
        raw = self._raw_nodes(tables)
        scaled = (raw - self.min_) / self.span_
        if self.clip_inputs:  # a job or device outside the training range sits at its edge
            scaled = scaled.clip(0.0, 1.0)
        return scaled.fillna(0.0)

    # -- edges
    def _edge_fn(self, context: Tables, known: dict | None = None):
        if self.edge == "constant":
            return lambda device, dst, src: np.ones(len(dst))
        if known is not None:
            return lambda device, dst, src: np.array([known[k] for k in zip(device, dst, src)])
        return lambda device, dst, src: self.edges_.predict(context, device, dst, src)

    def fit(self, train: Tables, groups: str | None = None) -> "EGGAT":
        self.check_params()
        pairs = train.pairs[train.pairs["feasible"].astype(bool)].reset_index(drop=True)
        if len(pairs) < 3:
            raise InsufficientData(f"egat: {len(pairs)} feasible training pairs; need at least 3")
        self.columns_ = graph_columns(train.workloads)
        raw = self._raw_nodes(train)
        self.min_, span = raw.min(), raw.max() - raw.min()
        self.span_ = span.where(span > 0, 1.0)
        known = None
        if self.edge == "lgbm":
            self.edges_ = EdgeModel(self.seed, **(self.edge_params or {})).fit(train)
            known = self.edges_.training_edges(train, groups)
        sets = [(d, (a, b)) for d, a, b in pairs[["device", "workload_a", "workload_b"]].itertuples(index=False)]
        x, e, adj, mask = set_graphs(sets, self._nodes(train), self._edge_fn(train, known))
        y = torch.tensor(pairs[["norm_a", "norm_b"]].to_numpy(np.float32))
        fit, val = self._split(pairs, groups)
        self.net_, self.epochs_ = self._train(x, e, adj, y, fit, val)
        return self

    def _split(self, pairs: pd.DataFrame, groups: str | None) -> tuple[np.ndarray, np.ndarray]:
        """Training and validation graphs: a random fraction, or (``groups``) every pair touching
        one family / job type or on one device, as the protocol's test fold is carved."""
        rng = np.random.default_rng(derived_seed(self.seed, "egat-split"))
        if groups in ("family", "workload", "device"):
            if groups == "device":
                held = rng.choice(sorted(pairs["device"].unique()))
                val_mask = (pairs["device"] == held).to_numpy()
            else:
                of = group_of(groups)
                held = rng.choice(groups_in(pairs, of))
                val_mask = touches(pairs, held, of).to_numpy()
            if val_mask.any() and not val_mask.all():
                return np.flatnonzero(~val_mask), np.flatnonzero(val_mask)
        order = rng.permutation(len(pairs))
        n_val = min(max(1, int(round(self.val_fraction * len(pairs)))), len(pairs) - 1)
        return order[n_val:], order[:n_val]

    def _train(self, x, e, adj, y, fit, val):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(derived_seed(self.seed, "egat-init") % 2**63)
            net = EGGATNet(x.shape[-1], self.hidden, self.heads, self.layers)
        with torch.no_grad():  # start the readout at the training mean
            net.readout[-1].bias.fill_(float(y[fit].mean()))
        opt = torch.optim.Adam(net.parameters(), lr=self.lr)
        loss_fn = nn.SmoothL1Loss()
        best, best_state, stale, epoch = float("inf"), None, 0, 0
        shuffle = np.random.default_rng(derived_seed(self.seed, "egat-batches"))
        for epoch in range(1, self.max_epochs + 1):
            net.train()
            fit = shuffle.permutation(fit)
            for start in range(0, len(fit), self.batch_size):
                idx = torch.from_numpy(fit[start:start + self.batch_size])
                opt.zero_grad()
                loss = loss_fn(net(x[idx], e[idx], adj[idx]), y[idx])
                loss.backward()
                opt.step()
            net.eval()
            with torch.no_grad():
                val_loss = float(torch.abs(net(x[val], e[val], adj[val]) - y[val]).mean())
            if val_loss < best - 1e-5:
                best, best_state, stale = val_loss, copy.deepcopy(net.state_dict()), 0
            else:
                stale += 1
                if stale >= self.patience:
                    break
        net.load_state_dict(best_state)
        net.eval()
        return net, epoch

    def predict(self, queries, context):
        sets = [(d, (w, *co)) for d, w, co in queries[["device", "workload", "co_runners"]].itertuples(index=False)]
        x, e, adj, _ = set_graphs(sets, self._nodes(context), self._edge_fn(context))
        with torch.no_grad():
            out = self.net_(x, e, adj)[:, 0].numpy()
        return result(queries.index, out.astype(float))



@register
class EGGATConstantEdges(EGGAT):
    """The ablation: E-GGAT with constant edges (what the network adds beyond its LightGBM edge)."""

    name = "egat-const"
    defaults = {"edge": "constant"}
