"""libraries: the scan of the machine's CUDA libraries (wherever installed), its cache, and
the compile and run views a lab's allowlist gives, on a fake machine in a temporary root."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from cudalab.intake import forbidden
from cudalab.lab import labspec
from cudalab.isolation import libraries

ALLOW_DEFAULT = ("cuda_runtime", "cxx_standard")


def touch(root: Path, relative: str, text: str = "") -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def machine(tmp_path) -> Path:
    """A toolkit under local/cuda-12.9, a cuBLAS pip wheel outside it, Debian's cuSPARSE
    headers, the driver in the system library folder."""
    root = tmp_path / "usr"
    toolkit = "local/cuda-12.9"
    touch(root, f"{toolkit}/include/cuda_runtime.h")
    touch(root, f"{toolkit}/include/cooperative_groups.h", "#include <cuda/atomic>\n")
    touch(root, f"{toolkit}/include/cuda_occupancy.h")
    touch(root, f"{toolkit}/include/cublas_v2.h")
    touch(root, f"{toolkit}/include/cccl/cub/cub.cuh")
    touch(root, f"{toolkit}/include/cccl/thrust/version.h")
    touch(root, f"{toolkit}/include/cccl/cuda/std/atomic", "#include <cuda/__cccl_config>\n")
    touch(root, f"{toolkit}/include/cccl/cuda/__cccl_config/config.h")
    touch(root, f"{toolkit}/include/cccl/cuda/atomic", "#include <cuda/__atomic/atomic.h>\n")
    touch(root, f"{toolkit}/include/cccl/cuda/__atomic/atomic.h")
    touch(root, f"{toolkit}/include/cccl/cuda/barrier", "#include <cuda/__barrier/barrier.h>\n")
    touch(root, f"{toolkit}/include/cccl/cuda/__barrier/barrier.h")
    touch(root, f"{toolkit}/lib/libcudart.so.12")
    touch(root, f"{toolkit}/lib/libnvrtc.so.12")
    touch(root, f"{toolkit}/lib/libcusparse.so.12")
    touch(root, "lib/python3.12/dist-packages/nvidia/cublas/lib/libcublas.so.12")
    touch(root, "lib/python3.12/dist-packages/nvidia/cublas/include/cublas_api.h")
    touch(root, "include/cusparse.h")
    touch(root, "lib/x86_64-linux-gnu/libcuda.so.1")
    touch(root, "lib/x86_64-linux-gnu/libstdc++.so.6")
    return root


def test_every_catalogued_library_has_its_files_described():
    assert set(forbidden.LIBRARIES) <= set(libraries.FILES)


def test_a_library_outside_the_toolkit_is_hidden_from_runs(machine):
    """Proves: a run of a lab that allows only the runtime finds nothing in cuBLAS installed
    as a pip wheel, cuSPARSE in the toolkit, or nvrtc (a CUDA library no lab allows), while
    the runtime, the driver and the system's own libraries stay."""
    hidden = {p.name for p in libraries.run_hidden(libraries.scan([machine]), ALLOW_DEFAULT)}
    assert hidden == {"libcublas.so.12", "libcusparse.so.12", "libnvrtc.so.12"}
    allowing_cublas = libraries.run_hidden(libraries.scan([machine]), (*ALLOW_DEFAULT, "cublas"))
    assert "libcublas.so.12" not in {p.name for p in allowing_cublas}
    needed = machine / "local/cuda-12.9/lib/libnvrtc.so.12"
    assert needed not in libraries.run_hidden(libraries.scan([machine]), ALLOW_DEFAULT, needed=[needed])


def test_the_compile_sees_no_header_of_a_library_the_lab_does_not_allow(machine, tmp_path):
    """Proves: every header of a library not allowed, wherever it lies (the toolkit, a wheel,
    /usr/include), is covered by an #error stub that names the library, every header folder
    (CUB, Thrust, libcu++'s own parts) by an empty folder; what the runtime's headers
    include from libcu++ (cooperative_groups.h's <cuda/atomic>) and cuda::std stay."""
    titles = {key: library.title for key, library in forbidden.LIBRARIES.items()}
    covers = libraries.compile_covers(libraries.scan([machine]), ALLOW_DEFAULT, titles, tmp_path / "stubs")
    covered = {os.path.relpath(target, machine): source for source, target in covers}
    cccl = "local/cuda-12.9/include/cccl"
    assert set(covered) == {"local/cuda-12.9/include/cublas_v2.h", "local/cuda-12.9/include/cuda_occupancy.h",
                            "lib/python3.12/dist-packages/nvidia/cublas/include/cublas_api.h",
                            "include/cusparse.h", f"{cccl}/cub", f"{cccl}/thrust",
                            f"{cccl}/cuda/barrier", f"{cccl}/cuda/__barrier"}
    stub = covered["include/cusparse.h"].read_text()
    assert stub.startswith('#error "cuSPARSE is not among the libraries this lab allows')
    assert libraries.hidden_library_in(f"cusparse.h:1:2: error: {stub}") == "cusparse"
    assert covered[f"{cccl}/cub"].is_dir() and not list(covered[f"{cccl}/cub"].iterdir())
    allowing = libraries.compile_covers(libraries.scan([machine]), (*ALLOW_DEFAULT, "libcudacxx", "cub"),
                                        titles, tmp_path / "stubs")
    assert not {t for _, t in allowing} & {f"{machine}/{cccl}/cub", f"{machine}/{cccl}/cuda/barrier"}


def test_the_scan_is_cached_per_machine_and_redone_when_an_install_folder_changes(machine, tmp_path, monkeypatch):
    """Proves: the second look reads the cache; a wheel installed since (its folder
    changed) is found by a new scan; a cache file others could have written is not used."""
    scans = []
    real_scan = libraries.scan
    monkeypatch.setattr(libraries, "scan", lambda roots: scans.append(roots) or real_scan(roots))
    cache = tmp_path / "cache"
    first = libraries.machine_scan(cache, [machine])
    assert libraries.machine_scan(cache, [machine]) == first and len(scans) == 1
    touch(machine, "lib/python3.12/dist-packages/nvidia/cusolver/lib/libcusolver.so.11")
    again = libraries.machine_scan(cache, [machine])
    assert len(scans) == 2 and "libcusolver.so.11" in {Path(f.path).name for f in again}
    (cached,) = cache.glob("library-scan-*.json")
    cached.chmod(0o666)
    libraries.machine_scan(cache, [machine])
    assert len(scans) == 3


def test_a_compile_error_names_the_library_it_reached():
    """Proves: a failed compile is traced to the library whose stub it hit, or whose hidden
    folder it found empty (the include path a macro built, as the compiler spells it)."""
    spec = labspec.load(REPO_ROOT / "labs" / "sort" / "lab.toml")
    assert libraries.library_reached(
        "sort.cu:1:10: fatal error: cccl/cub/device/device_radix_sort.cuh: No such file or directory", spec) == "cub"
    assert libraries.library_reached('catastrophic error: cannot open source file "thrust/sort.h"', spec) == "thrust"
    assert libraries.library_reached("sort.cu:1:10: fatal error: mine.h: No such file or directory", spec) is None
