"""Reference data files: where they come from, and how to fetch them safely.

Each source is a public file pinned to a commit, with its sha256 and licence
(config/config.yaml, key ``sources``). :func:`fetch` downloads it, or copies
it from a local mirror folder when one is configured, verifies the sha256 and
only then renames it into place, so an interrupted or corrupt transfer never
leaves a file that looks valid.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Callable, Mapping

import requests

MIRROR_ENV = "COLOC_DATA_MIRROR"
CHUNK = 1 << 20
FIELDS = ("file", "url", "sha256", "licence")


class SourceError(RuntimeError):
    """A reference file could not be fetched or failed its checksum."""


@dataclass(frozen=True)
class Source:
    """One reference data file: its path under the raw folder, public URL, sha256 and licence."""

    name: str
    file: str
    url: str
    sha256: str
    licence: str

    def __post_init__(self):
        problem = fields_problem(vars(self))
        if problem:
            raise SourceError(f"source {self.name}: {problem}")


def fields_problem(fields: Mapping) -> str | None:
    """What is wrong with a source's fields, as '<field>: <why>', or None.

    Each field is text; ``file`` stays inside its folder (:func:`relative_problem`); ``sha256``
    is 64 lower-case hex digits; ``url`` starts with http:// or https://.
    """
    for field in FIELDS:
        if not isinstance(fields[field], str):
            return f"{field}: {fields[field]!r} is {type(fields[field]).__name__}; expected text"
    if relative_problem(fields["file"]):
        return f"file: {fields['file']!r}: {relative_problem(fields['file'])}"
    if not re.fullmatch(r"[0-9a-f]{64}", fields["sha256"]):
        return f"sha256: {fields['sha256']!r} is not 64 hex digits"
    if not re.match(r"https?://", fields["url"]):
        return f"url: {fields['url']!r} does not start with http:// or https://"
    return None


def relative_problem(file: str) -> str | None:
    """Why ``file`` is not a path that stays inside its folder (the raw folder, the mirror), or None.

    Refused: an absolute path, a '..' part, an empty path, a backslash or a NUL character; and a path that names a
    folder, not a file: a '.' or empty part (``gavel/.``, ``gavel/``, ``a//b``).
    """
    path = PurePosixPath(file)
    if not path.parts or path.is_absolute() or ".." in path.parts or "\\" in file or "\0" in file:
        return "expected a relative path inside the folder (no leading '/', no '..' part, not empty, no backslash)"
    if any(part in ("", ".") for part in file.split("/")):
        return "expected the path of a file (no '.' or empty part, no trailing '/'): it names a folder"
    return None


def sources_from_config(config: Mapping) -> dict[str, Source]:
    """The ``sources`` section of a config as Source objects, keyed by name; any mistake is a SourceError."""
    section = config.get("sources") if isinstance(config, Mapping) else None
    if not isinstance(section, Mapping) or not section:
        raise SourceError("config: key 'sources' must map source names to {file, url, sha256, licence}")
    out = {}
    for name, entry in section.items():
        if not isinstance(entry, Mapping):
            raise SourceError(f"config: sources.{name} must map {', '.join(FIELDS)} to text, got {entry!r}")
        missing = [k for k in FIELDS if k not in entry]
        if missing:
            raise SourceError(f"config: sources.{name} lacks {', '.join(missing)}")
        fields = {k: entry[k].lower() if k == "sha256" and isinstance(entry[k], str) else entry[k] for k in FIELDS}
        problem = fields_problem(fields)
        if problem:
            raise SourceError(f"config: sources.{name}.{problem}")
        out[name] = Source(name, **fields)
    return out


def mirror_folder(configured: str | os.PathLike | None = None) -> Path | None:
    """The mirror folder to copy from: $COLOC_DATA_MIRROR if set, else the configured one, else None."""
    chosen = os.environ.get(MIRROR_ENV) or configured
    return Path(chosen) if chosen else None


def sha256_of(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_fetched(table: Mapping[str, Source], raw_dir: str | os.PathLike) -> None:
    """Refuse the files already in ``raw_dir`` whose sha256 is not their source's (edited or corrupt raw data).

    One :class:`SourceError` names every such file with both hashes. The workflow calls this
    before any rule runs: Snakemake runs no download for a file that exists, so an edited
    ``data/raw/philly/philly.csv`` would otherwise flow into the tables. :func:`fetch` (``coloc
    fetch``) replaces such a file from its source, verified. Files not fetched yet are skipped.
    """
    problems = []
    for name, source in table.items():
        path = Path(raw_dir) / source.file
        if path.is_file() and (actual := sha256_of(path)) != source.sha256:
            problems.append(f"{path}: sha256 {actual}, expected {source.sha256} (sources.{name})")
    if problems:
        raise SourceError(
            "raw data differs from its source (raw files are never edited; delete them, or run "
            "`coloc fetch` to replace them from their sources):\n  " + "\n  ".join(problems)
        )


def fetch(source: Source, raw_dir: str | os.PathLike, mirror: str | os.PathLike | None = None) -> Path:
    """Put ``source`` at ``raw_dir/source.file``, verified; return its path.

    A file already there is hashed again, and kept if its sha256 is right. Otherwise
    (missing, edited or corrupt) the file is copied from ``mirror`` (when given) or
    downloaded from its URL into a temporary file beside the destination, checked, and
    renamed into place. Any failure removes the temporary file and raises
    :class:`SourceError` naming the file, where it came from, and the expected and actual
    hash. ``mirror`` is a folder path, used as it is (never expanded or given to a shell).
    """
    dest = Path(raw_dir) / source.file
    if dest.is_dir():
        raise SourceError(f"{source.file}: {dest} is a folder; expected a file there (or none)")
    if dest.exists() and sha256_of(dest) == source.sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    if mirror is not None:
        origin = Path(mirror) / source.file
        if not origin.is_file():
            raise SourceError(
                f"{source.file}: not found in mirror folder {Path(mirror).resolve()} "
                f"(expected {origin}; unset {MIRROR_ENV} or the config key 'mirror' to download from {source.url})"
            )
        _write_verified(source, dest, str(origin), lambda out: _copy_file(origin, out))
    else:
        _write_verified(source, dest, source.url, lambda out: _download(source, out))
    return dest


def _write_verified(source: Source, dest: Path, origin: str, write: Callable[[IO[bytes]], None]) -> None:
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())  # mkstemp makes it 0600; a fetched file gets what open() would give
        with os.fdopen(fd, "wb") as out:
            write(out)
        actual = sha256_of(tmp)
        if actual != source.sha256:
            raise SourceError(
                f"{source.file}: checksum mismatch for the copy from {origin}: "
                f"expected sha256 {source.sha256}, got {actual}; the file was not kept"
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def current_umask() -> int:
    """This process's umask, read from /proc (Linux) without changing it; elsewhere set and restored at once."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def _copy_file(origin: Path, out: IO[bytes]) -> None:
    with open(origin, "rb") as src:
        shutil.copyfileobj(src, out, CHUNK)


def _download(source: Source, out: IO[bytes]) -> None:
    try:
        with requests.get(source.url, stream=True, timeout=(10, 60)) as response:
            response.raise_for_status()
            for chunk in response.iter_content(CHUNK):
                out.write(chunk)
    except requests.RequestException as err:
        raise SourceError(
            f"{source.file}: could not download {source.url} (expected sha256 {source.sha256}; "
            f"set {MIRROR_ENV} to a folder holding a copy to work offline): {err}"
        ) from err
