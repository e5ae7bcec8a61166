"""What a submission's compile and runs can see of the machine's CUDA libraries: only what
its lab allows (lab.toml [handin] libraries; by default the CUDA runtime and the C++
standard library).

The machine is scanned for every library of the catalogue, wherever it is installed (the
toolkit's include and lib folders, other toolkits, Debian packages, pip wheels under
nvidia/...): the headers and header folders of each, and its shared libraries. The scan
is written to a grader-owned cache per machine and done again when a folder where
libraries get installed changes. A lab then gets

* a compile view (`compile_covers`) in which every header of a library it does not allow
  is a one-line `#error` that names the library, and every header folder of one (cub/,
  thrust/, cutlass/, the parts of libcu++'s cuda/ that the runtime's own headers do not
  include) is empty: an include reaches nothing, however its name was built;
* a run view (`run_hidden`) in which the shared libraries it does not allow, and any other
  shared library in a CUDA library folder that is not the runtime's, have nothing to load.

The source and object checks of forbidden.py stay the early, friendly messages; this is
what holds when they are fooled.
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import socket
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ..lab.catalogue import LIBRARIES

SCAN_ROOTS = ("/usr", "/opt")
"""Where the sandbox's view can show libraries from: /usr (with /usr/local, the toolkits
and the Python packages) and /opt (toolchain folders such as a GCC or an HPC SDK)."""


@dataclass(frozen=True)
class LibraryFiles:
    """How to recognise one library's files on disk."""

    headers: tuple[str, ...] = ()                    # globs on header file names (in an include folder)
    folders: tuple[tuple[str, str], ...] = ()        # (folder name, a file inside that marks it)
    shared: tuple[str, ...] = ()                     # globs on shared library file names


FILES: dict[str, LibraryFiles] = {
    "cuda_runtime": LibraryFiles(shared=("libcudart.so*",)),
    "cub": LibraryFiles(folders=(("cub", "cub.cuh"),)),
    "thrust": LibraryFiles(folders=(("thrust", "version.h"),)),
    "cutlass": LibraryFiles(folders=(("cutlass", "cutlass.h"), ("cute", "tensor.hpp"))),
    "occupancy_calculator": LibraryFiles(headers=("cuda_occupancy.h",)),
    "cublas": LibraryFiles(headers=("cublas*.h", "nvblas.h"), shared=("libcublas*.so*", "libnvblas*.so*")),
    "cusparse": LibraryFiles(headers=("cusparse*.h",), shared=("libcusparse*.so*",)),
    "cufft": LibraryFiles(headers=("cufft*.h", "cudalibxt.h"), shared=("libcufft*.so*",)),
    "curand": LibraryFiles(headers=("curand*.h",), shared=("libcurand*.so*",)),
    "cusolver": LibraryFiles(headers=("cusolver*.h",), shared=("libcusolver*.so*",)),
    "npp": LibraryFiles(headers=("npp*.h",), shared=("libnpp*.so*",)),
    "nvjpeg": LibraryFiles(headers=("nvjpeg*.h",), shared=("libnvjpeg*.so*",)),
    "cudnn": LibraryFiles(headers=("cudnn*.h",), shared=("libcudnn*.so*",)),
    "nccl": LibraryFiles(headers=("nccl*.h",), folders=(("nccl_device", "core.h"),), shared=("libnccl*.so*",)),
    # libcu++'s cuda/ folder is split by the scan itself (libcudacxx_entries): cuda::std and
    # what the runtime's headers include stay, the rest belongs to this key.
    "libcudacxx": LibraryFiles(),
}

OTHER_CUDA_LIBRARY = "other_cuda_library"
"""The key of a shared library in a CUDA library folder that no lab can allow (nvrtc, which
compiles code at run time, nvJitLink, CUPTI, ...)."""

