"""A new predictor as docs/extending.md says to write one, here in a test module: a `Predictor` registered by
`@register`, accepted by the config check under `predictors.models` once registered (its options checked, an
unknown name refused), made by name as the predictors stage makes it and fitted on a tiny hand-made table."""
import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from coloc import config as cfg, predict
from coloc.predict import registry
from coloc.predict.base import InsufficientData, Predictor, Tables, pair_labels, predict_pairs, result

REPO = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((REPO / "config" / "config.schema.yaml").read_text())
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


class DeviceMean(Predictor):
    """The mean normalized throughput of the training pairs on the queried device; the mean over every device where
    that device has fewer than `min_rows` training rows."""

    name = "toy-device-mean"
    limits = {"min_rows": (1, 1000)}

    def __init__(self, seed: int = 0, min_rows: int = 1):
        super().__init__(seed)
        self.min_rows = min_rows

    def fit(self, train: Tables, groups: str | None = None) -> "DeviceMean":
        labels = pair_labels(train.pairs)
        if labels.empty:
            raise InsufficientData(f"{self.name}: no feasible training pairs")
        by_device = labels.groupby("device")["norm"].agg(["mean", "size"])
        self.overall_ = float(labels["norm"].mean())
        self.by_device_ = by_device.loc[by_device["size"] >= self.min_rows, "mean"].to_dict()
        return self

    def predict(self, queries, context):
        return result(queries.index, queries["device"].map(self.by_device_).fillna(self.overall_).to_numpy(float))


@pytest.fixture
def own_registry(monkeypatch):
    """The registry's pair models as a copy, so that what a test registers leaves with it."""
    predict.names()  # every module of the package imported (registered) first
    monkeypatch.setitem(registry.REGISTRY, "pair", dict(registry.REGISTRY["pair"]))


def with_models(models: dict) -> dict:
    config = copy.deepcopy(DEFAULT)
    config["predictors"]["models"].update(models)
    return config


def mistakes(config: dict) -> str:
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, SCHEMA)
    return str(err.value)


def test_the_config_check_knows_the_new_predictor_once_registered_and_checks_its_options(own_registry):
    config = with_models({"toy-device-mean": {"min_rows": 2}})
    known = predict.names("pair")
    assert ("predictors.models.toy-device-mean: unknown pair predictor 'toy-device-mean'; "
            f"known: {known}") in mistakes(config)
    registry.register(DeviceMean)
    cfg.check(config, SCHEMA)
    assert ("predictors.models.toy-device-mean: pair predictor 'toy-device-mean': option min_rows 0; expected an "
            "integer from 1 to 1000") in mistakes(with_models({"toy-device-mean": {"min_rows": 0}}))
    assert ("predictors.models.toy-device-mean: pair predictor 'toy-device-mean': unknown option 'min_row' (did you "
            "mean 'min_rows'?)") in mistakes(with_models({"toy-device-mean": {"min_row": 2}}))
    assert "predictors.models.toy-devise-mean: unknown pair predictor 'toy-devise-mean'" in mistakes(
        with_models({"toy-devise-mean": {}}))


def tiny() -> Tables:
    """k80: pairs (a, b) at 0.5 / 0.7 and (a, a) at 0.6 / 0.6; v100: (a, b) at 0.9 / 0.8, (b, b) not fitting."""
    pairs = pd.DataFrame({"device": ["k80", "k80", "v100", "v100"], "workload_a": ["a", "a", "a", "b"],
                          "workload_b": ["b", "a", "b", "b"], "norm_a": [0.5, 0.6, 0.9, np.nan],
                          "norm_b": [0.7, 0.6, 0.8, np.nan], "feasible": [True, True, True, False]})
    solo = pd.DataFrame({"device": ["k80", "k80", "v100", "v100"], "workload": ["a", "b", "a", "b"],
                         "throughput": [1.0, 2.0, 3.0, 4.0]})
    workloads = pd.DataFrame({"workload": ["a", "b"], "family": ["fa", "fb"], "batch_size": [32, 64]})
    devices = pd.DataFrame({"name": ["k80", "p100", "v100"], "peak_flops": [4e12, 9e12, 14e12]})
    return Tables(workloads, solo, pairs, devices)


def test_the_new_predictor_made_by_name_fits_a_tiny_table_as_its_rule_says(own_registry):
    registry.register(DeviceMean)
    queries = pd.DataFrame({"device": ["k80", "v100", "p100"], "workload_a": "a", "workload_b": "b"})
    overall = (0.5 + 0.7 + 0.6 + 0.6 + 0.9 + 0.8) / 6
    model = predict.make_predictor("toy-device-mean", seed=0).fit(tiny())
    out = predict_pairs(model, queries, tiny())
    assert out["pred_norm_a"].tolist() == pytest.approx([0.6, 0.85, overall])  # p100: no training pair
    assert out["pred_norm_b"].tolist() == pytest.approx([0.6, 0.85, overall])
    few = predict.make_predictor("toy-device-mean", seed=0, min_rows=3).fit(tiny())
    assert predict_pairs(few, queries, tiny())["pred_norm_a"].tolist() == pytest.approx([0.6, overall, overall])
