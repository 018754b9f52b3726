# Helpers of the predictors stage (workflow/rules/predictors.smk): the checked model options, the run files.
# prediction_file(kind, dataset, protocol) is the path of an out-of-fold file, for the rules that read one.

from coloc import datasets
from coloc.predict import check_options, stage
from coloc.predict.protocols import probe_protocol

PRED = config["predictors"]
# Users' own sources (config datasets.user.<name>, rules in user_data.smk): datasets user-<name>, next to Gavel's.
USER_DATASETS = [f"{stage.USER_PREFIX}{name}" for name in config.get("datasets", {}).get("user", {})]
PRED_DATASETS = datasets.names() + USER_DATASETS  # the registered datasets (coloc.datasets), in their order
# The (dataset, protocol) runs: the cross-dataset protocol runs on the cross dataset (Gavel's and Lucid's shared
# families) only, the other protocols on every other dataset (coloc.predict.stage.dataset_protocols), a dataset
# named in predictors.dataset_protocols those it lists only.
DATASET_PROTOCOLS = PRED.get("dataset_protocols", {})
PRED_RUNS = [(d, p) for d in PRED_DATASETS for p in stage.dataset_protocols(d, PRED["protocols"], DATASET_PROTOCOLS)]
# Every configured model and its options, checked against the registry before anything runs.
for _name, _options in PRED["models"].items():
    check_options(_name, _options, "pair")
for _name, _options in PRED["util_models"].items():
    check_options(_name, _options, "util")
for _dataset, _names in PRED.get("dataset_models", {}).items():
    if set(_names) - set(PRED["models"]):
        raise ValueError(f"predictors.dataset_models.{_dataset}: {sorted(set(_names) - set(PRED['models']))} not "
                         f"among predictors.models {list(PRED['models'])}")
for _dataset in PRED.get("dataset_protocols", {}):
    stage.dataset_protocols(_dataset, PRED["protocols"], PRED["dataset_protocols"])  # refuses an unknown protocol

GAVEL_FIGURE = "figures/predictors/gavel_{protocol}_{kind}.png"
GAVEL_FIGURE_KINDS = ["scatter", "error_cdf", "family_mape"] + (["horus_util"] if "horus" in PRED["util_models"] else [])
# The per-protocol figures are drawn for the protocols without probes; the probe protocols (lofo-probe-<k>) get
# two figures of error against k and against profiling seconds, when any runs.
PLAIN_PROTOCOLS = [p for p in stage.dataset_protocols("gavel", PRED["protocols"], DATASET_PROTOCOLS) if probe_protocol(p) is None]
PROBE_FIGURES = ({"k": "figures/predictors/gavel_probe_k.png", "seconds": "figures/predictors/gavel_probe_seconds.png"}
                 if any(probe_protocol(p) for p in PRED["protocols"]) else {})


def prediction_file(kind, dataset, protocol):
    """The out-of-fold file of ``kind`` ("predictions": pairs, "utilization": solo utilization) that the predictors
    stage makes for ``dataset`` (coloc.datasets) under ``protocol``; ValueError for one it does not make."""
    if kind not in ("predictions", "utilization"):
        raise ValueError(f"prediction_file: kind {kind!r}; expected 'predictions' or 'utilization'")
    return stage.run_file(kind, dataset, protocol, PRED["protocols"])


def predictor_runs(kind):
    """The ``kind`` file (a key of stage.RUN_FILES) of every (dataset, protocol) run."""
    return [stage.RUN_FILES[kind].format(dataset=d, protocol=p) for d, p in PRED_RUNS]


def predictor_tables(wildcards):
    """The solo and pairs tables of the run's dataset."""
    folder = stage.dataset_folder(wildcards.dataset)
    return {"solo": f"{folder}/solo.parquet", "pairs": f"{folder}/pairs.parquet"}


def predictor_settings(wildcards):
    """The run's settings as notebook parameters (the families of the predictors key the dataset names,
    Dataset.families_key: Gavel's families apply to Gavel only, Lucid's to Lucid; a dataset named in
    predictors.dataset_models runs the pair models it lists only)."""
    settings = {key: PRED[key] for key in ("seeds", "folds", "models", "util_models")}
    only = PRED.get("dataset_models", {}).get(wildcards.dataset)  # the default run's time: fewer models there
    if only is not None:
        settings["models"] = {name: options for name, options in PRED["models"].items() if name in only}
    key = datasets.get(wildcards.dataset).families_key
    settings["families"] = PRED.get(key, []) if key else []
    return as_yaml(settings)


USER_SOURCES = config.get("datasets", {}).get("user", {})


def user_csvs(wildcards):
    """The source's CSV files (its solo CSV only when it has one)."""
    source = USER_SOURCES[wildcards.name]
    return {"pairs": source["pairs"], **({"solo": source["solo"]} if source.get("solo") else {})}


def user_solo_param(wildcards, input):
    """The solo CSV as the notebook's parameter, as YAML ("" when the source has none: an empty value on the
    command line would vanish)."""
    return as_yaml({"solo_csv": input.get("solo", "")})
