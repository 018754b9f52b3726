"""The testbed's devices text."""
import pytest

from coloc.testbed import devices


def test_devices_text_is_checked():
    assert [d.cpus for d in devices.parse("cpu:2")] == [(0,), (1,)]
    with pytest.raises(ValueError, match=r"testbed devices 'gpu:0': expected 'cpu:<sets>'"):
        devices.parse("gpu:0")
    with pytest.raises(ValueError, match=r"3 core sets of 1 cores need 3 cores; this process may use 2"):
        devices.parse("cpu:3")
