"""The oneDNN probe runs once per binary, settings and CPU: later runs read its record
from the cache (it costs two TensorFlow start-ups a variant out of the run's budget);
a failed probe is never kept, and a forged record is refused field by field."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tfvariants.commands import variant_probe
from tfvariants.variants import get_variant, onednn
from tfvariants.variants.peak import theory

CPU = theory.Cpu(
    "GenuineIntel", 6, 85, "Intel Xeon", frozenset({"avx2", "avx512f"}), 2500.0, "/proc/cpuinfo"
)


def _side(isa: str = "Intel AVX-512") -> dict:
    return {
        "isa": isa,
        "version": "v3.2.1",
        "primitives": {"convolution": 1, "gemm_api": 1},
        "custom_ops_on": True,
        "backend": {"version": "2.14.0", "keras": "2.14.0"},
    }


def _record(**over) -> dict:
    return {
        "backend": "tensorflow",
        "applies": True,
        "settings": {"TF_ENABLE_ONEDNN_OPTS": "1"},
        "variant": _side(),
        "host_default": _side(),
        **over,
    }


class Probe:
    def __init__(self, result: dict) -> None:
        self.result, self.calls = result, 0

    def __call__(self) -> dict:
        self.calls += 1
        return self.result


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "tfvariants" / "census"


def test_probed_once_per_binary_then_read_from_the_cache(cache):
    variant, probe = get_variant("tf-2.14"), Probe(_record())
    first, hit1 = onednn.probed(variant, "sha:aaa", CPU, probe)
    second, hit2 = onednn.probed(variant, "sha:aaa", CPU, probe)
    assert (probe.calls, hit1, hit2) == (1, False, True)
    assert first == second == _record()


@pytest.mark.parametrize(
    "change",
    [
        lambda v, b, c: (replace(v, env={**v.env, "ONEDNN_MAX_CPU_ISA": "AVX2"}), b, c),
        lambda v, b, c: (v, "sha:other", c),
        lambda v, b, c: (v, b, replace(c, flags=c.flags - {"avx512f"})),
        lambda v, b, c: (v, b, replace(c, model=106)),
    ],
    ids=["settings", "binary", "cpu-flags", "cpu-model"],
)
def test_what_changes_the_dispatch_probes_again(cache, change):
    variant, probe = get_variant("tf-2.14"), Probe(_record())
    onednn.probed(variant, "sha:aaa", CPU, probe)
    onednn.probed(*change(variant, "sha:aaa", CPU), probe)
    assert probe.calls == 2


@pytest.mark.parametrize(
    "result",
    [
        {"error": "probe timed out"},
        _record(variant={**_side(), "error": "exit 1: Illegal instruction"}),
        _record(host_default=None),
    ],
    ids=["probe-failed", "variant-side-failed", "half"],
)
def test_a_failed_probe_is_never_kept(cache, result):
    variant, probe = get_variant("tf-2.14"), Probe(result)
    onednn.probed(variant, "sha:aaa", CPU, probe)
    again, hit = onednn.probed(variant, "sha:aaa", CPU, probe)
    assert (probe.calls, hit, again) == (2, False, result)


def test_without_a_binary_identity_nothing_is_cached(cache):
    variant, probe = get_variant("tf-2.14"), Probe(_record())
    onednn.probed(variant, None, CPU, probe)
    onednn.probed(variant, None, CPU, probe)
    assert probe.calls == 2 and not list(cache.glob("onednn-*"))


@pytest.mark.parametrize(
    "forge",
    [
        lambda r: {**r, "variant": {**r["variant"], "primitives": {"convolution": -5}}},
        lambda r: {**r, "variant": {**r["variant"], "isa": ["AVX-512"]}},
        lambda r: {**r, "settings": {"LD_PRELOAD": "/tmp/x.so"}},
        lambda r: {**r, "host_default": {**r["host_default"], "custom_ops_on": "yes"}},
        lambda r: {**r, "applies": "true"},
    ],
    ids=["negative-count", "isa-not-text", "not-a-onednn-setting", "flag-not-bool", "applies"],
)
def test_a_forged_record_is_refused_and_probed_again(cache, capsys, forge):
    variant, probe = get_variant("tf-2.14"), Probe(_record())
    onednn.probed(variant, "sha:aaa", CPU, probe)
    (entry,) = cache.glob("onednn-*.json")
    entry.write_text(json.dumps(forge(_record())))
    got, hit = onednn.probed(variant, "sha:aaa", CPU, probe)
    assert (probe.calls, hit, got) == (2, False, _record())
    assert "ignored" in capsys.readouterr().err


def test_compare_probes_each_variant_once_across_runs(cache, monkeypatch, capsys):
    """Through compare's own step: the second run says nothing of probing and stores the
    same judgement in run.json's variant_info."""
    import tfvariants.commands.env as env_command
    import tfvariants.variants.peak.run as peak_run

    calls: list[str] = []

    def fake_probe(variant, module):
        calls.append(variant.name)
        return _record()

    monkeypatch.setattr(env_command, "probe_variant", fake_probe)
    monkeypatch.setattr(peak_run, "binary_identity", lambda v: f"sha:{v.name}")
    monkeypatch.setattr(variant_probe, "compiled_for", lambda v, count: None)
    variants = {n: get_variant(n) for n in ("tf-2.14", "intel-2.14")}
    infos = []
    for _ in range(2):
        info: dict = {}
        variant_probe.probe_variants(info, variants, probe=True)
        infos.append(info)
    assert sorted(calls) == ["intel-2.14", "tf-2.14"]
    assert infos[0] == infos[1] and infos[0]["tf-2.14"]["onednn"]["isa"] == "Intel AVX-512"
    assert capsys.readouterr().err.count("probing oneDNN") == 2
