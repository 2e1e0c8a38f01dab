"""The real data sets' files: where Keras caches them, downloading one that is missing,
and reading them safely (numpy arrays only from pickles, an archive's members checked
before anything is extracted). :mod:`workloads.data` builds the workloads' data from
them; see its docstring for the two sources.

Nothing here imports TensorFlow or Keras at import time.
"""

from __future__ import annotations

import io
import os
import pickle
import socket
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

KERAS_DATASETS_URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
NIETZSCHE_URL = "https://s3.amazonaws.com/text-datasets/nietzsche.txt"

# Same hashes as keras.datasets (a download is checked; a hand-placed file is trusted).
_SHA256 = {
    "mnist.npz": "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1",
    "imdb.npz": "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f",
    "cifar-10-batches-py-target": (
        "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
    ),
}
DOWNLOAD_TIMEOUT_S = 30.0

# IMDb conventions of keras.datasets.imdb: 0 padding, 1 start, 2 out-of-vocabulary,
# word ranks shifted by 3; the loader shuffles with seed 113.
IMDB_START, IMDB_OOV, IMDB_INDEX_FROM, IMDB_SHUFFLE_SEED = 1, 2, 3, 113


class DataUnavailable(Exception):
    """The real data set is not cached and cannot be downloaded (e.g. offline)."""


def default_data_dir() -> Path:
    """Where Keras caches data sets: ``$KERAS_HOME/datasets`` or ``~/.keras/datasets``."""
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return Path(home) / "datasets"


def resolve_data_dir(data_dir: str | os.PathLike | None) -> Path:
    return Path(data_dir).expanduser() if data_dir else default_data_dir()


def _unavailable(what: str, fname: str, url: str, directory: Path, why: object) -> DataUnavailable:
    reason = (str(why).strip().splitlines() or [type(why).__name__])[0]  # one line
    return DataUnavailable(
        f"{what} is not in {directory} and could not be downloaded ({reason}); "
        f"download {url} and save it as {directory / fname}, "
        f"or use --data synthetic (the offline default)"
    )


def _download(fname: str, origin: str, directory: Path, *, extract: bool = False) -> Path:
    """Fetch ``origin`` into ``directory`` with Keras' downloader (hash-checked)."""
    from keras.utils import get_file  # lazy: only the real-data path needs Keras

    directory.mkdir(parents=True, exist_ok=True)
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(DOWNLOAD_TIMEOUT_S)  # offline must fail, not hang
    try:
        path = get_file(
            fname=fname,
            origin=origin,
            file_hash=_SHA256.get(fname),
            extract=extract,
            cache_dir=str(directory),
            cache_subdir=str(directory.resolve()),  # absolute: files land in directory
        )
    finally:
        socket.setdefaulttimeout(previous)
    return Path(path)


def _fetch(what: str, fname: str, url: str, directory: Path) -> Path:
    """The cached file ``directory/fname``, downloading it if absent."""
    path = directory / fname
    if path.is_file():
        return path
    try:
        return _download(fname, url, directory)
    except Exception as exc:  # any failure to download means: not available here
        raise _unavailable(what, fname, url, directory, exc) from exc


class _NumpyOnlyUnpickler(pickle.Unpickler):
    """Unpickles numpy arrays and plain containers only (as keras' RestrictedUnpickler)."""

    _ALLOWED = frozenset(
        {
            ("numpy", "ndarray"),
            ("numpy", "dtype"),
            ("numpy.core.multiarray", "_reconstruct"),
            ("numpy._core.multiarray", "_reconstruct"),
        }
    )

    def find_class(self, module: str, name: str) -> Any:  # what pickle reconstructs
        if (module, name) in self._ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to unpickle {module}.{name} from a data file")


def _load_npz_objects(path: Path) -> dict[str, np.ndarray]:
    """Read an .npz that may hold object (ragged) arrays, without arbitrary unpickling."""
    arrays = {}
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            if not member.endswith(".npy"):
                continue
            buffer = io.BytesIO(archive.read(member))
            try:
                arrays[member[:-4]] = np.lib.format.read_array(buffer, allow_pickle=False)
            except ValueError:  # an object array: header, then a pickle stream
                buffer.seek(0)
                version = np.lib.format.read_magic(buffer)
                if version[0] == 1:
                    np.lib.format.read_array_header_1_0(buffer)
                else:
                    np.lib.format.read_array_header_2_0(buffer)
                arrays[member[:-4]] = _NumpyOnlyUnpickler(buffer).load()
    return arrays


def _unsafe_member(member: tarfile.TarInfo, root: Path) -> str | None:
    """Why extracting ``member`` under ``root`` would not be what tarfile's "data" filter
    allows, or None: only regular files and folders, relative, inside ``root``."""
    name = member.name
    if os.path.isabs(name) or name.startswith(("/", "\\")) or ".." in Path(name).parts:
        return "an absolute path or one that leaves the folder"
    if not (member.isreg() or member.isdir()):
        return "not a regular file or folder (a link, a device or a FIFO)"
    dest = (root / name).resolve()
    if dest != root and root not in dest.parents:
        return "lands outside the folder (through a link already there)"
    return None


