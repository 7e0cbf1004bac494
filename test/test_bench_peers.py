# SPDX-License-Identifier: MIT
"""The GPU baselines of ``benchmarks/bench_codegen.py --device gpu``
(``benchmarks/gpu_peers.py``) compute what the workloads' numpy references
compute: checked with numpy standing in for CuPy or torch."""

from __future__ import annotations

import os
import sys
import types

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))

import bench_codegen  # noqa: E402
import gpu_peers  # noqa: E402

SIZES = dict(bench_codegen.QUICK_SIZES, W6=(3, 8, 2, 4))
WORKLOADS = {w.key: w for w in bench_codegen.all_workloads(SIZES)}
WITH_PEERS = [k for k in WORKLOADS
              if gpu_peers.peer_function(k, np) is not None]


def test_the_memory_bound_and_matmul_workloads_have_peers():
    assert {"W1", "W2-matmul", "W3-rows", "W3-sum", "W3-both", "W3-softmax",
            "W3-layernorm", "W4", "W6"} <= set(WITH_PEERS)
    assert gpu_peers.peer_function("W5-irregular", np) is None


@pytest.mark.parametrize("key", WITH_PEERS)
def test_peer_formulas_match_the_numpy_references(key):
    wl = WORKLOADS[key]
    inputs = wl.make_inputs()
    got = gpu_peers.peer_function(key, np)(inputs)
    want = wl.numpy_fn(inputs)
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-12)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_peer_time_runs_the_workload():
    peer = gpu_peers.numpy_peer()
    inputs = WORKLOADS["W4"].make_inputs()
    seconds = gpu_peers.peer_time(peer, "W4", inputs, repeat=3)
    assert seconds is not None and seconds > 0
    assert gpu_peers.peer_time(peer, "W5", {}, repeat=3) is None


def test_find_peer_without_cuda_libraries_is_none(monkeypatch):
    # (a None entry in sys.modules makes the import fail)
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setitem(sys.modules, "torch", None)
    assert gpu_peers.find_peer() is None


def test_find_peer_takes_torch_with_cuda(monkeypatch):
    synced = []
    torch = types.SimpleNamespace(
        cuda=types.SimpleNamespace(is_available=lambda: True,
                                   synchronize=lambda: synced.append(1)))
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setitem(sys.modules, "torch", torch)
    peer = gpu_peers.find_peer()
    assert peer.name == "torch" and peer.xp is torch
    peer.sync()
    assert synced == [1]
    torch.cuda.is_available = lambda: False
    assert gpu_peers.find_peer() is None


class _TorchLikeTensor(np.ndarray):
    """A numpy array with torch's spelling of row reductions (``dim``,
    ``keepdim``, ``amax``), for the formulas' torch branch."""

    def amax(self, dim, keepdim):
        return np.asarray(self).max(axis=dim, keepdims=keepdim).view(_TorchLikeTensor)

    def sum(self, dim, keepdim):
        return np.asarray(self).sum(axis=dim, keepdims=keepdim).view(_TorchLikeTensor)

    def mean(self, dim, keepdim):
        return np.asarray(self).mean(axis=dim, keepdims=keepdim).view(_TorchLikeTensor)


@pytest.mark.parametrize("key", ["W3-softmax", "W3-layernorm"])
def test_row_formulas_in_torchs_spelling(key):
    torch = types.ModuleType("torch")
    torch.exp, torch.sqrt = np.exp, np.sqrt
    wl = WORKLOADS[key]
    inputs = wl.make_inputs()
    got = gpu_peers.peer_function(key, torch)(
        {"a": inputs["a"].view(_TorchLikeTensor)})
    np.testing.assert_allclose(np.asarray(got), wl.numpy_fn(inputs), rtol=1e-12)
