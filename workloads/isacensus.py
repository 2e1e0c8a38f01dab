"""Instruction census of a TensorFlow binary: which x86 extensions its machine code uses.

Standard library only: the host (tfvariants.variants.census: cached per file content,
the up-front gate) and builds/compiled/check_isa.py (inside the compiled image's build)
import this one implementation.

``objdump -d`` disassembles a shared object; every instruction is put under the highest
extension it needs (AVX512 > FMA > AVX2 > AVX > SSE4) and attributed to the function it
sits in. Functions whose (mangled) name carries an ISA (``..._avx512_core...``,
``jit_avx2_...``, ``...Haswell...``) are kernels dispatched at run time after a CPUID
check: the stock wheel holds thousands of AVX-512 instructions there and still runs on
an AVX-only CPU. What the binary *requires* is what the rest of its code uses.
The raw ymm/zmm/vfmadd counts are kept too (builds/compiled/check_isa.py always printed
them).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

# Lowest to highest. AVX2 and FMA arrived together (Haswell) but are separate CPU flags.
ISAS = ("SSE4", "AVX", "AVX2", "FMA", "AVX512")
# /proc/cpuinfo flags a CPU must list to run each extension's instructions.
CPU_FLAGS = {
    "SSE4": ("sse4_1", "sse4_2"),
    "AVX": ("avx",),
    "AVX2": ("avx2",),
    "FMA": ("fma",),
    "AVX512": ("avx512f",),
}
# The names TensorFlow's cpu_feature_guard and check_isa.py --expect use, per extension.
GUARD_NAMES = {
    "SSE4.1": "SSE4",
    "SSE4.2": "SSE4",
    "AVX": "AVX",
    "AVX2": "AVX2",
    "FMA": "FMA",
    "AVX512F": "AVX512",
}
RAW = ("ymm", "zmm", "vfmadd")
# A few instructions outside dispatched kernels are tolerated before an extension counts
# as required: a stray cpuid-guarded helper without an ISA in its name must not make a
# runnable wheel "need" AVX-512. Compiled-for code has tens of thousands.
REQUIRED_MIN = 50

_EVEX = re.compile(r"%zmm\d|\{%k[1-7]\}|%[xy]mm(?:1[6-9]|2\d|3[01])\b")
_MASK_OP = re.compile(
    r"^k(?:mov|and|andn|or|xor|xnor|not|shiftl|shiftr|test|ortest|unpck|add)[bwdq]"
)
_FMA = re.compile(r"^vf(?:n?m(?:add|sub)|maddsub|msubadd)\d{3}")
_AVX2 = re.compile(
    r"^(?:vpbroadcast|vbroadcasti128|vinserti128|vextracti128|vperm2i128|vpermd|vpermq|"
    r"vpermps|vpermpd|vp?gather|vpmaskmov|vpsllv|vpsrlv|vpsrav|vpblendd)"
)
_SSE4 = re.compile(
    r"^(?:pminsb|pminsd|pminuw|pminud|pmaxsb|pmaxsd|pmaxuw|pmaxud|pmulld|pmuldq|pcmpeqq|"
    r"pcmpgtq|packusdw|ptest|pblendw|pblendvb|pextr[bdq]|pinsr[bdq]|pmov[sz]x\w+|"
    r"phminposuw|pcmp[ei]str[im]|blendp[sd]|blendvp[sd]|dpp[sd]|round[ps][sd]|extractps|"
    r"insertps|movntdqa|mpsadbw|crc32\w*)$"
)
# An ISA in a function's (mangled) name: oneDNN's jit_avx512_core_*, Eigen/XNNPACK/MLAS
# kernels with _avx2/_fma3/_sse41 suffixes, TF's own *Haswell*/*Skylake* paths.
# ("fma" but not "fmax": std::fmax carries no ISA.)
ISA_NAMED = re.compile(
    r"avx|sse4|sse41|sse42|skx|amx|fma(?!x)|haswell|skylake|icelake|cascadelake|"
    r"cooperlake|sapphirerapids|knl|knm|zmm|ymm",
    re.IGNORECASE,
)
# Code dispatched at run time under names without an ISA word: BoringSSL's hand-written
# assembly (HRSS's AVX2 polynomial multiply and its local labels, ChaCha20's 8-way AVX2
# loop) and HighwayHash's per-target templates (HighwayHash<2>: SSE4.1, <4>: AVX2).
KNOWN_DISPATCHED = re.compile(
    r"^(?:poly_Rq_mul|ChaCha20_8x|(?:done|innerloop|karatsuba_loop)_[0-9a-f]{32})$"
    r"|highwayhash.*HighwayHash\w*ILj[24]E"
)
# Bumped whenever the classification changes: cached censuses of older versions are
# not reused.
VERSION = 2
# 256-bit forms that AVX (not AVX2) already has: vp-prefixed but floating point/permutes.
_AVX1_VP = re.compile(r"^(?:vpermil|vperm2f128|vptest|vpclmul)")
_FUNCTION = re.compile(r"^[0-9a-f]+ <(.+)>:$")
_INSN = re.compile(r"^\s+[0-9a-f]+:\s+(\S+)\s*(.*)$")


def dispatched_name(function: str) -> bool:
    """Whether a function is a kernel chosen at run time (its name carries an ISA)."""
    return bool(ISA_NAMED.search(function) or KNOWN_DISPATCHED.search(function))


def classify(mnemonic: str, operands: str) -> str | None:
    """The highest extension one instruction (AT&T syntax, as objdump prints it) needs,
    among those counted; None for baseline x86-64 (SSE2) code."""
    if _EVEX.search(operands) or _MASK_OP.match(mnemonic):
        return "AVX512"
    if _FMA.match(mnemonic):
        return "FMA"
    if mnemonic.startswith("v"):
        if _AVX2.match(mnemonic) or (
            "%ymm" in operands and mnemonic.startswith("vp") and not _AVX1_VP.match(mnemonic)
        ):
            return "AVX2"
        return "AVX"
    if _SSE4.match(mnemonic):
        return "SSE4"
    return None


def _empty() -> dict[str, int]:
    return dict.fromkeys(ISAS, 0)


def census_lines(lines: Iterable[str]) -> dict[str, Any]:
    """Counts from objdump -d --no-show-raw-insn output: per extension in run-time
    dispatched kernels (``dispatched``) and in the rest (``rest``), plus raw counts."""
    dispatched, rest = _empty(), _empty()
    raw = dict.fromkeys(RAW, 0)
    raw_rest = dict.fromkeys(RAW, 0)
    named = False
    for line in lines:
        insn = _INSN.match(line)
        if insn is None:
            function = _FUNCTION.match(line.rstrip("\n"))
            if function:
                named = dispatched_name(function.group(1))
            continue
        mnemonic, operands = insn.group(1), insn.group(2)
        counted = {
            "ymm": "%ymm" in operands,
            "zmm": "%zmm" in operands,
            "vfmadd": bool(re.match(r"vfn?madd", mnemonic)),
        }
        for key, hit in counted.items():
            if hit:
                raw[key] += 1
                if not named:
                    raw_rest[key] += 1
        isa = classify(mnemonic, operands)
        if isa is not None:
            (dispatched if named else rest)[isa] += 1
    return {"dispatched": dispatched, "rest": rest, "raw": raw, "raw_rest": raw_rest}


def census_file(path: Path, objdump: str | None = None) -> dict[str, Any]:
    """The census of one shared object (objdump streamed: minutes for a 500 MB one)."""
    objdump = objdump or shutil.which("objdump")
    if objdump is None:
        raise RuntimeError("objdump not found (install binutils)")
    proc = subprocess.Popen(
        [objdump, "-d", "--no-show-raw-insn", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        errors="replace",
    )
    assert proc.stdout
    counts = census_lines(proc.stdout)
    if proc.wait() != 0:
        raise RuntimeError(f"objdump failed on {path}")
    counts["file"] = Path(path).name
    counts["bytes"] = Path(path).stat().st_size
    return counts


def merge(censuses: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One census over several files (counts added)."""
    total: dict[str, Any] = {
        "dispatched": _empty(),
        "rest": _empty(),
        "raw": dict.fromkeys(RAW, 0),
        "raw_rest": dict.fromkeys(RAW, 0),
    }
    for one in censuses:
        for part in ("dispatched", "rest", "raw", "raw_rest"):
            for key, value in one.get(part, {}).items():
                total[part][key] = total[part].get(key, 0) + value
    return total