def safe_extract(tar: tarfile.TarFile, target: Path) -> None:
    """Extract ``tar`` into ``target`` as safely as ``filter="data"`` (Python 3.11.4+;
    3.11.0 to 3.11.3 lack it): every member is checked first (relative, inside, regular
    files and folders only), nothing is extracted if one fails, and modes lose their
    set-id and group/other write bits; owners are not taken from the archive."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(target, filter="data")
        return
    target.mkdir(parents=True, exist_ok=True)
    root = target.resolve()
    members = tar.getmembers()
    for member in members:
        why = _unsafe_member(member, root)
        if why:
            raise tarfile.TarError(f"refusing to extract {member.name!r}: {why}")
    for member in members:
        member.mode &= 0o755
        member.uid, member.gid = os.getuid(), os.getgid()
        member.uname = member.gname = ""
    tar.extractall(target, members=members)  # the checked members, nothing else


def load_mnist(data_dir: str | os.PathLike | None) -> tuple[np.ndarray, ...]:
    """(x_train, y_train, x_test, y_test) from ``mnist.npz`` (uint8 images 28x28)."""
    directory = resolve_data_dir(data_dir)
    path = _fetch("MNIST", "mnist.npz", KERAS_DATASETS_URL + "mnist.npz", directory)
    with np.load(path, allow_pickle=False) as f:
        return f["x_train"], f["y_train"], f["x_test"], f["y_test"]


# Where keras has kept the extracted CIFAR-10 batches: Keras 3 extracts into
# "cifar-10-batches-py-target/"; Keras 2 / tf.keras into the cache dir itself.
_CIFAR_DIRS = ("cifar-10-batches-py-target/cifar-10-batches-py", "cifar-10-batches-py")
# The archive, under the names a user or an older Keras may have saved it.
_CIFAR_ARCHIVES = (
    "cifar-10-python.tar.gz",
    "cifar-10-batches-py-target_archive",
    "cifar-10-batches-py.tar.gz",
)


def _cifar_batches_dir(directory: Path) -> Path:
    for rel in _CIFAR_DIRS:
        if (directory / rel / "data_batch_1").is_file():
            return directory / rel
    target = directory / "cifar-10-batches-py-target"
    for name in _CIFAR_ARCHIVES:
        if (directory / name).is_file():
            with tarfile.open(directory / name) as tar:
                safe_extract(tar, target)
            return target / "cifar-10-batches-py"
    try:
        extracted = _download("cifar-10-batches-py-target", CIFAR10_URL, directory, extract=True)
    except Exception as exc:
        raise _unavailable(
            "CIFAR-10", "cifar-10-python.tar.gz", CIFAR10_URL, directory, exc
        ) from exc
    return extracted / "cifar-10-batches-py"


def _cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with open(path, "rb") as f:
        batch = _NumpyOnlyUnpickler(f, encoding="bytes").load()
    batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
    data = np.asarray(batch["data"], dtype=np.uint8).reshape(-1, 3, 32, 32)
    return data.transpose(0, 2, 3, 1), np.asarray(batch["labels"], dtype=np.uint8)


def load_cifar10(data_dir: str | os.PathLike | None) -> tuple[np.ndarray, ...]:
    """(x_train, y_train, x_test, y_test): uint8 NHWC 32x32x3 images, uint8 labels."""
    folder = _cifar_batches_dir(resolve_data_dir(data_dir))
    train = [_cifar_batch(folder / f"data_batch_{i}") for i in range(1, 6)]
    x_test, y_test = _cifar_batch(folder / "test_batch")
    x_train = np.concatenate([x for x, _ in train])
    y_train = np.concatenate([y for _, y in train])
    return x_train, y_train, x_test, y_test


# ---------------------------------------------------------------------------------------


def load_imdb(
    data_dir: str | os.PathLike | None, *, num_words: int = 20000
) -> tuple[list[np.ndarray], np.ndarray, list[np.ndarray], np.ndarray]:
    """(x_train, y_train, x_test, y_test) from ``imdb.npz``, as keras.datasets.imdb returns.

    Same processing as ``keras.datasets.imdb.load_data(num_words=...)``: shuffled with seed
    113, a start id 1 prepended, word ranks shifted by 3, ids >= num_words replaced by 2.
    """
    directory = resolve_data_dir(data_dir)
    path = _fetch("IMDb", "imdb.npz", KERAS_DATASETS_URL + "imdb.npz", directory)
    arrays = _load_npz_objects(path)
    rng = np.random.RandomState(IMDB_SHUFFLE_SEED)
    splits: list[tuple[list[np.ndarray], np.ndarray]] = []
    for split in ("train", "test"):
        x, y = arrays[f"x_{split}"], np.asarray(arrays[f"y_{split}"])
        order = np.arange(len(x))
        rng.shuffle(order)  # one RandomState for both splits, as keras does
        seqs = []
        for i in order:
            seq = np.concatenate([[IMDB_START], np.asarray(x[i], dtype=np.int64) + IMDB_INDEX_FROM])
            seq[seq >= num_words] = IMDB_OOV
            seqs.append(seq.astype(np.int32))
        splits.append((seqs, y[order].astype(np.int32)))
    (x_train, y_train), (x_test, y_test) = splits
    return x_train, y_train, x_test, y_test