# Never hidden, wherever they are: the driver (the runtime talks to the GPU through it).
_DRIVER = ("libcuda.so*", "libnvidia*.so*", "libcudadebugger.so*")
_STUB = "cudalab-hidden-library"
_STUB_LINE = re.compile(rf"{_STUB}:(\w+)")
_INCLUDE_LINE = re.compile(rb'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
_HEADER_SUFFIXES = ("", ".h", ".hpp", ".cuh", ".inl", ".hxx")
_SCHEMA = "cudalab.library-scan/1"


@dataclass(frozen=True)
class Found:
    """One file or folder of a library, at its real path."""

    library: str
    path: str
    kind: str  # "header", "folder" or "shared"

    def to_json(self) -> list[str]:
        return [self.library, self.path, self.kind]


# --------------------------------------------------------------------------- the scan

def _is_include_path(folder: str) -> bool:
    return "include" in Path(folder).parts


def _cuda_library_folder(folder: str) -> bool:
    """A folder that holds only CUDA's libraries: a toolkit's lib folder, or the lib folder
    of an nvidia pip wheel. (A system folder such as /usr/lib/x86_64-linux-gnu is not.)"""
    parts = Path(folder).parts
    return (any(p.startswith("cuda") for p in parts[:-1]) and parts[-1] in ("lib", "lib64")) or \
        ("nvidia" in parts and parts[-1] in ("lib", "lib64"))


def _libcudacxx_root(folder: Path) -> bool:
    """libcu++'s cuda/ folder: it holds std/ and the atomic header."""
    return folder.name == "cuda" and (folder / "std").is_dir() and (folder / "atomic").is_file()


def _includes_of(path: Path) -> list[str]:
    try:
        with open(path, "rb") as handle:
            data = handle.read(1 << 20)
    except OSError:
        return []
    return [m.decode("utf-8", "replace") for m in _INCLUDE_LINE.findall(data)]


def libcudacxx_kept(cuda_folder: Path, runtime_headers: Iterable[Path]) -> set[str]:
    """The top-level entries of libcu++'s cuda/ folder that a compile needs without libcu++:
    cuda::std (the C++ standard library on the device) and everything it and the runtime's
    own headers (`runtime_headers`: cooperative_groups.h includes <cuda/atomic>) include
    from cuda/, followed from file to file. An include inside an #if counts too: keeping a
    little more than needed never breaks a compile, keeping less would."""
    kept: set[str] = set()
    pending: list[Path] = list(runtime_headers)

    def keep(entry: str) -> None:
        if entry in kept or not (cuda_folder / entry).exists():
            return
        kept.add(entry)
        top = cuda_folder / entry
        pending.extend(sorted(p for p in top.rglob("*") if p.is_file()) if top.is_dir() else [top])

    keep("std")
    while pending:
        for target in _includes_of(pending.pop()):
            parts = target.split("/")
            if parts[0] == "cccl":
                parts = parts[1:]
            if len(parts) >= 2 and parts[0] == "cuda":
                keep(parts[1])
    return kept


def _runtime_headers(include_folder: Path) -> list[Path]:
    """The headers of a toolkit's include folder that no catalogued library owns: what the
    runtime ships (cuda_runtime.h, crt/, cooperative_groups/, ...)."""
    owned = [g for files in FILES.values() for g in files.headers]
    found = []
    for top, dirs, files in os.walk(include_folder):
        dirs[:] = [d for d in dirs if d not in ("cccl", "cuda", "cub", "thrust", "nv")]
        for name in files:
            if not any(fnmatch.fnmatch(name, g) for g in owned):
                found.append(Path(top) / name)
    return found


def scan(roots: Sequence[str | Path] = SCAN_ROOTS) -> list[Found]:
    """Every catalogued library's headers, header folders and shared libraries under
    `roots`, and every other shared library in a CUDA library folder, by real path (links
    are not followed: what they point to is found where it lies, if under a root)."""
    found: dict[tuple[str, str], Found] = {}

    def add(library: str, path: Path, kind: str) -> None:
        real = os.path.realpath(path)
        found.setdefault((real, kind), Found(library, real, kind))

    folder_marks = [(name, mark, key) for key, files in FILES.items() for name, mark in files.folders]
    for root in roots:
        for top, dirs, files in os.walk(root):
            here = Path(top)
            kept_dirs = []
            for name in sorted(dirs):
                sub = here / name
                if os.path.islink(sub):
                    continue
                owner = next((key for folder, mark, key in folder_marks
                              if name == folder and (sub / mark).is_file()), None)
                if owner is not None:
                    add(owner, sub, "folder")
                elif _libcudacxx_root(sub):
                    _add_libcudacxx(sub, add)
                else:
                    kept_dirs.append(name)
            dirs[:] = kept_dirs
            include = _is_include_path(top)
            cuda_libs = _cuda_library_folder(top)
            for name in files:
                path = here / name
                if include:
                    owner = next((key for key, lib in FILES.items() if any(fnmatch.fnmatch(name, g) for g in lib.headers)), None)
                    if owner is not None:
                        add(owner, path, "header")
                        continue
                if ".so" not in name or any(fnmatch.fnmatch(name, g) for g in _DRIVER):
                    continue
                owner = next((key for key, lib in FILES.items() if any(fnmatch.fnmatch(name, g) for g in lib.shared)), None)
                if owner is None and cuda_libs and name.startswith("lib"):
                    owner = OTHER_CUDA_LIBRARY
                if owner is not None and os.path.isfile(path):
                    add(owner, path, "shared")
    return sorted(found.values(), key=lambda f: (f.path, f.kind))


def _add_libcudacxx(cuda_folder: Path, add) -> None:
    """The entries of libcu++'s cuda/ folder that only libcu++ itself uses."""
    include_folder = cuda_folder.parent.parent if cuda_folder.parent.name == "cccl" else cuda_folder.parent
    kept = libcudacxx_kept(cuda_folder, _runtime_headers(include_folder))
    for entry in sorted(os.listdir(cuda_folder)):
        if entry in kept or os.path.islink(cuda_folder / entry):
            continue
        add("libcudacxx", cuda_folder / entry, "folder" if (cuda_folder / entry).is_dir() else "header")


# --------------------------------------------------------------------------- the cache

def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _install_folders(roots: Sequence[str | Path], found: Sequence[Found]) -> list[str]:
    """The folders whose change means a library may have come or gone: the roots, the
    folders where libraries were found and those above them, and the folders where
    toolkits and packages get installed."""
    folders: set[str] = set()
    for root in roots:
        root = Path(root)
        folders.add(str(root))
        for pattern in ("local", "local/lib", "lib", "lib/*-linux-gnu", "include", "local/include",
                        "lib/python3*", "lib/python3*/*-packages", "lib/python3*/*-packages/nvidia",
                        "local/lib/python3*", "local/lib/python3*/*-packages",
                        "local/lib/python3*/*-packages/nvidia", "local/cuda*", "*"):
            folders.update(str(p) for p in root.glob(pattern) if p.is_dir() and not p.is_symlink())
    for item in found:
        path = Path(item.path)
        for parent in [path.parent, path.parent.parent]:
            folders.add(str(parent))
    return sorted(folders)


def _fingerprint(folders: Sequence[str]) -> dict[str, int]:
    marks = {}
    for folder in folders:
        try:
            marks[folder] = os.stat(folder).st_mtime_ns
        except OSError:
            marks[folder] = -1
    return marks


def _private_folder(folder: Path) -> Path:
    """`folder`, made if needed, owned by the grader and written by nobody else."""
    folder.mkdir(parents=True, exist_ok=True)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise OSError(f"{folder} is not a folder of the grader's own")
    if st.st_mode & 0o022:
        os.chmod(folder, 0o755)
    return folder


def _read_cache(path: Path, roots: Sequence[str]) -> list[Found] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        # Only a cache the grader wrote itself decides what runs can see.
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return None
        try:
            document = json.loads(handle.read(16 << 20))
        except ValueError:
            return None
    if (not isinstance(document, dict) or document.get("schema") != _SCHEMA
            or document.get("host") != socket.gethostname() or document.get("boot_id") != _boot_id()
            or document.get("roots") != list(roots)):
        return None
    marks = document.get("folders")
    if not isinstance(marks, dict) or _fingerprint(list(marks)) != marks:
        return None
    try:
        return [Found(*item) for item in document["found"]]
    except (KeyError, TypeError):
        return None


def machine_scan(cache_folder: Path, roots: Sequence[str | Path] = SCAN_ROOTS) -> list[Found]:
    """`scan(roots)`, from the cache in `cache_folder` when nothing changed since it was
    written on this machine (same host, same boot, same install folders); else scanned
    again and the cache rewritten."""
    roots = [str(r) for r in roots]
    cache = Path(cache_folder) / f"library-scan-{hashlib.sha256(json.dumps(roots).encode()).hexdigest()[:12]}.json"
    cached = _read_cache(cache, roots)
    if cached is not None:
        return cached
    found = scan(roots)
    document = {"schema": _SCHEMA, "host": socket.gethostname(), "boot_id": _boot_id(), "roots": roots,
                "folders": _fingerprint(_install_folders(roots, found)), "found": [f.to_json() for f in found]}
    folder = _private_folder(Path(cache_folder))
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=folder, prefix=".library-scan.",
                                     suffix=".tmp", delete=False) as handle:
        json.dump(document, handle)
    os.chmod(handle.name, 0o644)
    os.replace(handle.name, cache)
    return found


