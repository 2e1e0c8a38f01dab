"""Real-data loaders against small files written in the real on-disk formats.

No test here may use the network: every test points data_dir at tmp_path, and the
``no_download`` fixture makes any download attempt fail the test.
"""

from __future__ import annotations

import io
import pickle
import socket
import tarfile

import numpy as np
import pytest

from workloads import data, datafiles


@pytest.fixture(autouse=True)
def no_download(monkeypatch):
    attempts = []

    def refuse(fname, origin, directory, *, extract=False):
        attempts.append(fname)
        raise OSError("network disabled in tests\nsecond line")

    def no_connect(*args, **kwargs):
        raise OSError("network disabled in tests")

    monkeypatch.setattr(datafiles, "_download", refuse)
    monkeypatch.setattr(socket.socket, "connect", no_connect)
    return attempts


def write_mnist(path, n_train=12, n_test=4):
    rng = np.random.default_rng(0)
    arrays = {
        "x_train": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "y_train": (np.arange(n_train) % 10).astype(np.uint8),
        "x_test": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "y_test": (np.arange(n_test) % 10).astype(np.uint8),
    }
    np.savez(path / "mnist.npz", **arrays)
    return arrays


def cifar_batch_bytes(n, first_label):
    # CIFAR "python version": a pickled dict with bytes keys (written by Python 2), data rows
    # of 3072 uint8
    # (1024 red, then green, then blue, each row-major 32x32), labels as a list.
    data_rows = np.zeros((n, 3072), dtype=np.uint8)
    for i in range(n):
        data_rows[i, :1024] = i  # red plane = sample index
        data_rows[i, 1024 + 5] = 200  # green at row 0, column 5
    labels = [(first_label + i) % 10 for i in range(n)]
    batch = {
        b"batch_label": b"test",
        b"labels": labels,
        b"data": data_rows,
        b"filenames": [b"x.png"] * n,
    }
    return pickle.dumps(batch, protocol=4)  # bytes as BINBYTES, like py2 str


def write_cifar_tar(path, name="cifar-10-python.tar.gz", per_batch=3):
    with tarfile.open(path / name, "w:gz") as tar:
        for member, label in [(f"data_batch_{i}", i) for i in range(1, 6)] + [("test_batch", 7)]:
            payload = cifar_batch_bytes(per_batch, label)
            info = tarfile.TarInfo(f"cifar-10-batches-py/{member}")
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))


def write_imdb(path):
    # Ragged object arrays of word ranks (1-based, before keras' index_from shift).
    x_train = np.empty(6, dtype=object)
    x_test = np.empty(2, dtype=object)
    for i in range(6):
        x_train[i] = list(range(1, 5 + i)) + [30000]  # 30000 + 3 is out of vocabulary
    for i in range(2):
        x_test[i] = [7, 8, 9]
    np.savez(
        path / "imdb.npz",
        x_train=x_train,
        y_train=np.array([0, 1, 0, 1, 0, 1]),
        x_test=x_test,
        y_test=np.array([1, 0]),
    )


def test_mnist_found_in_data_dir(tmp_path, no_download):
    from workloads import mnist_cnn, mnist_mlp

    arrays = write_mnist(tmp_path)
    d = mnist_cnn.load_data("real", data_dir=str(tmp_path), samples=None, seed=0)
    assert d["x"].shape == (12, 28, 28, 1) and d["x"].dtype == np.float32
    assert np.allclose(d["x"][3, :, :, 0] * 255, arrays["x_train"][3])
    assert d["y"].tolist() == arrays["y_train"].astype(int).tolist()
    assert d["x_val"].shape == (4, 28, 28, 1)
    flat = mnist_mlp.load_data("real", data_dir=str(tmp_path), samples=6, seed=0)
    assert flat["x"].shape == (6, 784) and len(flat["x_val"]) == 2  # ratio 4/12 kept
    assert no_download == []


def test_cifar_archive_is_extracted_like_keras(tmp_path, no_download):
    from workloads import cifar10_cnn

    write_cifar_tar(tmp_path)
    d = cifar10_cnn.load_data("real", data_dir=str(tmp_path), samples=None, seed=0)
    assert d["x"].shape == (15, 32, 32, 3) and d["x_val"].shape == (3, 32, 32, 3)
    # channels-first rows become NHWC: red plane = index, one green pixel at (0, 5)
    assert np.allclose(d["x"][2, :, :, 0] * 255, 2)
    assert d["x"][0, 0, 5, 1] * 255 == pytest.approx(200)
    assert d["y"][:3].tolist() == [1, 2, 3] and d["y_val"].tolist() == [7, 8, 9]
    # extracted where Keras 3 keeps it, so the next load reads the folder
    assert (tmp_path / "cifar-10-batches-py-target/cifar-10-batches-py/test_batch").is_file()
    (tmp_path / "cifar-10-python.tar.gz").unlink()
    again = cifar10_cnn.load_data("real", data_dir=str(tmp_path), samples=4, seed=0)
    assert again["x"].shape == (4, 32, 32, 3)
    assert no_download == []


def test_cifar_keras2_extracted_folder(tmp_path):
    write_cifar_tar(tmp_path, name="archive.tar.gz")
    with tarfile.open(tmp_path / "archive.tar.gz") as tar:
        datafiles.safe_extract(tar, tmp_path)  # -> tmp_path/cifar-10-batches-py/
    x, y, x_test, y_test = data.load_cifar10(tmp_path)
    assert x.shape == (15, 32, 32, 3) and len(y_test) == 3


@pytest.fixture
def without_data_filter(monkeypatch):
    """tarfile as on Python 3.11.0-3.11.3: no extraction filters."""
    monkeypatch.delattr(tarfile, "data_filter", raising=False)


