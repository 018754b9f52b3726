"""ISACPP's ablation of egat (coloc.predict.ablation): the variants and the table."""

import pandas as pd

from coloc.predict import check_options
from coloc.predict.ablation import ablation_table, describe, variants


def test_variants_change_one_thing_of_the_configured_egat():
    configured = {"hidden": 32, "heads": 2, "layers": 1, "seeds": [0], "protocols": ["lofo"]}
    out = variants(configured, layers=[1, 3])
    assert list(out) == ["egat-no-gpu", "egat-no-hyper", "egat-no-model", "egat-blocks-1", "egat-blocks-3"]
    assert out["egat-no-hyper"] == {"hidden": 32, "heads": 2, "layers": 1, "base": "egat", "drop": ["hyper"]}
    assert out["egat-blocks-3"] == {"hidden": 32, "heads": 2, "layers": 3, "base": "egat"}  # run options left out
    for name, options in out.items():
        check_options(name, options)  # every variant is a valid configured predictor
    assert [describe(n) for n in out] == ["without GPU features", "without hyperparameter features",
                                          "without model features", "1 block", "3 blocks"]


def test_table_is_mean_mape_per_variant_and_protocol_in_the_variants_order():
    summary = pd.DataFrame({"protocol": ["lofo", "lofo", "random5", "random5"],
                            "predictor": ["egat-blocks-1", "egat-no-gpu", "egat-no-gpu", "egat-blocks-1"],
                            "MAPE": [20.0, 25.0, 9.0, 8.0]})
    table = ablation_table(summary, ["egat-no-gpu", "egat-blocks-1"])
    assert list(table.index) == ["egat-no-gpu", "egat-blocks-1"] and list(table.columns) == ["variant", "lofo", "random5"]
    assert table.loc["egat-no-gpu", "lofo"] == 25.0 and table.loc["egat-blocks-1", "random5"] == 8.0
