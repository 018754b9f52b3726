"""The published E-GGAT layer (coloc.predict.egat): attention, blocks, readout, feature groups."""

import numpy as np
import pandas as pd
import pytest
import torch

from coloc.devices import ISACPP_FEATURES
from coloc.predict import make_predictor
from coloc.predict.egat import EdgeScaledAttention, PublishedNet, set_graphs


def graphs(edges):
    """One graph of three jobs (every edge, self-loops included) with edge values ``edges`` [3, 3]."""
    torch.manual_seed(0)
    h = torch.randn(1, 3, 4)
    e = torch.tensor(edges, dtype=torch.float32).view(1, 3, 3, 1)
    return h, e, torch.ones(1, 3, 3, dtype=torch.bool)


def z_of(att, h):
    return torch.nn.functional.leaky_relu(att.fc(h))


def test_zero_edges_give_uniform_attention_since_the_edge_scales_the_logit():
    h, e, adj = graphs([[0.0] * 3] * 3)
    att = EdgeScaledAttention(4, 5)
    out = att(h, e, adj)
    mean_z = z_of(att, h).mean(1, keepdim=True).expand(1, 3, 5)  # logit x 0 = 0 for every edge: softmax uniform
    torch.testing.assert_close(out, mean_z)


def test_edges_change_the_attention_unless_the_mailbox_scale_is_zero():
    h, e, adj = graphs([[0.0, 1.0, 2.0], [0.5, 0.0, 1.5], [2.0, 1.0, 0.0]])
    att = EdgeScaledAttention(4, 5)
    with torch.no_grad():
        att.edge_scale.fill_(1.0)
        att.mail_scale.fill_(3.0)
    uniform = z_of(att, h).mean(1, keepdim=True).expand(1, 3, 5)
    assert not torch.allclose(att(h, e, adj), uniform)
    with torch.no_grad():
        att.mail_scale.fill_(0.0)
    torch.testing.assert_close(att(h, e, adj), uniform)


def test_heads_are_concatenated():
    h, e, adj = graphs([[0.0, 1.0, 2.0], [0.5, 0.0, 1.5], [2.0, 1.0, 0.0]])
    assert EdgeScaledAttention(4, 5, heads=3)(h, e, adj).shape == (1, 3, 15)


@pytest.mark.parametrize("layers", [1, 3])
def test_blocks_first_without_gate_later_ones_share_one_gate(layers):
    net = PublishedNet(6, hidden=8, heads=3, layers=layers)
    assert len(net.blocks) == layers + 1  # ISACPP's GGAT_with_L_blocks: L multi-head blocks and a single-head one
    assert net.blocks[0].gate is None and net.blocks[0].heads is not None
    assert all(b.gate is net.gate for b in net.blocks[1:])
    assert net.blocks[-1].heads is None
    n_gate = sum(p.numel() for p in net.gate.parameters())
    n_blocks_alone = sum(p.numel() for b in net.blocks for n, p in b.named_parameters() if not n.startswith("gate."))
    assert sum(p.numel() for p in net.parameters()) == n_gate + n_blocks_alone + 8 + 1  # the gate counted once


def test_readout_is_a_scaled_sigmoid_starting_at_the_mean():
    net = PublishedNet(4, hidden=8, heads=2, layers=2)
    net.start_at(torch.tensor([0.6]), torch.tensor([1.5]))
    with torch.no_grad():
        net.readout.weight.zero_()
    h, e, adj = graphs([[0.0, 1.0, 2.0], [0.5, 0.0, 1.5], [2.0, 1.0, 0.0]])
    torch.testing.assert_close(net(h, e, adj), torch.full((1, 3), 0.6))
    with torch.no_grad():
        net.readout.bias.fill_(50.0)
    assert float(net(h, e, adj).detach().max()) == pytest.approx(1.5)  # never above the scale


def test_padding_does_not_change_a_graph_output():
    net = PublishedNet(4, hidden=8, heads=2, layers=2)
    torch.manual_seed(1)
    x = torch.randn(1, 2, 4)
    e = torch.tensor([[[0.0, 0.7], [0.3, 0.0]]]).unsqueeze(-1)
    adj = torch.ones(1, 2, 2, dtype=torch.bool)
    padded_x = torch.cat([x, torch.randn(1, 1, 4)], 1)
    padded_e = torch.nn.functional.pad(e, (0, 0, 0, 1, 0, 1))
    padded_adj = torch.zeros(1, 3, 3, dtype=torch.bool)
    padded_adj[:, :2, :2] = True
    torch.testing.assert_close(net(padded_x, padded_e, padded_adj)[:, :2], net(x, e, adj))


WORKLOADS = pd.DataFrame({"workload": ["a"], "family": ["f"], "batch_size": [8], "flops_step": [1.0],
                          "n_ops": [3]})


@pytest.mark.parametrize("drop, gone", [(["gpu"], set(ISACPP_FEATURES)), (["hyper"], {"batch_size"}),
                                        (["model"], {"flops_step", "n_ops"})])
