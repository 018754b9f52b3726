"""requirements.txt and environment.yml pin the same packages at the same versions."""

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
REQUIRED = {"snakemake", "papermill", "jupyterlab", "ipykernel", "nbval", "pytest", "pandas", "pyarrow", "seaborn",
            "matplotlib", "lightgbm", "scikit-learn", "torch", "nvidia-ml-py", "psutil", "tqdm", "requests"}


def pins(lines):
    out = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-e"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==([A-Za-z0-9_.+-]+)", line)
        assert match, f"not an exact pin: {line!r}"
        out[match.group(1).lower()] = match.group(2)
    return out


def test_requirements_and_environment_agree():
    requirements = pins((REPO / "requirements.txt").read_text().splitlines())
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    deps = env["dependencies"]
    assert "python=3.11" in deps and "pip" in deps
    pip_section = next(d["pip"] for d in deps if isinstance(d, dict))
    assert pins(pip_section) == requirements
    assert REQUIRED <= set(requirements)
    assert requirements["torch"] == "2.13.0"


def test_ci_runs_exactly_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    commands = re.findall(r"```bash\n(python3\.11 -m venv [^\n]+)\n```", readme)
    assert len(commands) == 2 and commands[0].endswith("snakemake --cores all")
    test_command = commands[1]
    assert test_command.endswith("ruff check . && python -m pytest")  # the linter first, then every test
    assert test_command in (REPO / ".ci" / "run").read_text().splitlines()
