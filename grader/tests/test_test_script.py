"""tools/test.sh picks its build from the GPU nvidia-smi reports: `bash tools/test.sh --plan`
prints the line that says which GPU and architectures the build targets and the configure
command, and stops. These tests put a fake nvidia-smi first on PATH."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def _ci_archs_text() -> str:
    """What test.sh says the ci preset builds, from CMakePresets.json itself."""
    presets = json.loads((REPO_ROOT / "CMakePresets.json").read_text())["configurePresets"]
    archs = next(p for p in presets if p["name"] == "ci")["cacheVariables"]["CMAKE_CUDA_ARCHITECTURES"]
    real = [a.removesuffix("-real") for a in archs.split(";") if not a.endswith("-virtual")]
    ptx = any(not a.endswith("-real") for a in archs.split(";"))
    return ", ".join(f"sm_{a}" for a in real) + (" (+PTX)" if ptx else "")


def plan(tmp_path: Path, smi: str | None, **env: str) -> list[str]:
    """test.sh --plan's lines, with `smi` as nvidia-smi's script (None: nvidia-smi fails as
    it does where there is no GPU)."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "nvidia-smi").write_text("#!/bin/sh\n" + (smi if smi is not None else
                                     "echo 'NVIDIA-SMI has failed because it could not communicate "
                                     "with the NVIDIA driver.'\nexit 9\n"))
    (fake / "nvidia-smi").chmod(0o755)
    base = {k: v for k, v in os.environ.items() if not k.startswith("CUDALAB_")}
    base["PATH"] = f"{fake}:{base.get('PATH', '/usr/bin:/bin')}"
    done = subprocess.run(["bash", str(REPO_ROOT / "tools" / "test.sh"), "--plan"], capture_output=True,
                          text=True, env={**base, **env}, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def query(*lines: str) -> str:
    """An nvidia-smi answering the --query-gpu=name,compute_cap,driver_version query."""
    body = "".join(f"echo '{line}'\n" for line in lines)
    return f'case "$1" in -L) echo "GPU 0: x (UUID: GPU-0)"; exit 0;; esac\n{body}'


def test_no_gpu_keeps_the_fast_ci_build(tmp_path):
    lines = plan(tmp_path, None)
    assert lines == [f"test.sh: no GPU here: building preset ci for {_ci_archs_text()}; the GPU tests report "
                     "themselves as skipped", "cmake --preset ci"]


@pytest.mark.parametrize("name, cc, arch", [("NVIDIA GeForce RTX 3060", "8.6", "86"),
                                            ("NVIDIA GeForce RTX 4090", "8.9", "89"),
                                            ("NVIDIA GeForce RTX 2060", "7.5", "75")])
def test_a_laptop_gpu_gets_a_gpu_build_for_its_own_architecture(tmp_path, name, cc, arch):
    lines = plan(tmp_path, query(f"{name}, {cc}, 580.95.05"))
    assert lines == [f"test.sh: building for {name} (sm_{arch}) with preset gpu, code for sm_{arch}",
                     f"cmake --preset gpu -DCMAKE_CUDA_ARCHITECTURES={arch}-real"]


def test_two_gpus_of_different_architectures_get_both(tmp_path):
    lines = plan(tmp_path, query("NVIDIA GeForce RTX 3060, 8.6, 580.95.05", "NVIDIA GeForce RTX 4090, 8.9, 580.95.05",
                                 "NVIDIA GeForce RTX 3060, 8.6, 580.95.05"))
    assert lines[0].startswith("test.sh: building for NVIDIA GeForce RTX 3060 (sm_86), NVIDIA GeForce RTX 4090 "
                               "(sm_89), NVIDIA GeForce RTX 3060 (sm_86) with preset gpu, code for sm_86, sm_89")
    assert lines[-1] == "cmake --preset gpu -DCMAKE_CUDA_ARCHITECTURES=86-real;89-real"


def test_a_driver_older_than_r580_is_named(tmp_path):
    lines = plan(tmp_path, query("NVIDIA GeForce RTX 3050 Laptop GPU, 8.6, 535.54.03"))
    assert lines[1] == ("test.sh: the NVIDIA driver here (535.54.03) is older than CUDA 13 needs (580 or newer): "
                        "the lab binaries will refuse to run (driver_too_old) until the driver is updated")
    assert lines[-1] == "cmake --preset gpu -DCMAKE_CUDA_ARCHITECTURES=86-real"


def test_a_gpu_older_than_cuda_13_supports_falls_back_to_ci(tmp_path):
    lines = plan(tmp_path, query("NVIDIA GeForce GTX 1080, 6.1, 580.95.05"))
    assert lines[0].startswith("test.sh: NVIDIA GeForce GTX 1080 (sm_61) is older than CUDA 13 supports "
                               "(sm_75 and newer): building preset ci")
    assert lines[-1] == "cmake --preset ci"


def test_a_driver_without_the_compute_cap_field(tmp_path):
    smi = ('case "$1" in -L) echo "GPU 0: Tesla T4 (UUID: GPU-0)"; exit 0;; esac\n'
           "echo 'Field \"compute_cap\" is not a valid field to query.'\nexit 2\n")
    lines = plan(tmp_path, smi)
    assert lines[0].startswith("test.sh: nvidia-smi lists a GPU but not its compute capability")
    assert lines[-1] == "cmake --preset ci"


def test_cudalab_preset_overrides_the_detection(tmp_path):
    lines = plan(tmp_path, query("NVIDIA GeForce RTX 3060, 8.6, 580.95.05"), CUDALAB_PRESET="ci")
    assert lines == [f"test.sh: building preset ci (CUDALAB_PRESET) for {_ci_archs_text()}", "cmake --preset ci"]
    assert plan(tmp_path, None, CUDALAB_PRESET="gpu")[0] == ("test.sh: building preset gpu (CUDALAB_PRESET) for the GPU CMake "
                                                                  "finds here (native)")