def required(census: dict[str, Any]) -> list[str]:
    """Extensions the binary uses outside run-time-dispatched kernels (so needs to run)."""
    rest = census.get("rest", {})
    return [isa for isa in ISAS if rest.get(isa, 0) >= REQUIRED_MIN]


def highest(isas: Iterable[str]) -> str:
    """The highest of some extensions, or "SSE2" (x86-64 baseline) for none."""
    found = [isa for isa in ISAS if isa in set(isas)]
    return found[-1] if found else "SSE2"


def compiled_for(census: dict[str, Any]) -> str:
    """What the binary was compiled for, in words: "AVX512+FMA+AVX2", "AVX"."""
    needed = required(census)
    if not needed:
        return "SSE2"
    top = highest(needed)
    extras = [isa for isa in ("FMA", "AVX2") if isa in needed and isa != top]
    return "+".join([top, *extras])


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """This CPU's feature flags (/proc/cpuinfo), empty when unreadable."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return set()
    for line in cpuinfo.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def lacking(isas: Iterable[str], flags: set[str]) -> list[str]:
    """The extensions among ``isas`` this CPU (its flags) cannot run."""
    return [isa for isa in isas if not all(f in flags for f in CPU_FLAGS[isa])]


def shared_objects(
    path: Path, scratch: Path, only: Callable[[str], bool] | None = None
) -> list[Path]:
    """The .so files of a wheel (extracted into ``scratch``), a folder, or one .so;
    ``only(name)`` keeps some of them (e.g. libtensorflow_framework alone)."""
    keep = only or (lambda _name: True)
    is_so = re.compile(r"\.so(\.\d+)*$")
    if path.is_file() and path.suffix == ".whl":
        with zipfile.ZipFile(path) as whl:
            names = [n for n in whl.namelist() if is_so.search(n) and keep(Path(n).name)]
            whl.extractall(scratch, names)
        return sorted(scratch / n for n in names)
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if is_so.search(p.name) and keep(p.name))
    return [path]


def census_paths(
    paths: Iterable[str | Path],
    log: Callable[[str], None] = lambda _m: None,
    only: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """Census per shared object and in total over wheels, folders or .so files."""
    files: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for given in paths:
            for so in shared_objects(Path(given), Path(scratch), only):
                log(f"census: objdump {so.name} ({so.stat().st_size / 1e6:.0f} MB)")
                files[so.name] = census_file(so)
    total = merge(files.values())
    return {
        "files": files,
        "total": total,
        "required": required(total),
        "compiled_for": compiled_for(total),
    }


def summary(census: dict[str, Any]) -> str:
    """One line: what is required, and the counts outside and inside dispatched kernels."""
    rest, disp = census.get("rest", {}), census.get("dispatched", {})
    parts = [f"{isa} {rest.get(isa, 0):,}/{disp.get(isa, 0):,}" for isa in ISAS]
    return f"compiled for {compiled_for(census)} (rest/dispatched: {', '.join(parts)})"
