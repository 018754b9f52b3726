"""Config files are plain data: a YTE template, YAML anchors and aliases, and Python tags are refused, before
Snakemake evaluates the file where the workflow profile applies (real `snakemake` calls), after it where not."""

import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from coloc import config as cfg
from coloc.config_files import UnsafeConfigFile, check_config_file, check_config_value, command_line_config

REPO = Path(__file__).resolve().parents[1]
SCHEMA = yaml.safe_load((REPO / "config" / "config.schema.yaml").read_text())


def template_that_writes(marker: Path) -> str:
    """A config a hostile sender could pass: valid coloc keys, and a YTE expression that creates ``marker``."""
    return f"__use_yte__: true\nreadme:\n  fill: ?open({str(marker)!r}, 'w').write('ran') and False\n"


def alias_bomb(levels: int = 9) -> str:
    """The billion laughs: 10 strings, each level 10 aliases of the one before (10**levels values, ~400 bytes)."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    names = "abcdefghijklmnop"
    for before, name in itertools.pairwise(names[:levels]):
        lines.append(f"{name}: &{name} [{', '.join([f'*{before}'] * 10)}]")
    return "\n".join(lines) + "\n"


def snakemake(workdir: Path, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--cores", "1", "-n",
                             *args], cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
    return result, time.monotonic() - start


@pytest.mark.parametrize("name", ["config.yaml", "ci.yaml", "paper.yaml"])
def test_the_shipped_configs_are_plain_data(name):
    check_config_file(REPO / "config" / name)


def test_a_json_config_is_read_as_json(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"readme": {"fill": false}}')
    check_config_file(path)


def test_a_template_is_refused_by_file_and_key_without_running_it(tmp_path):
    marker, path = tmp_path / "PWNED", tmp_path / "c.yaml"
    path.write_text(template_that_writes(marker))
    with pytest.raises(UnsafeConfigFile, match=rf"{path}: top-level __use_yte__: True makes the file a YTE template"):
        check_config_file(path)
    assert not marker.exists()


def test_anchors_aliases_and_python_tags_are_refused_by_file_and_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("readme:\n  fill: false\nx: !!python/name:os.system\n")
    with pytest.raises(UnsafeConfigFile, match=rf"{path}, line 3: .*python/name.*a config file is plain YAML"):
        check_config_file(path)
    path.write_text("readme: &r\n  fill: false\nother: *r\n")
    with pytest.raises(UnsafeConfigFile, match=rf"{path}, line 1: YAML anchor &r refused"):
        check_config_file(path)
    path.write_text(alias_bomb())
    start = time.process_time()
    with pytest.raises(UnsafeConfigFile, match="YAML anchor &a refused"):
        check_config_file(path)
    assert time.process_time() - start < 1
    with pytest.raises(UnsafeConfigFile, match=r"--config trace=\.\.\.: YAML anchors and aliases refused"):
        check_config_value("trace", "{a: &a [1, 2], b: *a}")
    check_config_value("trace", "{a: [1, 2], b: [1, 2]}")


def test_a_config_expanded_by_aliases_is_refused_before_it_is_walked():
    bomb = yaml.load(alias_bomb(), Loader=yaml.SafeLoader)  # shared lists: 1e9 values written out
    start = time.process_time()
    with pytest.raises(cfg.ConfigError, match="more than 100000 values once YAML aliases are expanded"):
        cfg.check_size(bomb)
    assert time.process_time() - start < 5
    cfg.check_size(yaml.safe_load((REPO / "config" / "paper.yaml").read_text()))


def test_the_command_line_config_is_read_as_snakemake_reads_it(tmp_path):
    files, entries = command_line_config(["-n", "--configfile", "a.yaml", "b.yaml", "--config", "x=1", "y=&a [*a]"])
    assert files == [Path("a.yaml"), Path("b.yaml")] and entries == ["x=1", "y=&a [*a]"]
    files, _ = command_line_config(["--configfile", "a.yaml", "--configfiles=c.yaml"])  # the last one wins
    assert files == [Path("c.yaml")]
    profile = tmp_path / "mine"
    profile.mkdir()
    (profile / "config.yaml").write_text(f"configfile: [{tmp_path / 'p.yaml'}]\n")
    assert command_line_config(["--profile", str(profile)])[0] == [tmp_path / "p.yaml"]


@pytest.mark.slow
def test_a_template_config_file_never_runs(tmp_path):
    marker, path = tmp_path / "PWNED", tmp_path / "hostile.yaml"
    path.write_text(template_that_writes(marker))
    result, _ = snakemake(tmp_path, "--configfile", str(path))
    assert result.returncode == 1
    assert (f"coloc: config refused before Snakemake read it: {path}: top-level __use_yte__: True makes the file a "
            f"YTE template") in result.stderr
    assert not marker.exists()


@pytest.mark.slow
def test_without_the_workflow_profile_a_template_is_refused_only_after_it_ran(tmp_path):
    """The documented limit: Snakemake evaluates a config file before the Snakefile runs."""
    marker, path = tmp_path / "PWNED", tmp_path / "hostile.yaml"
    path.write_text(template_that_writes(marker))
    result, _ = snakemake(tmp_path, "--workflow-profile", "none", "--configfile", str(path))
    assert result.returncode == 1
    assert "Snakemake read this file before the workflow could check it" in result.stdout + result.stderr
    assert marker.read_text() == "ran"


@pytest.mark.slow
def test_an_alias_bomb_is_refused_at_once_with_or_without_the_profile(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    result, seconds = snakemake(tmp_path, "--configfile", str(path))
    assert result.returncode == 1 and seconds < 60
    assert f"coloc: config refused before Snakemake read it: {path}, line 1: YAML anchor &a refused" in result.stderr
    result, seconds = snakemake(tmp_path, "--workflow-profile", "none", "--configfile", str(path))
    assert result.returncode == 1 and seconds < 60
    assert f"{path}, line 1: YAML anchor &a refused" in result.stdout + result.stderr
    value = "trace={" + alias_bomb(7).strip().replace("\n", ", ") + "}"
    result, seconds = snakemake(tmp_path, "--config", value)
    assert result.returncode == 1 and seconds < 60
    assert "--config trace=...: YAML anchors and aliases refused" in result.stderr
    result, seconds = snakemake(tmp_path, "--workflow-profile", "none", "--config", value)  # 1e7 values
    assert result.returncode == 1 and seconds < 60
    assert "config: more than 100000 values once YAML aliases are expanded" in result.stdout + result.stderr
