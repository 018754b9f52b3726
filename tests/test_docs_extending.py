"""docs/extending.md's example policy, as the page gives it: its Python block saved as the module the page names,
found by the registry with no other edit, and run on a small trace where its rule decides where a job goes."""
import re
from pathlib import Path

import pytest
from sim_cases import ABC, predictions, tables, trace

from coloc import policies
from coloc.sim import ClusterSpec, GroundTruth, simulate

PAGE = Path(__file__).resolve().parents[1] / "docs" / "extending.md"


def python_blocks(text: str) -> list[str]:
    """The fenced ```python blocks of a Markdown text."""
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


@pytest.fixture
def example_policy(policy_module):
    """The page's policy module, written where the package finds modules (a temporary folder on its path)."""
    text = PAGE.read_text()
    module = re.search(r"An example, `lib/coloc/policies/(\w+)\.py`", text)
    assert module, "docs/extending.md no longer names its example's module as `lib/coloc/policies/<name>.py`"
    blocks = [b for b in python_blocks(text) if "@register(" in b]
    assert len(blocks) == 1, f"docs/extending.md holds {len(blocks)} Python blocks registering a policy, not 1"
    policy_module(module[1], blocks[0])
    return re.search(r'@register\("([^"]+)"\)', blocks[0])[1]


def run(name: str, predicted: dict):
    """a and b start on the two idle GPUs at 0 (1,000 s each); c (100 s) comes at 10 with no GPU idle."""
    solo, pairs = tables(ABC)
    jobs = trace([(0, 0.0, 1000.0, 1, "a"), (1, 0.0, 1000.0, 1, "b"), (2, 10.0, 100.0, 1, "c")])
    result = simulate(jobs, GroundTruth(solo, pairs, "v100"), policies.get(name), ClusterSpec((("v100", 2),)),
                      predictions(predicted))
    return result.jobs.set_index("workload")


def test_the_example_policy_is_found_by_the_registry_as_the_page_says(example_policy):
    assert example_policy == "best-pair"
    assert policies.info(example_policy) == {"kind": "predictive", "needs": ("norm",), "optional": ()}


def test_the_example_policy_joins_the_resident_whose_predicted_pair_gains_most(example_policy):
    """Predicted pairs: c with a 0.8 + 0.9 = 1.7, c with b 0.4 + 0.3 = 0.7: c joins a at once."""
    jobs = run(example_policy, ABC)
    assert jobs.loc["c", "start_time"] == 10.0
    assert jobs.loc["a", "colocated_time"] > 0 and jobs.loc["b", "colocated_time"] == 0
    # c with b predicted at 0.9 + 0.95 = 1.85 now gains most: c joins b instead
    jobs = run(example_policy, {**ABC, ("b", "c"): (0.9, 0.95)})
    assert jobs.loc["c", "start_time"] == 10.0
    assert jobs.loc["b", "colocated_time"] > 0 and jobs.loc["a", "colocated_time"] == 0


def test_the_example_policy_waits_for_an_idle_gpu_when_no_pair_is_predicted_to_gain(example_policy):
    """Every pair predicted at 0.5 + 0.5 = 1, no gain: c waits for the first GPU to free, at 1,000 s."""
    jobs = run(example_policy, {pair: (0.5, 0.5) for pair in ABC})
    assert jobs.loc["c", "start_time"] == 1000.0
    assert (jobs["colocated_time"] == 0).all()