# --------------------------------------------------------------------------- the views

def hidden_from(found: Iterable[Found], allowed: Iterable[str]) -> list[Found]:
    """What a lab allowing `allowed` must not see."""
    allowed = set(allowed)
    return [f for f in found if f.library not in allowed]


def stub_text(library: str, title: str) -> str:
    """A hidden header's whole content: a compile that reaches it stops with a line that
    names the library (and the key that build.py turns into the lab's own sentence)."""
    return f'#error "{title} is not among the libraries this lab allows ({_STUB}:{library})"\n'


def hidden_library_in(compiler_output: str) -> str | None:
    """The key of the hidden library a failed compile reached, if it reached one."""
    match = _STUB_LINE.search(compiler_output)
    return match[1] if match else None


def compile_covers(found: Iterable[Found], allowed: Iterable[str], titles: dict[str, str],
                   stub_folder: Path) -> list[tuple[Path, str]]:
    """(grader-owned source, system path it covers) for the compile of a lab allowing
    `allowed`: each hidden header becomes its library's #error stub, each hidden header
    folder an empty folder. The stubs are written into `stub_folder`."""
    folder = _private_folder(Path(stub_folder))
    empty = _private_folder(folder / "empty")
    covers: list[tuple[Path, str]] = []
    for item in hidden_from(found, allowed):
        if item.kind == "folder":
            covers.append((empty, item.path))
        elif item.kind == "header":
            stub = folder / f"{item.library}.h"
            text = stub_text(item.library, titles.get(item.library, item.library))
            if not stub.is_file() or stub.read_text(encoding="utf-8") != text:
                stub.write_text(text, encoding="utf-8")
                stub.chmod(0o644)
            covers.append((stub, item.path))
    return covers