def test_cifar_archive_without_tarfile_filters(tmp_path, no_download, without_data_filter):
    write_cifar_tar(tmp_path)
    x, y, x_test, y_test = data.load_cifar10(tmp_path)
    assert x.shape == (15, 32, 32, 3) and y_test.tolist() == [7, 8, 9]
    batch = tmp_path / "cifar-10-batches-py-target/cifar-10-batches-py/test_batch"
    assert batch.stat().st_mode & 0o022 == 0


def _hostile_tar(path, kind):
    with tarfile.open(path, "w") as tar:
        info = tarfile.TarInfo({"absolute": "/tmp/x", "dotdot": "a/../../x"}.get(kind, "a/x"))
        if kind == "symlink":
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        elif kind == "hardlink":
            info.type, info.linkname = tarfile.LNKTYPE, "/etc/passwd"
        elif kind == "device":
            info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
        elif kind == "fifo":
            info.type = tarfile.FIFOTYPE
        tar.addfile(info, io.BytesIO(b""))


@pytest.mark.parametrize("kind", ["absolute", "dotdot", "symlink", "hardlink", "device", "fifo"])
def test_the_fallback_extracts_nothing_unsafe(tmp_path, without_data_filter, kind):
    _hostile_tar(tmp_path / "a.tar", kind)
    target = tmp_path / "out"
    with tarfile.open(tmp_path / "a.tar") as tar, pytest.raises(tarfile.TarError, match="refusing"):
        datafiles.safe_extract(tar, target)
    assert list(target.rglob("*")) == [] and not (tmp_path.parent / "x").exists()


def test_the_fallback_refuses_a_link_already_in_the_target(tmp_path, without_data_filter):
    target = tmp_path / "out"
    target.mkdir()
    (target / "a").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir()
    _hostile_tar(tmp_path / "a.tar", "regular")
    with tarfile.open(tmp_path / "a.tar") as tar, pytest.raises(tarfile.TarError, match="outside"):
        datafiles.safe_extract(tar, target)
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_cifar_refuses_code_in_pickles(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    (folder / "data_batch_1").write_bytes(pickle.dumps({b"data": Evil(), b"labels": []}))
    with pytest.raises(pickle.UnpicklingError):
        data.load_cifar10(tmp_path)


def test_imdb_processing_matches_keras_conventions(tmp_path, no_download):
    write_imdb(tmp_path)
    x, y, x_test, y_test = data.load_imdb(tmp_path, num_words=20000)
    assert len(x) == 6 and len(x_test) == 2
    for seq in x:
        assert seq[0] == data.IMDB_START and seq[-1] == data.IMDB_OOV
        assert seq[1:-1].tolist() == list(range(4, 4 + len(seq) - 2))  # ranks + 3
    # shuffled with keras' RandomState(113): labels follow their sequences
    lengths = [len(s) for s in x]
    assert [1 if (n - 6) % 2 else 0 for n in lengths] == y.tolist()
    assert x_test[0].tolist() == [1, 10, 11, 12]
    assert no_download == []


def test_imdb_workloads_read_real_file(tmp_path):
    from workloads import imdb_bilstm, imdb_fasttext

    write_imdb(tmp_path)
    d = imdb_bilstm.load_data("real", data_dir=str(tmp_path), samples=4, seed=0)
    assert d["x"].shape == (4, 100) and d["x"][:, -1].tolist() == [2, 2, 2, 2]
    f = imdb_fasttext.load_data("real", data_dir=str(tmp_path), samples=None, seed=0)
    assert f["x"].shape == (6, 400) and f["x"].max() < imdb_fasttext.MAX_FEATURES
    assert f["x"].max() > imdb_fasttext.NUM_WORDS  # bigram ids appended


def test_text_from_nietzsche_or_a_named_file(tmp_path, no_download):
    from workloads import text_generation

    (tmp_path / "nietzsche.txt").write_text("Supposing that Truth is a woman--what then? " * 20)
    d = text_generation.load_data("real", data_dir=str(tmp_path), samples=None, seed=0)
    n = data.window_count(20 * 44)
    assert d["x"].shape == (n, 40, 57) and d["y"].shape == (n,)
    assert d["x"][0].argmax(axis=1)[0] == data.TEXT_ALPHABET.index("s")  # lower-cased
    mine = tmp_path / "mine.txt"
    mine.write_text("abc " * 30)
    d = text_generation.load_data("real", data_dir=str(mine), samples=5, seed=0)
    assert d["x"].shape == (5, 40, 57)
    assert no_download == []


@pytest.mark.parametrize(
    "workload, fname",
    [
        ("mnist_mlp", "mnist.npz"),
        ("cifar10_cnn", "cifar-10-python.tar.gz"),
        ("imdb_bilstm", "imdb.npz"),
        ("text_generation", "nietzsche.txt"),
    ],
)
def test_offline_without_cache_says_how_to_get_the_data(tmp_path, no_download, workload, fname):
    import importlib

    module = importlib.import_module(f"workloads.{workload}")
    with pytest.raises(data.DataUnavailable) as info:
        module.load_data("real", data_dir=str(tmp_path), samples=10, seed=0)
    message = str(info.value)
    assert "\n" not in message
    assert fname in message and "https://" in message and "--data synthetic" in message
    assert str(tmp_path) in message
    assert no_download  # it did try (the patched) download before giving up


def test_default_data_dir_is_keras_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("KERAS_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert data.default_data_dir() == tmp_path / ".keras" / "datasets"
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "kh"))
    assert data.default_data_dir() == tmp_path / "kh" / "datasets"
