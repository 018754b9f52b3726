"""A user's own model as a job type: `package.module:function` returning (model, batch)."""
import re

import pytest
import torch

from coloc import profiler, workloads
from coloc.features import extract

TINY = "user_models.tiny:make"  # tests/ is on sys.path under pytest (rootdir-relative test modules)


def test_a_user_model_trains_with_the_default_loss_seeded_and_on_its_device():
    job = workloads.build(TINY, "cpu", seed=3)
    assert job.spec == workloads.WorkloadSpec(TINY, TINY, "user", "user", 8)
    assert isinstance(job.optimizer, torch.optim.Adam) and job.batch[0].shape == (8, 64)
    with torch.no_grad():
        expected = job.model(job.batch[0]).float().pow(2).mean().item()  # the synthetic objective, stated
    losses = [job.step() for _ in range(3)]
    assert losses[0] == pytest.approx(expected) and losses[2] < losses[0]  # Adam lowers it
    assert workloads.build(TINY, "cpu", seed=3).step() == losses[0]       # same seed, same model and batch
    assert workloads.build(TINY, "cpu", seed=4).step() != losses[0]


def test_a_user_loss_fn_runs_forward_and_loss_and_a_dict_batch_goes_as_keywords():
    job = workloads.build("user_models.tiny:make_with_loss", "cpu")
    inputs, labels = job.batch
    with torch.no_grad():
        expected = torch.nn.functional.cross_entropy(job.model(inputs), labels).item()
    assert job.step() == pytest.approx(expected)
    keywords = workloads.build("user_models.tiny:make_keywords_model", "cpu")
    assert len(keywords.batch) == 2 and keywords.step() > 0  # model(x=..., labels=...) returns its own loss


def test_features_of_a_user_model_on_the_meta_device():
    row = extract(TINY)
    assert (row["family"], row["dataset"], row["batch_size"]) == (TINY, "user", 8)
    assert row["params"] == 64 * 128 + 128 + 128 * 10 + 10 and row["input_bytes"] == 8 * 64 * 4
    assert row["flops_fwd"] == 2 * 8 * (64 * 128 + 128 * 10)


@pytest.mark.parametrize("path, message", [
    ("user_models.absent:make", "user model 'user_models.absent:make': cannot import module 'user_models.absent' "
                                "(ModuleNotFoundError"),
    ("user_models.tiny:missing", "user model 'user_models.tiny:missing': module 'user_models.tiny' ("),
    ("user_models.tiny:NOT_A_FUNCTION", "has no function 'NOT_A_FUNCTION'"),
    ("user_models.tiny:wrong_return", "returned a Linear; expected (model, batch) or (model, batch, loss_fn)"),
    ("user_models.tiny:not_a_model", "the model it returned is a str; expected a torch.nn.Module"),
    ("user_models.tiny:raises", "user model 'user_models.tiny:raises': calling it on the meta device raised "
                                "RuntimeError: weights not found"),
    ("user_models.tiny:tuple_output", "the model's output is a tuple of 2 (Tensor, Tensor): the default loss"),
])
def test_a_user_model_that_cannot_be_had_is_an_error_naming_the_path(path, message):
    with pytest.raises(workloads.user.UserModelError) as err:
        workloads.check(path)
    with pytest.raises(profiler.ProfilerError, match=re.escape(str(err.value))):
        profiler.plan([path, "lm-wikitext2-b5"])  # refused before measuring
    assert message in str(err.value)
    assert "put its folder on PYTHONPATH" in str(err.value) or "absent" not in path


def test_names_are_zoo_names_or_import_paths_and_the_plan_says_where_names_come_from():
    assert workloads.known("lm-wikitext2-b5") and workloads.known(TINY) and workloads.known("a.b.c:f_1")
    for name in ["mymodel", "a.b:", ":f", "a-b:f", "a.b:f.g", "a b:f"]:
        assert not workloads.known(name)
    plan = profiler.plan([TINY, "lm-wikitext2-b5"])
    assert {m.workloads for m in plan} >= {(TINY,), tuple(sorted((TINY, "lm-wikitext2-b5")))}
    with pytest.raises(profiler.ProfilerError, match=r"job types \['mymodel'\]: expected names from "
                                                     r"coloc.workloads.names\(\), or user models' import paths"):
        profiler.plan(["mymodel", TINY])
    with pytest.raises(KeyError, match="or a user model's import path package.module:function"):
        workloads.build("mymodel")
