import os

from workloads.envprobe import (
    ENV_ALLOWLIST,
    capture_fd2,
    parse_missing_instructions,
    parse_onednn_state,
    probe,
)

TF_2_21 = (
    "I0000 00:00:1795303415.467009    6599 cpu_feature_guard.cc:227] This TensorFlow binary "
    "is optimized to use available CPU instructions in performance-critical operations.\n"
    "To enable the following instructions: AVX2 AVX512F AVX512_VNNI AVX512_BF16 FMA, in other "
    "operations, rebuild TensorFlow with the appropriate compiler flags.\n"
)
TF_2_3 = (
    "2020-09-01 12:00:00.000000: I tensorflow/core/platform/cpu_feature_guard.cc:142] This "
    "TensorFlow binary is optimized with oneAPI Deep Neural Network Library (oneDNN)to use the "
    "following CPU instructions in performance-critical operations:  AVX2 FMA\n"
    "To enable them in other operations, rebuild TensorFlow with the appropriate compiler flags.\n"
)
TF_1_15 = (
    "2019-11-01 10:00:00.000000: I tensorflow/core/platform/cpu_feature_guard.cc:142] Your CPU "
    "supports instructions that this TensorFlow binary was not compiled to use: AVX2 AVX512F FMA\n"
)
TF_1_0 = (
    "W tensorflow/core/platform/cpu_feature_guard.cc:45] The TensorFlow library wasn't compiled "
    "to use SSE4.2 instructions, but these are available on your machine and could speed up CPU "
    "computations.\n"
    "W tensorflow/core/platform/cpu_feature_guard.cc:45] The TensorFlow library wasn't compiled "
    "to use AVX instructions, but these are available on your machine and could speed up CPU "
    "computations.\n"
)


def test_guard_2_21():
    assert parse_missing_instructions(TF_2_21) == [
        "AVX2",
        "AVX512F",
        "AVX512_VNNI",
        "AVX512_BF16",
        "FMA",
    ]


def test_guard_older_wordings():
    assert parse_missing_instructions(TF_2_3) == ["AVX2", "FMA"]
    assert parse_missing_instructions(TF_1_15) == ["AVX2", "AVX512F", "FMA"]
    assert parse_missing_instructions(TF_1_0) == ["SSE4.2", "AVX"]


def test_guard_absent_is_unknown_not_empty():
    assert parse_missing_instructions("I0000 some other log line\n") is None


def test_onednn_state():
    line = "port.cc:153] oneDNN custom operations are on. You may see slightly different"
    assert parse_onednn_state(line) == "on"
    assert parse_onednn_state("") is None


def test_capture_fd2_sees_writes_to_the_descriptor(capfd):
    def native_write():
        os.write(2, b"written straight to fd 2\n")
        return 42

    value, text = capture_fd2(native_write)
    assert value == 42
    assert "written straight to fd 2" in text
    assert "written straight to fd 2" in capfd.readouterr().err  # echoed back


def test_probe_without_tf_records_only_allowlisted_env(monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    data = probe(None)
    assert data["env"] == {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    assert "hunter2" not in repr(data)
    assert data["cpu"]["logical_cpus"] >= 1
    assert "tensorflow" not in data


def test_a_podman_container_without_marker_files_is_recognised(monkeypatch):
    import workloads.envprobe as envprobe

    monkeypatch.setattr(envprobe.os.path, "exists", lambda p: False)
    monkeypatch.setenv("container", "podman")
    assert envprobe._in_container() is True
