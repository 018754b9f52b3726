"""coloc.sources: mirror copies, real HTTP downloads, checksums, atomic writes."""

import functools
import hashlib
import http.server
import os
import shlex
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import jsonschema
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
    assert set(table) == {"gavel_throughputs", "philly_trace", "lucid_pairs", "lucid_solo"}
    assert table["gavel_throughputs"].sha256 == "17111f7295f03265fd9e5118d7eba31e3dd9d6e50a2e215c13ad3d3f91f74381"
    assert table["philly_trace"].sha256 == "ebffb3dd1589bdf4e7bcd74496201c5ded1d557d498ee14f560463f37ec353da"
    assert table["lucid_pairs"].sha256 == "eb17384138b035112e7118b9fd33ae2ab9040fb4688942c74af59a700425ed0d"
    assert table["lucid_solo"].sha256 == "6bce9f9410b9d1529c7bcfca50aa7c7bc9684dff49da8e13414013325f99ed23"
    assert all("S-Lab License 1.0" in table[n].licence and "commercial" in table[n].licence
               for n in ("lucid_pairs", "lucid_solo"))
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


# ---------------------------------------------------------------------------- paths, config mistakes, hostile strings

@pytest.mark.parametrize("file", ["../x.csv", "sub/../../x.csv", "/tmp/x.csv", "", ".", "sub\\..\\x.csv"])
def test_a_source_file_outside_its_folder_is_refused(tmp_path, file):
    """A source `file: ../x` wrote outside data/raw; now refused by Source, the config reader and the schema."""
    entry = {"file": file, "url": "https://example.org/x.csv", "sha256": hashlib.sha256(PAYLOAD).hexdigest(),
             "licence": "x"}
    with pytest.raises(sources.SourceError, match=r"config: sources.x.file: .*expected a relative path inside"):
        sources.sources_from_config({"sources": {"x": entry}})
    with pytest.raises(sources.SourceError, match=r"source x: file: .*expected a relative path inside"):
        sources.Source("x", **entry)
    schema = yaml.safe_load((REPO / "config" / "config.schema.yaml").read_text())
    file_schema = schema["properties"]["sources"]["additionalProperties"]["properties"]["file"]
    assert not jsonschema.Draft202012Validator(file_schema).is_valid(file)


def test_cli_fetch_refuses_a_file_outside_the_raw_folder_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(sources.MIRROR_ENV, raising=False)
    mirror = tmp_path / "mirror" / "inner"
    mirror.mkdir(parents=True)
    (tmp_path / "mirror" / "escape.csv").write_bytes(PAYLOAD)
    code = cli.main(["fetch", "--file", "../escape.csv", "--url", "http://127.0.0.1:9/x",
                     "--sha256", hashlib.sha256(PAYLOAD).hexdigest(), "--raw-dir", str(tmp_path / "raw" / "inner"),
                     "--mirror", str(mirror)])
    assert code == 1
    assert "file: '../escape.csv': expected a relative path inside the folder" in capsys.readouterr().err
    assert not (tmp_path / "raw").exists()


@pytest.mark.parametrize("config, message", [
    ({"trace": {}}, "config: key 'sources' must map source names to {file, url, sha256, licence}"),
    ({"sources": {"x": {"file": "a.csv", "url": "https://e.org/a", "sha256": 12, "licence": "l"}}},
     "config: sources.x.sha256: 12 is int; expected text"),
    ({"sources": {"x": {"file": "a.csv", "url": "https://e.org/a", "sha256": "12", "licence": "l"}}},
     "config: sources.x.sha256: '12' is not 64 hex digits"),
    ({"sources": {"x": "a.csv"}}, "config: sources.x must map file, url, sha256, licence to text"),
    (["not", "a", "mapping"], "expected a YAML mapping with a 'sources' section"),
])
def test_cli_fetch_with_a_wrong_config_says_what_is_wrong_without_a_traceback(tmp_path, capsys, config, message):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    assert cli.main(["fetch", "--config", str(path), "--raw-dir", str(tmp_path / "raw")]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "raw").exists()


def test_cli_fetch_with_a_missing_or_broken_config_file(tmp_path, capsys):
    assert cli.main(["fetch", "--config", str(tmp_path / "absent.yaml")]) == 1
    assert f"{tmp_path / 'absent.yaml'}: cannot read the config (No such file or directory)" in capsys.readouterr().err
    (tmp_path / "bad.yaml").write_text("sources: [unclosed\n")
    assert cli.main(["fetch", "--config", str(tmp_path / "bad.yaml")]) == 1
    assert f"{tmp_path / 'bad.yaml'}: not valid YAML" in capsys.readouterr().err


