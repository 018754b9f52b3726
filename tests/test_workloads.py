"""The workload zoo: registry, building on meta, real CPU training steps, determinism."""
import dataclasses
import json
import math
import re

import pytest
import torch

from coloc import datasets, workloads
from coloc.workloads.catalog import ENTRIES

torch.set_num_threads(1)

NAME = re.compile(r"[a-z0-9]+-[a-z0-9]+-b\d+(-amp)?")
FAMILY_DATASETS = sorted(ENTRIES)
# (job type, batch) stepped on the CPU at their real batch and input size
# cross-entropy at initialisation is about log(number of classes) when the model starts out uniform
INITIAL_LOSS = {("lm", "wikitext2"): math.log(33278), ("gnmt", "wmt16"): math.log(32320),
                ("transformer", "multi30k"): math.log(5500), ("bert", "wikipedia"): math.log(30522) + math.log(2),
                ("resnet50", "imagenet"): math.log(1000), ("gru", "sst2"): math.log(2)}
REAL_SIZE = ["lm-wikitext2-b5", "a3c-pong-b4", "recommendation-ml20m-b512", "gru-sst2-b32",
             "squeezenet-cifar10-b32"]


def smallest(family: str, dataset: str) -> str:
    entry = ENTRIES[family, dataset]
    return f"{family}-{dataset}-b{min(entry.batch_sizes)}"


def test_names_are_sorted_unique_and_well_formed():
    names = workloads.names()
    assert names == sorted(set(names))
    assert 80 <= len(names) <= 200
    for n in names:
        assert NAME.fullmatch(n), n
        s = workloads.spec(n)
        assert f"{s.family}-{s.dataset}-b{s.batch_size}{'-amp' if s.amp else ''}" == n


def test_gavel_names_are_the_26_job_types_of_the_gavel_file(mirror):
    raw = json.loads((mirror / "gavel" / "simulation_throughputs.json").read_text())
    labels = {key.split("'")[1] for key in raw["v100"] if key.endswith(", 1)")}
    assert len(labels) == 26
    assert workloads.gavel_names() == sorted(datasets.gavel_workload_id(label) for label in labels)


def test_spec_fields():
    s = workloads.spec("transformer-multi30k-b128")
    assert (s.family, s.dataset, s.task, s.batch_size) == ("transformer", "multi30k", "translation", 128)
    assert workloads.spec("cyclegan-monet2photo-b1").task == "image-to-image"
    assert workloads.spec("a3c-pong-b4").task == "rl"
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.batch_size = 3


@pytest.mark.parametrize("bad, suggestion", [("resnet50-imagenet-b63", "resnet50-imagenet-b64"),
                                             ("resnet18-cifar-b32", "resnet18-cifar10-b32"),
                                             ("vgg16-imagenet", "vgg16-imagenet-b16")])
def test_unknown_name_raises_keyerror_with_close_matches(bad, suggestion):
    with pytest.raises(KeyError, match=suggestion):
        workloads.spec(bad)
    with pytest.raises(KeyError):
        workloads.build(bad, device="meta")


def test_every_job_type_builds_on_meta_without_memory():
    for n in workloads.names():
        job = workloads.build(n, device="meta")
        assert all(p.is_meta for p in job.model.parameters()), n
        assert all(t.is_meta for t in job.batch), n
        assert job.spec.batch_size in job.batch[0].shape, n
        assert job.optimizer.param_groups[0]["params"], n


@pytest.mark.parametrize("family, dataset", FAMILY_DATASETS)
def test_training_step_runs_on_cpu(family, dataset):
    """A real step (reduced batch and input size) changes the parameters and gives a finite loss."""
    job = workloads.build(smallest(family, dataset), batch_size=2 if family != "cyclegan" else 1,
                          reduced=True)
    trained = [p for p in job.model.parameters() if p.requires_grad]  # TD3's target networks are not
    before = [p.detach().clone() for p in trained]
    loss = job.step()
    assert math.isfinite(loss)
    if (family, dataset) in INITIAL_LOSS:
        assert loss == pytest.approx(INITIAL_LOSS[family, dataset], abs=1.5)
    assert all(p.grad is not None for p in job.model.parameters() if p.requires_grad)
    changed = sum(not torch.equal(a, p) for a, p in zip(before, trained, strict=True))
    assert changed >= 0.9 * len(before)


@pytest.mark.parametrize("name", REAL_SIZE)
def test_training_step_at_real_batch(name):
    job = workloads.build(name)
    assert job.spec.batch_size in job.batch[0].shape
    assert math.isfinite(job.step())


@pytest.mark.parametrize("name", ["resnet18-cifar10-b16", "lm-wikitext2-b5"])
def test_repeated_steps_on_one_batch_reduce_the_loss(name):
    job = workloads.build(name, batch_size=2, reduced=True)
    losses = [job.step() for _ in range(4)]
    assert losses[-1] < losses[0]


def test_same_seed_same_model_batch_and_losses():
    """The LM uses dropout: equal losses need the job's own random stream."""
    a, b = (workloads.build("lm-wikitext2-b5", batch_size=2, seed=7, reduced=True) for _ in range(2))
    c = workloads.build("lm-wikitext2-b5", batch_size=2, seed=8, reduced=True)
    assert all(torch.equal(x, y) for x, y in zip(a.model.parameters(), b.model.parameters(), strict=True))
    assert all(torch.equal(x, y) for x, y in zip(a.batch, b.batch, strict=True))
    torch.manual_seed(1)
    la = [a.step() for _ in range(2)]
    torch.manual_seed(2)  # the caller's global stream must not matter
    lb = [b.step() for _ in range(2)]
    assert la == lb
    assert not torch.equal(a.batch[0], c.batch[0])
    assert not torch.equal(next(a.model.parameters()), next(c.model.parameters()))


def test_build_and_step_leave_the_global_random_stream_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    job = workloads.build("transformer-multi30k-b16", device="meta")
    job = workloads.build("lm-wikitext2-b5", batch_size=2, reduced=True)
    job.step()
    assert torch.equal(torch.rand(3), expected)


def test_batch_size_override_and_validation():
    job = workloads.build("resnet50-imagenet-b64", device="meta", batch_size=3)
    assert job.batch[0].shape == (3, 3, 224, 224) and job.batch[1].shape == (3,)
    assert job.spec.batch_size == 64
    with pytest.raises(ValueError, match="resnet50-imagenet-b64"):
        workloads.build("resnet50-imagenet-b64", device="meta", batch_size=0)


def test_meta_jobs_refuse_to_step():
    job = workloads.build("squeezenet-cifar10-b32", device="meta")
    with pytest.raises(RuntimeError, match="meta"):
        job.step()


def test_loss_is_a_differentiable_scalar():
    job = workloads.build("a3c-pong-b4", batch_size=2, reduced=True)
    loss = job.loss(job.model, job.batch)
    assert loss.dim() == 0 and loss.requires_grad
