"""A thin command line over coloc's functions: ``coloc <command> ...``."""

from __future__ import annotations

import argparse
import importlib
import sys

import yaml

from coloc import sources


def _selected_sources(args: argparse.Namespace) -> list[sources.Source]:
    if args.url:
        if not (args.file and args.sha256):
            raise SystemExit("coloc fetch: --url needs --file and --sha256 as well")
        return [sources.Source(args.file, args.file, args.url, args.sha256.lower(), "")]
    table = sources.sources_from_config(_read_config(args.config))
    names = args.name or sorted(table)
    unknown = [n for n in names if n not in table]
    if unknown:
        raise SystemExit(f"coloc fetch: unknown source {unknown}; {args.config} defines {sorted(table)}")
    return [table[n] for n in names]


def _read_config(path: str) -> dict:
    try:
        with open(path) as fh:
            config = yaml.safe_load(fh)
    except OSError as err:
        raise sources.SourceError(f"{path}: cannot read the config ({err.strerror})") from err
    except yaml.YAMLError as err:
        raise sources.SourceError(f"{path}: not valid YAML ({err})") from err
    if not isinstance(config, dict):
        raise sources.SourceError(f"{path}: expected a YAML mapping with a 'sources' section, got {config!r:.80}")
    return config


def _fetch(args: argparse.Namespace) -> int:
    try:
        mirror = sources.mirror_folder(args.mirror)
        for source in _selected_sources(args):
            print(f"{source.file}: from {f'mirror {mirror}' if mirror else source.url}", flush=True)
            path = sources.fetch(source, args.raw_dir, mirror)
            print(f"{source.file}: {path} sha256 {source.sha256} verified", flush=True)
    except sources.SourceError as err:
        print(f"coloc fetch: {err}", file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="coloc", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser(
        "fetch", help="download (or copy from a mirror) and verify reference data files",
        description="Fetch the sources of a config file (default: all), or one file given by --file/--url/--sha256.",
    )
    fetch.add_argument("--config", default="config/config.yaml", help="config file with a 'sources' section")
    fetch.add_argument("--name", action="append", help="source name from the config (repeatable)")
    fetch.add_argument("--file", help="path of the file under the raw folder and the mirror")
    fetch.add_argument("--url", help="public URL of the file")
    fetch.add_argument("--sha256", help="expected sha256 of the file")
    fetch.add_argument("--raw-dir", default="data/raw", help="folder the files go to")
    fetch.add_argument("--mirror", default=None,
                       help=f"mirror folder to copy from instead of downloading (${sources.MIRROR_ENV} takes precedence)")
    fetch.set_defaults(run=_fetch)
    commands.add_parser("readme", add_help=False,
                        help="write the README's result tables from a run's outputs, or check them (coloc readme --help)")
    commands.add_parser("probe", add_help=False,
                        help="measure a new model next to k reference job types, predict it next to every job type "
                             "(coloc probe --help)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["probe"]:
        # imported only when it runs: `coloc fetch` (the workflow's download rule) runs this file, and the
        # rule's code inputs (coloc.modules, which follows import statements) stay this file and sources
        return importlib.import_module("coloc.probe").main(argv[1:])
    if argv[:1] == ["readme"]:
        return importlib.import_module("coloc.readme").main(argv[1:])
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