HOSTILE_FOLDER = "mirror dir; touch PWNED; echo $(touch PWNED2) `touch PWNED3` 'q\" & |"


@pytest.mark.parametrize("through_shell", [False, True], ids=["argv", "quoted-shell"])
def test_mirror_path_with_spaces_and_shell_metacharacters_is_a_plain_folder(tmp_path, through_shell):
    """`coloc fetch --mirror` takes the folder as it is: nothing in it is run or expanded."""
    mirror = tmp_path / HOSTILE_FOLDER
    (mirror / "sub").mkdir(parents=True)
    (mirror / "sub" / "table.csv").write_bytes(PAYLOAD)
    argv = ["coloc", "fetch", "--file", "sub/table.csv", "--url", "http://127.0.0.1:9/never",
            "--sha256", hashlib.sha256(PAYLOAD).hexdigest(), "--raw-dir", "raw", "--mirror", str(mirror)]
    env = {k: v for k, v in os.environ.items() if k != sources.MIRROR_ENV}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    command = shlex.join(argv) if through_shell else argv
    result = subprocess.run(command, shell=through_shell, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "raw" / "sub" / "table.csv").read_bytes() == PAYLOAD
    assert not list(tmp_path.rglob("PWNED*"))


def test_check_fetched_refuses_an_edited_raw_file_with_both_hashes(tmp_path):
    """Snakemake fetches nothing that exists: an edited raw file is refused before any rule runs."""
    source = make_source(tmp_path)
    other = sources.Source("other", "sub/other.csv", "http://127.0.0.1:9/o", "0" * 64, "x")
    raw = tmp_path / "raw"
    path = sources.fetch(source, raw, tmp_path / "mirror")
    sources.check_fetched({"table": source, "other": other}, raw)  # right hash; other not fetched yet: fine
    edited = PAYLOAD.replace(b"32.5", b"99.9")
    path.write_bytes(edited)
    with pytest.raises(sources.SourceError) as err:
        sources.check_fetched({"table": source, "other": other}, raw)
    message = str(err.value)
    assert f"{path}: sha256 {hashlib.sha256(edited).hexdigest()}, expected {source.sha256} (sources.table)" in message
    assert "other" not in message
    assert path.read_bytes() == edited  # refused, not changed: `coloc fetch` is what replaces it
    sources.fetch(source, raw, tmp_path / "mirror")
    assert path.read_bytes() == PAYLOAD
    sources.check_fetched({"table": source}, raw)


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_a_fetched_file_has_the_mode_the_umask_gives(tmp_path, umask, mode):
    """Every fetched file was 0600 (mkstemp's), whatever the umask: a shared mirror made with `coloc fetch --raw-dir`
    could not be read by the other users. It gets what open() would give under the umask."""
    source = make_source(tmp_path)
    previous = os.umask(umask)
    try:
        assert sources.current_umask() == umask
        path = sources.fetch(source, tmp_path / "raw", tmp_path / "mirror")
    finally:
        os.umask(previous)
    assert oct(path.stat().st_mode & 0o777) == oct(mode)


@pytest.mark.parametrize("file", ["gavel/.", "gavel/", "gavel//x.csv", "./x.csv"])
def test_cli_fetch_of_a_path_naming_a_folder_is_refused_in_one_line(tmp_path, capsys, monkeypatch, file):
    """`coloc fetch --file gavel/.` ended in an IsADirectoryError traceback."""
    monkeypatch.delenv(sources.MIRROR_ENV, raising=False)
    (tmp_path / "raw" / "gavel").mkdir(parents=True)
    (tmp_path / "mirror" / "gavel").mkdir(parents=True)
    code = cli.main(["fetch", "--file", file, "--url", "http://127.0.0.1:9/x", "--sha256",
                     hashlib.sha256(PAYLOAD).hexdigest(), "--raw-dir", str(tmp_path / "raw"),
                     "--mirror", str(tmp_path / "mirror")])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert err == (f"coloc fetch: source {file}: file: {file!r}: expected the path of a file (no '.' or empty part, "
                   f"no trailing '/'): it names a folder\n"), err


def test_fetch_onto_a_folder_is_refused_naming_it(tmp_path):
    source = make_source(tmp_path)
    (tmp_path / "raw" / "sub" / "table.csv").mkdir(parents=True)
    with pytest.raises(sources.SourceError, match=r"sub/table.csv: .*raw/sub/table.csv is a folder; expected a file"):
        sources.fetch(source, tmp_path / "raw", tmp_path / "mirror")
