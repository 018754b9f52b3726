"""coloc.sources: mirror copies, real HTTP downloads, checksums, atomic writes."""

import functools
import hashlib
import http.server
import shutil
import socket
import threading
from pathlib import Path

import pytest
import yaml

from coloc import cli, sources

REPO = Path(__file__).resolve().parents[1]
PAYLOAD = b"job,throughput\nresnet18,32.5\n" * 100


def make_source(tmp_path: Path, payload: bytes = PAYLOAD, url: str = "http://127.0.0.1:9/never") -> sources.Source:
    mirror = tmp_path / "mirror" / "sub"
    mirror.mkdir(parents=True)
    (mirror / "table.csv").write_bytes(payload)
    return sources.Source("table", "sub/table.csv", url, hashlib.sha256(PAYLOAD).hexdigest(), "test")


@pytest.fixture
def http_folder(tmp_path):
    """A real HTTP server on loopback serving tmp_path/served."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_config_sources_match_the_mirror_readme():
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    table = sources.sources_from_config(config)
    assert set(table) == {"gavel_throughputs", "philly_trace"}
    assert table["gavel_throughputs"].sha256 == "17111f7295f03265fd9e5118d7eba31e3dd9d6e50a2e215c13ad3d3f91f74381"
    assert table["philly_trace"].sha256 == "ebffb3dd1589bdf4e7bcd74496201c5ded1d557d498ee14f560463f37ec353da"
    for source in table.values():
        assert source.url.startswith("https://raw.githubusercontent.com/")
        commit = source.url.split("/")[5]
        assert len(commit) == 40 and all(c in "0123456789abcdef" for c in commit), source.url
        assert source.url.endswith(Path(source.file).name)


def test_copy_from_mirror_verifies_and_lands(tmp_path):
    source = make_source(tmp_path)
    path = sources.fetch(source, tmp_path / "raw", tmp_path / "mirror")
    assert path == tmp_path / "raw" / "sub" / "table.csv"
    assert path.read_bytes() == PAYLOAD
    assert [p.name for p in path.parent.iterdir()] == ["table.csv"]


def test_valid_existing_file_is_kept_without_touching_the_mirror(tmp_path):
    source = make_source(tmp_path)
    first = sources.fetch(source, tmp_path / "raw", tmp_path / "mirror")
    shutil.rmtree(tmp_path / "mirror")
    assert sources.fetch(source, tmp_path / "raw", tmp_path / "mirror") == first


def test_wrong_checksum_names_file_source_and_both_hashes_and_leaves_nothing(tmp_path):
    corrupted = bytearray(PAYLOAD)
    corrupted[10] ^= 0xFF
    source = make_source(tmp_path, bytes(corrupted))
    with pytest.raises(sources.SourceError) as err:
        sources.fetch(source, tmp_path / "raw", tmp_path / "mirror")
    message = str(err.value)
    assert "sub/table.csv" in message and str(tmp_path / "mirror" / "sub" / "table.csv") in message
    assert source.sha256 in message and hashlib.sha256(corrupted).hexdigest() in message
    assert list((tmp_path / "raw").rglob("*")) == [tmp_path / "raw" / "sub"]


def test_corrupt_existing_file_is_replaced_by_a_verified_copy(tmp_path):
    source = make_source(tmp_path)
    dest = tmp_path / "raw" / "sub" / "table.csv"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(b"truncated")
    sources.fetch(source, tmp_path / "raw", tmp_path / "mirror")
    assert dest.read_bytes() == PAYLOAD


def test_missing_mirror_file_names_the_file_and_the_folder(tmp_path):
    source = make_source(tmp_path)
    empty = tmp_path / "empty-mirror"
    empty.mkdir()
    with pytest.raises(sources.SourceError, match=r"sub/table.csv: not found in mirror folder .*empty-mirror"):
        sources.fetch(source, tmp_path / "raw", empty)


def test_real_http_download(tmp_path, http_folder):
    served, base = http_folder
    (served / "table.csv").write_bytes(PAYLOAD)
    source = sources.Source("t", "sub/table.csv", f"{base}/table.csv", hashlib.sha256(PAYLOAD).hexdigest(), "x")
    assert sources.fetch(source, tmp_path / "raw").read_bytes() == PAYLOAD


def test_http_error_and_unreachable_url_name_file_url_and_hash(tmp_path, http_folder):
    _, base = http_folder
    digest = hashlib.sha256(PAYLOAD).hexdigest()
    for url in (f"{base}/missing.csv", f"http://127.0.0.1:{closed_port()}/table.csv"):
        source = sources.Source("t", "sub/table.csv", url, digest, "x")
        with pytest.raises(sources.SourceError) as err:
            sources.fetch(source, tmp_path / "raw")
        assert "sub/table.csv" in str(err.value) and url in str(err.value) and digest in str(err.value)
        assert not any(p.is_file() for p in (tmp_path / "raw").rglob("*"))


def test_environment_variable_overrides_configured_mirror(monkeypatch, tmp_path):
    monkeypatch.delenv(sources.MIRROR_ENV, raising=False)
    assert sources.mirror_folder(None) is None
    assert sources.mirror_folder("cfg") == Path("cfg")
    monkeypatch.setenv(sources.MIRROR_ENV, str(tmp_path))
    assert sources.mirror_folder("cfg") == tmp_path


def test_config_without_a_field_is_rejected():
    with pytest.raises(sources.SourceError, match="sources.x lacks sha256"):
        sources.sources_from_config({"sources": {"x": {"file": "a", "url": "u", "licence": "l"}}})


def test_cli_fetch_reports_checksum_failure(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(sources.MIRROR_ENV, raising=False)
    source = make_source(tmp_path, b"other bytes")
    code = cli.main(["fetch", "--file", source.file, "--url", source.url, "--sha256", source.sha256,
                     "--raw-dir", str(tmp_path / "raw"), "--mirror", str(tmp_path / "mirror")])
    assert code == 1
    assert "checksum mismatch" in capsys.readouterr().err