def test_feature_groups_can_be_left_out(drop, gone):
    full = set(make_predictor("egat")._feature_columns(WORKLOADS))
    kept = set(make_predictor("egat", drop=drop)._feature_columns(WORKLOADS))
    assert full - kept == gone


def test_bad_feature_groups_are_refused():
    with pytest.raises(ValueError, match="drop 'gpu'; expected a list"):
        make_predictor("egat", drop="gpu").check_params()
    with pytest.raises(ValueError, match="among"):
        make_predictor("egat", drop=["gpus"]).check_params()
    with pytest.raises(ValueError, match="leaves no node features"):
        make_predictor("egat", drop=["gpu", "hyper", "model"]).check_params()


def test_egat_is_the_published_network_and_egat_coloc_the_variant():
    assert make_predictor("egat").layers == 3 and make_predictor("egat-const").edge == "constant"
    assert make_predictor("egat-const").layers == 3
    assert make_predictor("egat-coloc").layers == 2


def test_isacpp_graphs_have_no_self_loops_and_the_named_variants_do():
    loops = {name: make_predictor(name).self_loops for name in
             ("egat", "egat-const", "egat-profiled", "egat-selfloops", "egat-profiled-selfloops", "egat-coloc")}
    assert loops == {"egat": False, "egat-const": False, "egat-profiled": False, "egat-selfloops": True,
                     "egat-profiled-selfloops": True, "egat-coloc": True}
    assert make_predictor("egat-selfloops").layers == 3 and make_predictor("egat-profiled-selfloops").edge == "measured"
    with pytest.raises(ValueError, match="self_loops 'no'; expected true or false"):
        make_predictor("egat", self_loops="no").check_params()


NODES = pd.DataFrame({"f": [1.0, 2.0, 3.0]},
                     index=pd.MultiIndex.from_tuples([("v100", "a"), ("v100", "b"), ("v100", "c")]))


def edge_values(calls):
    """An edge function giving 10 x (destination's letter) + (source's letter) as 1.., recording what it was asked."""
    def edge_fn(device, dst, src):
        calls.extend(zip(dst, src, strict=True))
        return np.array([10 * (ord(d) - 96) + ord(s) - 96 for d, s in zip(dst, src, strict=True)], float)
    return edge_fn


def test_graphs_without_self_loops_compute_no_edge_of_a_pair_and_every_edge_of_a_larger_set():
    calls = []
    x, e, adj, mask = set_graphs([("v100", ("a", "b")), ("v100", ("a", "b", "c"))], NODES, edge_values(calls))
    assert sorted(calls) == [("a", "b"), ("a", "c"), ("b", "a"), ("b", "c"), ("c", "a"), ("c", "b")]  # the triple's
    assert adj[0].tolist() == [[False, True, False], [True, False, False], [False, False, False]]
    assert not adj[1].diagonal().any() and int(adj[1].sum()) == 6
    assert float(e[0].abs().sum()) == 0.0  # the pair's edges are never read: left 0
    assert float(e[1, 0, 2, 0]) == 13.0 and float(e[1, 2, 1, 0]) == 32.0  # edge j -> i at [i, j]
    assert mask.tolist() == [[True, True, False], [True, True, True]]


def test_graphs_with_self_loops_attend_to_the_job_itself_with_edge_zero():
    calls = []
    _, e, adj, _ = set_graphs([("v100", ("a", "b"))], NODES, edge_values(calls), self_loops=True)
    assert adj[0].tolist() == [[True, True], [True, True]] and sorted(calls) == [("a", "b"), ("b", "a")]
    assert e[0, :, :, 0].tolist() == [[0.0, 12.0], [21.0, 0.0]]


def test_on_a_pair_without_self_loops_each_job_gets_its_co_runner_whatever_the_edge():
    """ISACPP's layer on a pair: one in-edge per job, softmax weight 1, so h_i = z_j for any edge value; with a
    self-loop the edge moves the weight between the co-runner and the job itself."""
    torch.manual_seed(0)
    att = EdgeScaledAttention(4, 5)
    with torch.no_grad():
        att.edge_scale.fill_(1.0)
        att.mail_scale.fill_(3.0)
    h = torch.randn(1, 2, 4)
    z = z_of(att, h)
    no_loops = torch.tensor([[[False, True], [True, False]]])
    for value in (0.0, 0.7, 5.0):
        e = torch.tensor([[[0.0, value], [value, 0.0]]]).unsqueeze(-1)
        torch.testing.assert_close(att(h, e, no_loops), z.flip(1), rtol=0, atol=0)
    loops = torch.ones(1, 2, 2, dtype=torch.bool)
    small, large = (att(h, torch.tensor([[[0.0, v], [v, 0.0]]]).unsqueeze(-1), loops) for v in (0.1, 2.0))
    assert not torch.allclose(small, large)
