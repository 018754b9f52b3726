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
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable, Mapping

import requests

MIRROR_ENV = "COLOC_DATA_MIRROR"
CHUNK = 1 << 20


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


def sources_from_config(config: Mapping) -> dict[str, Source]:
    """The ``sources`` section of a config as Source objects, keyed by name."""
    section = config.get("sources")
    if not isinstance(section, Mapping) or not section:
        raise SourceError("config: key 'sources' must map source names to {file, url, sha256, licence}")
    out = {}
    for name, entry in section.items():
        missing = [k for k in ("file", "url", "sha256", "licence") if k not in entry]
        if missing:
            raise SourceError(f"config: sources.{name} lacks {', '.join(missing)}")
        out[name] = Source(name, entry["file"], entry["url"], entry["sha256"].lower(), entry["licence"])
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


def fetch(source: Source, raw_dir: str | os.PathLike, mirror: str | os.PathLike | None = None) -> Path:
    """Put ``source`` at ``raw_dir/source.file``, verified; return its path.

    A file already there with the right sha256 is kept. Otherwise the file is
    copied from ``mirror`` (when given) or downloaded from its URL into a
    temporary file beside the destination, checked, and renamed into place.
    Any failure removes the temporary file and raises :class:`SourceError`
    naming the file, where it came from, and the expected and actual hash.
    """
    dest = Path(raw_dir) / source.file
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
