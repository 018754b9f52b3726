"""ISACPP's edge-fusion gated graph attention network (E-GGAT) as published, and coloc's variant; pure torch.

One graph per co-located set; its nodes are the jobs. Node features (ISACPP): the job's
graph features from the workloads table (batch size, FLOPs, parameter, activation and
input size, operator counts) and the device's memory bandwidth, CUDA cores, SM count,
memory clock and tensor cores; log1p-transformed (they span orders of magnitude), then
min-max normalized on the training fold. Option ``solo_feature`` adds the job's log solo
throughput and achieved utilization (not in the paper; off by default). Option ``drop``
leaves out groups of node features (ISACPP's ablation): ``gpu`` (the device's), ``hyper``
(the hyperparameters: batch size), ``model`` (the other graph features).

Edges j -> i carry the destination job i's pairwise slowdown next to j, as log(1 / norm)
(ISACPP's "performance degradation"). ISACPP looks up measured slowdowns; here the measured
slowdown of a pair is that pair's label, so the edge must not carry it. ``edge="lgbm"``
(default): the slowdown predicted by the LightGBM pair baseline fitted on the training fold
only, cross-fitted for the training graphs (each training pair's edge comes from a model
fitted without that pair, on inner folds carved like the protocol's test folds);
``edge="constant"``: every edge carries 1 (self-loops 0), so only the graph structure is
used.

Self-loops. ISACPP's graphs have none: its dataset.py and server.py build each graph from the
pairs' edges only (dgl.graph of the src/dst lists), so ``egat``, ``egat-const`` and
``egat-profiled`` have none (``self_loops=False``). On a pair each job then has one in-edge,
whose softmax weight is 1 whatever the edge: the edge cannot change a pair's prediction, and
those three make the same pair predictions, bit for bit (the edges matter in sets of three or
more jobs; a pair's edges are not computed, and the LightGBM edge model is fitted only when
such a set is predicted). ``egat-selfloops`` and ``egat-profiled-selfloops`` keep coloc's
earlier graphs, where each job also attends to itself (edge 0), so the edge weighs the
co-runner against the job itself; ``egat-coloc`` has them too.

``egat-profiled`` (:class:`EGGATProfiled`) is ISACPP's own setting, not coloc's honest one: ISACPP
profiles every pair of known job types beforehand (the score server reads the co-location CSV of
measured pairs, server.py ``get_graph_features_and_edges``), so its edges are the *measured* pair
slowdowns, at training and at inference. Its edges are ``edge="measured"``: the training graphs'
from the training fold's measured pairs, the predicted graphs' from the measured pairs of the
context tables, the pair being predicted included. Its predictions therefore read the
measured label of the pair they predict, which on ISACPP's graphs can act only in sets of three
or more jobs (``egat-profiled-selfloops``: on pairs too); ``fit`` still sees only the training fold. Its name says
so in every table; the predictor summary lists it as ISACPP's setting. It trains no LightGBM edge
model (the measured edges replace it), so it costs one network training, less than ``egat``.

``egat`` (:class:`EGGAT`), the published layer (self-cream/ISACPP,
``predictor/ggat_prediction_duration``), written anew. One attention head: z = LeakyReLU(W h);
logit of edge j -> i = LeakyReLU(a.(z_i || z_j) x w_e . edge_ij) (the attention logit scaled
by a learned scale of the edge's degradation), then multiplied by a learned mailbox scale
w_m, softmax over the incoming edges, h_i = sum_j alpha_ij z_j. A block:
K heads concatenated, LeakyReLU, an output attention layer (one head) to the hidden size,
LeakyReLU, then (all blocks but the first) a GRU gate whose parameters every block shares,
LeakyReLU. ``layers`` = L gives ISACPP's GGAT_with_L_blocks: a first multi-head block
without the gate, L - 1 gated multi-head blocks, a gated single-head block; readout linear
then sigmoid, scaled by 1.25 x the largest training label (normalized throughput can exceed
1, a sigmoid cannot); its bias starts at the training mean.

``egat-coloc`` (:class:`EGGATColoc`), coloc's own network: per head, score
LeakyReLU(a_dst.Wh_i + a_src.Wh_j + a_edge.We_ij) (the edge added to the score), softmax
over j (self included), message sum_j alpha_ij (Wh_j + We_ij) (the edge added to the
message); heads concatenated and merged by a linear layer; a GRU cell (one per block)
gates the update; an MLP reads out normalized throughput (its bias starts at the training mean).

Both: loss SmoothL1, Adam, early stopping on the validation MAE of a split carved from the
training fold: random, or one held-out family / job type / device when the protocol holds
out families / job types / devices (``fit``'s ``groups``).
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import torch
from torch import nn

from coloc.devices import ISACPP_FEATURES
from coloc.pairs import directed, keyed_mean
from coloc.predict.base import InsufficientData, Predictor, Tables, pair_queries, result
from coloc.predict.baselines import LightGBMPairs
from coloc.predict.inputs import graph_columns, job_frame, lookup
from coloc.predict.protocols import derived_seed, group_of, groups_in, inner_folds, touches
from coloc.predict.registry import check_params, register

EDGE_CHOICES = ("lgbm", "constant", "measured")  # "measured": egat-profiled only
# Node feature groups that option ``drop`` can leave out (ISACPP's ablation).
FEATURE_GROUPS = ("gpu", "hyper", "model")
HYPER_COLUMNS = ("batch_size", "amp")  # the hyperparameters among the workloads table's graph features (amp: mixed precision)
OUTPUT_HEADROOM = 1.25  # the published readout's sigmoid spans [0, this x the largest training label]


# ---------------------------------------------------------------------------- the published network


class EdgeScaledAttention(nn.Module):
    """``heads`` attention heads of ISACPP's layer, batched over dense graphs (see the module docstring).

    Input h [B, N, in_dim]; output [B, N, heads * out_dim] (the heads' results side by side).
    """

    def __init__(self, in_dim: int, out_dim: int, heads: int = 1):
        super().__init__()
        self.heads, self.out_dim = heads, out_dim
        gain = nn.init.calculate_gain("relu")
        self.fc = nn.Linear(in_dim, heads * out_dim, bias=False)
        self.att_dst = nn.Parameter(torch.empty(heads, out_dim))  # a = (a_dst, a_src) applied to z_i || z_j
        self.att_src = nn.Parameter(torch.empty(heads, out_dim))
        self.edge_scale = nn.Parameter(torch.randn(heads) * gain)  # w_e: scale of the edge's degradation
        self.mail_scale = nn.Parameter(torch.randn(heads) * gain)  # w_m: scale of the mailbox logits
        nn.init.xavier_normal_(self.fc.weight, gain=gain)
        for p in (self.att_dst, self.att_src):
            nn.init.xavier_normal_(p, gain=gain)

    def forward(self, h: torch.Tensor, e: torch.Tensor, adj: torch.Tensor) -> torch.Tensor:
        """h [B, N, F], e [B, N, N, 1] edge j -> i at [b, i, j], adj [B, N, N] bool."""
        b, n, _ = h.shape
        z = nn.functional.leaky_relu(self.fc(h)).view(b, n, self.heads, self.out_dim)
        logit = (z * self.att_dst).sum(-1).unsqueeze(2) + (z * self.att_src).sum(-1).unsqueeze(1)  # [B, i, j, K]
        score = nn.functional.leaky_relu(logit * (e * self.edge_scale)) * self.mail_scale
        score = score.masked_fill(~adj.unsqueeze(-1), float("-inf"))
        alpha = torch.softmax(score, dim=2).nan_to_num(0.0)  # padded rows have no neighbours
        out = torch.einsum("bijk,bjkf->bikf", alpha, z)
        return out.reshape(b, n, self.heads * self.out_dim)


class GRUGate(nn.Module):
    """The published GRU gate: new state from the block's output h and its input state h_in."""

    def __init__(self, size: int):
        super().__init__()
        self.reset = nn.Linear(2 * size, size)
        self.update = nn.Linear(2 * size, size)
        self.candidate = nn.Linear(2 * size, size)

    def forward(self, h: torch.Tensor, h_in: torch.Tensor) -> torch.Tensor:
        both = torch.cat((h, h_in), -1)
        r, u = torch.sigmoid(self.reset(both)), torch.sigmoid(self.update(both))
        candidate = torch.tanh(self.candidate(torch.cat((h, r * h_in), -1)))
        return (1 - u) * h_in + u * candidate


class PublishedBlock(nn.Module):
    """Heads concatenated, an output attention layer, then (``gate`` given) the shared GRU gate."""

    def __init__(self, in_dim: int, out_dim: int, heads: int, gate: GRUGate | None):
        super().__init__()
        self.heads = EdgeScaledAttention(in_dim, out_dim, heads) if heads > 1 else None
        self.out_att = EdgeScaledAttention(out_dim * heads if heads > 1 else in_dim, out_dim)
        self.gate = gate
        self.transform = nn.Linear(in_dim, out_dim) if gate is not None and in_dim != out_dim else None

    def forward(self, h, e, adj):
        x = h
        if self.heads is not None:
            x = nn.functional.leaky_relu(self.heads(x, e, adj))
        x = nn.functional.leaky_relu(self.out_att(x, e, adj))
        if self.gate is not None:
            h_in = self.transform(h) if self.transform is not None else h
            x = nn.functional.leaky_relu(self.gate(x, h_in))
        return x


class PublishedNet(nn.Module):
    """ISACPP's GGAT with ``layers`` blocks (see the module docstring); outputs [B, N] or [B, N, out_dim]."""

    def __init__(self, in_dim: int, hidden: int = 512, heads: int = 3, layers: int = 1, out_dim: int = 1):
        super().__init__()
        self.out_dim = out_dim
        self.gate = GRUGate(hidden)  # one gate, shared by every gated block
        blocks = [PublishedBlock(in_dim, hidden, heads, None)]
        blocks += [PublishedBlock(hidden, hidden, heads, self.gate) for _ in range(layers - 1)]
        blocks += [PublishedBlock(hidden, hidden, 1, self.gate)]
        self.blocks = nn.ModuleList(blocks)
        self.readout = nn.Linear(hidden, out_dim)
        self.register_buffer("scale", torch.ones(out_dim))

    def start_at(self, mean: torch.Tensor, scale: torch.Tensor) -> None:
        """Output range [0, ``scale``]; the readout's bias starts at ``mean`` (per output)."""
        with torch.no_grad():
            self.scale.copy_(scale)
            self.readout.bias.copy_(torch.logit((mean / scale).clamp(1e-3, 1 - 1e-3)))

    def forward(self, x, e, adj):
        h = x
        for block in self.blocks:
            h = block(h, e, adj)
        out = torch.sigmoid(self.readout(h)) * self.scale
        return out.squeeze(-1) if self.out_dim == 1 else out


# ---------------------------------------------------------------------------- coloc's network


class GatedAttentionBlock(nn.Module):
    """coloc's block: multi-head graph attention with the edge feature added to score and message, a GRU cell."""

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
    """coloc's network: node embedding, gated attention blocks, MLP readout of normalized throughput."""

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


def set_graphs(sets: list[tuple[str, tuple[str, ...]]], node_x: pd.DataFrame, edge_fn, self_loops: bool = False):
    """Dense batch of graphs: x [B, N, F], e [B, N, N, 1], adj [B, N, N], mask [B, N].

    ``sets``: (device, job types) per graph; ``node_x`` indexed by (device, workload);
    ``edge_fn(device, dst, src)`` -> arrays of edge values for aligned lists. Every job has an
    edge from every other job of its set; ``self_loops`` adds an edge from each job to itself
    (edge value 0). ISACPP's graphs have none (its dataset.py and server.py build the graph from
    the pairs' edges only). Without self-loops a pair's edges hold 0: each job has one in-edge, whose
    value cannot change the attention (a softmax over one logit is 1).
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
        if k == 2 and not self_loops:
            continue  # one in-edge per job: its value cannot change the output (GraphPairModel._reads_edges)
        for i in range(k):
            for j in range(k):
                if i != j:
                    dst_d.append(device), dst_w.append(jobs[i]), src_w.append(jobs[j]), slots.append((g, i, j))
    if slots:
        values = np.asarray(edge_fn(dst_d, dst_w, src_w), np.float32)
        g_idx, i_idx, j_idx = map(np.array, zip(*slots, strict=True))
        e[g_idx, i_idx, j_idx, 0] = values
    adj = mask[:, :, None] & mask[:, None, :]
    if not self_loops:
        adj &= ~np.eye(n_max, dtype=bool)
    return tuple(torch.from_numpy(a) for a in (x, e, adj, mask))


def slowdown(norm) -> np.ndarray:
    """log(1 / norm), the edge value, with norm clipped to [0.05, 2]."""
    return -np.log(np.clip(np.asarray(norm, float), 0.05, 2.0))


def measured_edges(tables: Tables) -> dict:
    """{(device, dst, src): edge} from the measured pairs of ``tables`` (feasible ones): ISACPP's edges."""
    pairs = tables.pairs[tables.pairs["feasible"].astype(bool)]
    return MeasuredEdges({key: float(slowdown(value)) for key, value in keyed_mean(directed(pairs), "norm").items()})


class MeasuredEdges(dict):
    """measured_edges, naming the missing pair when one is asked for."""

    def __missing__(self, key):
        raise KeyError(f"egat-profiled: no measured pair for (device, job, co-runner) = {key}; ISACPP's setting "
                       f"needs every pair of known job types profiled")


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
            for (d, w, co), v in zip(held[["device", "workload", "co_runners"]].itertuples(index=False), values, strict=True):
                out[(d, w, co[0])] = float(v)
        return out


# ---------------------------------------------------------------------------- predictors


class GraphPairModel(Predictor):
    """What both E-GGAT networks share: node features, edges, the validation split, training.

    A subclass gives the network (:meth:`_network`); :meth:`_targets` gives the labels of the
    training graphs ([G, 2]: each pair's two jobs' normalized throughput).
    """

    def __init__(self, seed: int = 0, hidden: int = 512, heads: int = 3, layers: int = 2,
                 edge: str = "lgbm", lr: float = 1e-3, batch_size: int = 64, max_epochs: int = 200,
                 patience: int = 20, val_fraction: float = 0.15, solo_feature: bool = False,
                 clip_inputs: bool = True, edge_params: dict | None = None, drop: tuple = (),
                 self_loops: bool = False):
        super().__init__(seed)
        self.hidden, self.heads, self.layers, self.edge = hidden, heads, layers, edge
        self.lr, self.batch_size, self.max_epochs, self.patience = lr, batch_size, max_epochs, patience
        self.val_fraction, self.solo_feature, self.clip_inputs = val_fraction, solo_feature, clip_inputs
        self.edge_params = edge_params  # options of the LightGBM pair baseline of the edges (edge "lgbm")
        self.drop = drop  # node feature groups left out (FEATURE_GROUPS)
        self.self_loops = self_loops  # an edge from each job to itself (coloc's earlier form; not ISACPP's graphs)

    profiled = False  # True: may read the measured pairs at inference (ISACPP's setting, egat-profiled)
    limits = {"hidden": (1, 2048), "heads": (1, 8), "layers": (1, 8), "batch_size": (1, 512),
              "max_epochs": (1, 10_000), "patience": (1, 10_000)}
    limits_why = ("the largest network within them has 0.74e9 parameters: 11 GiB with gradients and Adam's state, "
                  "within a 24 GB machine (hidden 1e8 asked for 8e16 bytes); epochs: the default run trains 40")

    def check_params(self) -> None:
        if self.edge not in EDGE_CHOICES:
            raise ValueError(f"edge {self.edge!r}; expected one of {EDGE_CHOICES}")
        if (self.edge == "measured") != self.profiled:
            raise ValueError(f"{self.name}: edge {self.edge!r}; measured edges (the pair's own label at inference) "
                             f"only as egat-profiled, ISACPP's setting, which always uses them")
        if self.edge_params is not None:
            check_params(LightGBMPairs, self.edge_params, "edge_params", fixed=("spread",))
        unknown = [g for g in self.drop if g not in FEATURE_GROUPS]
        if isinstance(self.drop, str) or unknown:
            raise ValueError(f"drop {self.drop!r}; expected a list of feature groups among {FEATURE_GROUPS}")
        if set(FEATURE_GROUPS) <= set(self.drop) and not self.solo_feature:
            raise ValueError(f"drop {list(self.drop)} leaves no node features")
        if not (isinstance(self.layers, int) and self.layers >= 1):
            raise ValueError(f"layers {self.layers!r}; expected an integer >= 1")
        if not isinstance(self.self_loops, bool):
            raise ValueError(f"self_loops {self.self_loops!r}; expected true or false")

    # -- node features
    def _feature_columns(self, workloads: pd.DataFrame) -> list[str]:
        cols = [c for c in graph_columns(workloads)
                if ("hyper" if c in HYPER_COLUMNS else "model") not in self.drop]
        if "gpu" not in self.drop:
            cols += list(ISACPP_FEATURES)
        return cols + (["throughput", "util"] if self.solo_feature else [])

    def _raw_nodes(self, tables: Tables) -> pd.DataFrame:
        return np.log1p(job_frame(tables)[self.columns_].astype(float))

    def _nodes(self, tables: Tables) -> pd.DataFrame:
        raw = self._raw_nodes(tables)
        scaled = (raw - self.min_) / self.span_
        if self.clip_inputs:  # a job or device outside the training range sits at its edge
            scaled = scaled.clip(0.0, 1.0)
        return scaled.fillna(0.0)

    # -- edges
    def _reads_edges(self, sets) -> bool:
        """Whether an edge value can change the output on these graphs: always with self-loops; without them
        only in a set of three or more jobs. In a pair the softmax runs over one in-edge (weight 1 whatever
        its logit), so the edge value cannot change the prediction and is not computed (set_graphs)."""
        return self.self_loops or any(len(jobs) > 2 for _, jobs in sets)

    def _edge_model(self) -> "EdgeModel":
        """The LightGBM edge model (edge "lgbm"), fitted on the training fold when an edge is first read."""
        if self.edges_ is None:
            self.edges_ = EdgeModel(self.seed, **(self.edge_params or {})).fit(self.train_)
        return self.edges_

    def _edge_fn(self, context: Tables, known: dict | None = None):
        if self.edge == "constant":
            return lambda device, dst, src: np.ones(len(dst))
        if self.edge == "measured":
            known = measured_edges(context) if known is None else known
        if known is not None:
            return lambda device, dst, src: np.array([known[k] for k in zip(device, dst, src, strict=True)])
        return lambda device, dst, src: self._edge_model().predict(context, device, dst, src)

    # -- what a subclass gives
    def _training_pairs(self, train: Tables) -> pd.DataFrame:
        """The pairs whose graphs are trained on (the feasible ones)."""
        return train.pairs[train.pairs["feasible"].astype(bool)].reset_index(drop=True)

    def _targets(self, pairs: pd.DataFrame, train: Tables) -> torch.Tensor:
        return torch.tensor(pairs[["norm_a", "norm_b"]].to_numpy(np.float32))

    def _network(self, in_dim: int, y_fit: torch.Tensor) -> nn.Module:
        raise NotImplementedError

    def fit(self, train: Tables, groups: str | None = None) -> "GraphPairModel":
        self.check_params()
        pairs = self._training_pairs(train)
        if len(pairs) < 3:
            raise InsufficientData(f"{self.name}: {len(pairs)} feasible training pairs; need at least 3")
        self.columns_ = self._feature_columns(train.workloads)
        raw = self._raw_nodes(train)
        self.min_, span = raw.min(), raw.max() - raw.min()
        self.span_ = span.where(span > 0, 1.0)
        sets = [(d, (a, b)) for d, a, b in pairs[["device", "workload_a", "workload_b"]].itertuples(index=False)]
        self.train_, self.edges_, known = train, None, None
        if self._reads_edges(sets) and self.edge == "lgbm":
            known = self._edge_model().training_edges(train, groups)
        elif self._reads_edges(sets) and self.edge == "measured":
            known = measured_edges(train)  # the training fold's measured pairs (ISACPP profiled them)
        x, e, adj, mask = set_graphs(sets, self._nodes(train), self._edge_fn(train, known), self.self_loops)
        y = self._targets(pairs, train)
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
            net = self._network(x.shape[-1], y[fit])
        opt = torch.optim.Adam(net.parameters(), lr=self.lr)
        loss_fn = nn.SmoothL1Loss()
        best, best_state, stale, epoch = float("inf"), None, 0, 0
        shuffle = np.random.default_rng(derived_seed(self.seed, "egat-batches"))
        # (the loop's last epoch is returned with the network)
        for epoch in range(1, self.max_epochs + 1):  # noqa: B007
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

    def _outputs(self, queries: pd.DataFrame, context: Tables) -> torch.Tensor:
        """The network's output for each query's job (node 0 of the query's graph)."""
        sets = [(d, (w, *co)) for d, w, co in queries[["device", "workload", "co_runners"]].itertuples(index=False)]
        x, e, adj, _ = set_graphs(sets, self._nodes(context), self._edge_fn(context), self.self_loops)
        with torch.no_grad():
            return self.net_(x, e, adj)[:, 0]

    def predict(self, queries, context):
        return result(queries.index, self._outputs(queries, context).numpy().astype(float))


@register
class EGGAT(GraphPairModel):
    """ISACPP's E-GGAT as published (the module docstring): ``layers`` = its number of blocks."""

    name = "egat"
    defaults = {"layers": 3}  # the reference trains GGAT_with_3_blocks

    def _network(self, in_dim, y_fit):
        out_dim = 1 if y_fit.dim() == 2 else y_fit.shape[-1]
        net = PublishedNet(in_dim, self.hidden, self.heads, self.layers, out_dim)
        flat = y_fit.reshape(-1, out_dim)
        net.start_at(flat.mean(0), OUTPUT_HEADROOM * flat.max(0).values.clamp(min=1e-6))
        return net


@register
class EGGATConstantEdges(EGGAT):
    """The ablation: the published E-GGAT with constant edges (what it adds beyond its LightGBM edge)."""

    name = "egat-const"
    defaults = {"edge": "constant"}


@register
class EGGATProfiled(EGGAT):
    """ISACPP's setting (the module docstring): the published E-GGAT whose edges, in training and at inference,
    are the measured pair slowdowns, since ISACPP profiles every pair of known job types beforehand. At
    inference it reads the measured label of the pair it predicts: an upper reference for egat, not an
    out-of-fold prediction in coloc's sense (egat is coloc's honest setting: predicted edges for new types)."""

    name = "egat-profiled"
    defaults = {"edge": "measured"}
    profiled = True


@register
class EGGATSelfLoops(EGGAT):
    """The published E-GGAT on coloc's earlier graphs: each job also attends to itself (a self-loop, edge 0), so
    on a pair the edge sets the weight of the co-runner against the job itself and can change the prediction."""

    name = "egat-selfloops"
    defaults = {"self_loops": True}


@register
class EGGATProfiledSelfLoops(EGGATProfiled):
    """egat-profiled (ISACPP's setting, measured edges) on coloc's earlier graphs with self-loops: the measured
    pair's edge can change its own prediction (without self-loops it cannot, on a pair)."""

    name = "egat-profiled-selfloops"
    defaults = {"self_loops": True}


@register
class EGGATColoc(GraphPairModel):
    """coloc's E-GGAT variant (the module docstring): edge added to score and message, MLP readout; self-loops."""

    name = "egat-coloc"
    defaults = {"self_loops": True}

    def _network(self, in_dim, y_fit):
        net = EGGATNet(in_dim, self.hidden, self.heads, self.layers)
        with torch.no_grad():  # start the readout at the training mean
            net.readout[-1].bias.fill_(float(y_fit.mean()))
        return net
