"""A config file is plain data: a file that could run code or expand without bound is refused before Snakemake reads it.

Snakemake reads a YAML config file with YTE: a top-level ``__use_yte__: true`` makes the file a template whose
``?expressions`` and ``__definitions__`` are Python, evaluated while the file is read. It reads every
``--configfile`` while parsing its command line, before the workflow's Snakefile runs, so no check in the
Snakefile can refuse such a file before its code has run. What Snakemake reads earlier still is the workflow
profile ``profiles/default/config.yaml`` (found next to the Snakefile, applied to every run that does not pass
``--workflow-profile``): it calls :func:`refuse_unsafe_command_line`, which reads each config file the command
line names (``--configfile`` / ``--configfiles``, or the ``configfile`` of a ``--profile``) as plain YAML and
stops Snakemake with the reason when one is a template (``__use_yte__``), holds an anchor or alias (1.4 KB of
aliases expands to 1e9 values, which the config check then walks for hours), or a tag beyond plain YAML's
(``!!python/...``). A ``--config`` value with an alias is refused alike.

The Snakefile checks the config files Snakemake read again (:func:`check_config_file`, ``common.smk``): that
check comes after Snakemake evaluated them and catches a run that bypassed the profile (``--workflow-profile
none``, or Snakemake's Python API), whose config files are code. JSON config files are read as JSON first, as
Snakemake does (it evaluates no template in JSON).

This module imports nothing of coloc: the profile loads it by its path, before coloc is importable.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

TEMPLATE_KEY = "__use_yte__"


class UnsafeConfigFile(ValueError):
    """A config file (or ``--config`` value) that is not plain data; the message names the file, line and reason."""


class _PlainLoader(yaml.SafeLoader):
    """YAML's safe tags, no anchors or aliases."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            kind = "alias *" if isinstance(event, yaml.AliasEvent) else "anchor &"
            raise UnsafeConfigFile(f"{self.name}, line {event.start_mark.line + 1}: YAML {kind}{event.anchor} refused: "
                                   f"a config file is plain YAML without anchors or aliases (a few of them expand to "
                                   f"billions of values); write the values out")
        return super().compose_node(parent, index)


def plain_data(path: Path | str):
    """The file's values, read as JSON, else as plain YAML (:class:`_PlainLoader`); :class:`UnsafeConfigFile` if
    it is neither."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except ValueError:
        pass
    loader = _PlainLoader(text)
    loader.name = str(path)
    try:
        return loader.get_single_data()
    except yaml.constructor.ConstructorError as err:
        line = err.problem_mark.line + 1 if err.problem_mark else "?"
        raise UnsafeConfigFile(f"{path}, line {line}: {err.problem}; a config file is plain YAML (strings, numbers, "
                               f"booleans, null, lists, mappings), without tags that build Python objects") from None
    except yaml.YAMLError:
        return None  # not YAML at all: Snakemake names the file and the syntax error itself
    finally:
        loader.dispose()


def check_config_file(path: Path | str) -> None:
    """Refuse a config file that is a YTE template, holds anchors or aliases, or tags beyond plain YAML's."""
    data = plain_data(path)
    if isinstance(data, dict) and TEMPLATE_KEY in data:
        raise UnsafeConfigFile(f"{path}: top-level {TEMPLATE_KEY}: {data[TEMPLATE_KEY]!r} makes the file a YTE "
                               f"template, whose expressions are Python that Snakemake runs while reading it; coloc's "
                               f"config files are plain YAML: remove {TEMPLATE_KEY} and write the values out")


def check_config_value(key: str, text: str) -> None:
    """Refuse a ``--config key=value`` whose value is YAML with an alias (Snakemake expands it while merging)."""
    try:
        events = list(yaml.parse(text))
    except yaml.YAMLError:
        return  # Snakemake keeps it as text
    if any(isinstance(e, yaml.AliasEvent) or getattr(e, "anchor", None) for e in events):
        raise UnsafeConfigFile(f"--config {key}=...: YAML anchors and aliases refused in a config value (a few of "
                               f"them expand to billions of values); write the values out")


def command_line_config(argv: list[str]) -> tuple[list[Path], list[str]]:
    """(the config files, the ``--config`` entries) a Snakemake command line gives, read by Snakemake's own parser
    (the ``configfile`` / ``config`` of the ``--profile`` it names, where the command line has none)."""
    from snakemake.cli import get_argument_parser

    args, _ = get_argument_parser().parse_known_args(argv)
    if args.profile and args.profile != ["none"]:
        args, _ = get_argument_parser(profiles=args.profile).parse_known_args(argv)
    return [Path(p) for p in args.configfile or []], list(args.config or [])


def refuse_unsafe_command_line(argv: list[str] | None = None) -> None:
    """Stop Snakemake (exit status 1, the reason on stderr) before it reads a config file or value that is not plain
    data (see the module's text); called by the workflow profile."""
    files, entries = command_line_config(sys.argv[1:] if argv is None else argv)
    try:
        for path in files:
            if path.is_file():  # a missing one: Snakemake says so
                check_config_file(path)
        for entry in entries:
            key, _, text = entry.partition("=")
            check_config_value(key, text)
    except UnsafeConfigFile as err:
        print(f"coloc: config refused before Snakemake read it: {err}", file=sys.stderr)
        raise SystemExit(1) from None