def run_hidden(found: Iterable[Found], allowed: Iterable[str], needed: Iterable[Path] = ()) -> list[Path]:
    """The shared libraries a run of a lab allowing `allowed` must find nothing in, except
    those in `needed` (what the official binaries load themselves)."""
    keep = {os.path.realpath(p) for p in needed}
    return [Path(f.path) for f in hidden_from(found, allowed) if f.kind == "shared" and f.path not in keep]


# --------------------------------------------------------------------------- for one lab

_MISSING_INCLUDE = (re.compile(r"fatal error: ([^:\s]+): No such file or directory"),  # gcc, nvcc's preprocessor
                    re.compile(r'cannot open source file "([^"]+)"'))                   # cudafe++


def library_reached(compiler_output: str, spec) -> str | None:
    """The library the lab does not allow that a failed compile of its submission reached:
    an #error stub's key, or a header folder it found empty (the include the compiler could
    not open, matched against the catalogue's include patterns)."""
    refused = {rule.library for rule in spec.handin.refused}
    key = hidden_library_in(compiler_output)
    if key in refused:
        return key
    for pattern in _MISSING_INCLUDE:
        for target in pattern.findall(compiler_output):
            for library in refused:
                if any(re.search(p, target) for p in LIBRARIES[library].includes):
                    return library
    return None


def _folder(config) -> Path:
    return Path(config.work_dir) / "libraries"


def machine_libraries(config) -> list[Found]:
    """This machine's scan, cached in the grader's work folder."""
    return machine_scan(_folder(config))


def lab_compile_covers(config, spec) -> list[tuple[Path, str]]:
    """The covers (compile_covers) for a compile of a submission to `spec`'s lab."""
    titles = {key: library.title for key, library in LIBRARIES.items()}
    return compile_covers(machine_libraries(config), spec.handin.libraries, titles, _folder(config) / "stubs")


def lab_run_hidden(config, spec, needed: Iterable[Path] = ()) -> list[Path]:
    """The shared libraries (run_hidden) a run of a submission to `spec`'s lab cannot load."""
    return run_hidden(machine_libraries(config), spec.handin.libraries, needed)
