"""The host around the sandbox: another local user of the grading machine, and what a student's
program leaves behind (docs/architecture.md, "Trust"). The grader writes only into private
folders it created and checks, never into a folder of a fixed name that someone else could
make first, and reads what a program wrote as data, never as a path to follow.

The other user is uid 65534, reached through setpriv, so most of these tests need root (CI
runs as root). Each runs against a temporary folder of its own (sticky and writable by all,
as /tmp is), so that the folders the other user makes first never touch the real /tmp.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from conftest import REPO_ROOT, write_fake
from cudalab.building import build
from cudalab.grading import grade
from cudalab.batching import remote
from cudalab.config import Config
from cudalab.errors import GraderError
from cudalab.isolation.runner import fresh_dir
from cudalab.isolation.sandbox import INSIDE_ROOT, Bind, Sandbox, _chown_tree, run_limits, scratch_root

OTHER_UID = 65534
SETPRIV = shutil.which("setpriv")
AS_ROOT = os.geteuid() == 0
# The folders of fixed names that the grader once made in the system's temporary folder.
FIXED_NAMES = ("cudalab-scratch", "cudalab-staged", f"cudalab-slurm-{os.getuid()}", f"cudalab-{os.getuid()}")

needs_root = pytest.mark.skipif(not AS_ROOT, reason="only root hands runs to another uid and can act as "
                                "another local user; CI runs these tests as root")
needs_other_user = pytest.mark.skipif(
    not AS_ROOT or SETPRIV is None,
    reason="needs root and setpriv (util-linux) to act as another local user (uid 65534)")

SANDBOX = Sandbox.detect(Config.load(env={}, root=REPO_ROOT, preset="ci"))
needs_sandbox_user = pytest.mark.skipif(
    SANDBOX.isolation.kind != "bubblewrap" or SANDBOX.isolation.uid is None,
    reason="needs bubblewrap running as the unprivileged sandbox user: " + "; ".join(SANDBOX.isolation.missing))


def as_other_user(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([SETPRIV, f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups", *argv],
                          capture_output=True, text=True, timeout=60, **kwargs)


def other_user_python(script: str, *args: str, background: bool = False):
    argv = [SETPRIV, f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups", "/usr/bin/python3", "-c",
            script, *args]
    if background:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


@pytest.fixture
def shared_tmp(tmp_path, monkeypatch) -> Path:
    """The system's temporary folder as the grader sees it: sticky and writable by everyone,
    like /tmp, but this test's own."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    folder.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def squatted(shared_tmp) -> Path:
    """Every folder of a fixed name the grader once used there, made first by the other user,
    writable by everyone."""
    done = as_other_user(["/bin/sh", "-c", 'cd "$1" && shift && for n in "$@"; do mkdir -m 0777 "$n"; done',
                          "sh", str(shared_tmp), *FIXED_NAMES])
    assert done.returncode == 0, done.stderr
    return shared_tmp


def inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def private_file(tmp_path: Path, text: str = "genuine\n") -> Path:
    """A file the sandbox user cannot reach (in a 0700 folder, as a checkout in a private home
    is), with a name no other test uses: shown in the sandbox through a staged copy."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700, exist_ok=True)
    private.chmod(0o700)
    tool = private / f"tool-{uuid.uuid4().hex[:12]}"
    tool.write_text(text)
    return tool


def cat_in_sandbox(tool: Path, space: Path) -> str:
    """What a sandboxed program reads from `tool`, bound read-only."""
    run = fresh_dir(space, "run")
    result = SANDBOX.run(["/bin/cat", f"{INSIDE_ROOT}/in/{tool.name}"], workdir=Bind(run, f"{INSIDE_ROOT}/run"),
                         binds=[Bind(tool, f"{INSIDE_ROOT}/in/{tool.name}")],
                         limits=run_limits(Config.load(env={}, root=REPO_ROOT, preset="ci"), timeout_s=20.0))
    assert result.exit_code == 0, result.stderr
    return result.stdout


def files_named(top: Path, name: str) -> list[Path]:
    return [Path(folder) / name for folder, _, files in os.walk(top) if name in files]


# --------------------------------------------------------------------------- private folders

@needs_other_user
def test_scratch_is_never_a_folder_another_user_made_first(squatted, tmp_path):
    """Proves: where the work folder is out of the sandbox user's reach, runs go to a folder
    of the grader's own with an unpredictable name, owned by the grader and not listable or
    writable by anyone else; never to the fixed name another user made first."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    home.chmod(0o700)  # as root's home is: the sandbox user cannot pass
    config = Config.load(env={}, root=REPO_ROOT, preset="ci", work_dir=home / "work")
    root = scratch_root(config)
    assert not any(inside(root, squatted / name) for name in FIXED_NAMES), root
    info = os.lstat(root)
    assert info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o066 == 0, oct(info.st_mode)
    run = fresh_dir(root, "run")
    listing = as_other_user(["/bin/ls", str(root)])
    assert listing.returncode != 0 and run.name not in listing.stdout
    assert as_other_user(["/bin/sh", "-c", f"echo forged > {root}/verdict.json"]).returncode != 0


@needs_root
def test_a_scratch_folder_that_is_not_the_graders_is_refused_in_a_sentence(tmp_path):
    """Proves: the scratch folder is checked at every use; one another user owns (made there
    before the grader) is refused with a sentence that names it and says what to do."""
    config = Config.load(env={}, root=REPO_ROOT, preset="ci", work_dir=tmp_path / "work")
    config.temp_dir.mkdir(parents=True)
    os.chown(config.temp_dir, OTHER_UID, OTHER_UID)
    with pytest.raises(GraderError) as refused:
        scratch_root(config)
    said = str(refused.value)
    assert str(config.temp_dir) in said and f"belongs to uid {OTHER_UID}" in said and "Remove it" in said


def test_the_work_folder_is_never_a_fixed_name_in_the_temporary_folder(shared_tmp, toy_root, monkeypatch):
    """Proves: without XDG_CACHE_HOME and HOME, the work folder (results, builds, scratch) is
    under the user's home folder, not at a name in the shared temporary folder that another
    user could make first."""
    monkeypatch.delenv("CUDALAB_WORK_DIR", raising=False)
    config = Config.load(env={}, root=toy_root, preset="ci")
    assert not inside(config.work_dir, shared_tmp), config.work_dir
    assert not inside(config.work_dir, Path("/tmp")), config.work_dir


@needs_other_user
def test_a_slurm_gpu_task_copies_its_build_to_a_private_folder(squatted, tmp_path):
    """Proves: the GPU task's copy of its build on its node goes to a folder of the grader's
    own with an unpredictable name, not to the fixed name another user of the node made first."""
    config = Config.load(env={}, root=REPO_ROOT, preset="ci", work_dir=tmp_path / "shared" / "work")
    shared = fresh_dir(scratch_root(config), "grade-toy")
    binary = write_fake(shared / "submission" / "toy_submission", name="toy_submission")
    local_config, local_binary, local = remote._on_this_node(config, grade.Handoff("key", {}, binary, shared, 0.0))
    assert not any(inside(local, squatted / name) for name in FIXED_NAMES), local
    assert local_binary.read_bytes() == binary.read_bytes()
    for folder in (local, *local.parents):
        if folder == squatted:
            break
        info = os.lstat(folder)
        assert info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o066 == 0, (folder, oct(info.st_mode))
    assert not inside(scratch_root(local_config), squatted / FIXED_NAMES[2])


# --------------------------------------------------------------------------- links never followed

@needs_root
def test_a_linked_top_folder_is_never_handed_to_the_sandbox_user(tmp_path):
    """Proves: a run folder that is a link to a folder of root's is refused, by the chown and by
    the sandbox, and nothing it points to changes owner or gets written."""
    target = tmp_path / "root-only"
    target.mkdir(mode=0o700)
    (target / "inner").write_text("root's\n")
    link = tmp_path / "run"
    link.symlink_to(target)
    with pytest.raises(GraderError):
        _chown_tree(link, OTHER_UID)
    assert os.stat(target).st_uid == 0 and os.stat(target / "inner").st_uid == 0
    if SANDBOX.isolation.uid is not None:
        with pytest.raises(GraderError):
            SANDBOX.run(["/bin/sh", "-c", "echo owned > /cudalab/run/owned"],
                        workdir=Bind(link, f"{INSIDE_ROOT}/run"),
                        limits=run_limits(Config.load(env={}, root=REPO_ROOT, preset="ci"), timeout_s=20.0))
    assert os.stat(target).st_uid == 0 and not (target / "owned").exists()


@pytest.fixture
def fake_submission(monkeypatch, tmp_path):
    """The submission 'build' stages for real and hands back a fake binary (fake_program.py)."""
    def install(**behaviour) -> Path:
        binary = write_fake(tmp_path / "fake-build" / "toy_submission", name="toy_submission", **behaviour)

        def fake_build(config, spec, folder, work):
            return build.SubmissionBuild(binary, build.stage_submission(spec, folder, work / "src"), "")
        monkeypatch.setattr(build, "build_submission", fake_build)
        return binary
    return install


@pytest.fixture
def root_secret(tmp_path) -> tuple[Path, str]:
    """A folder only root may read (solutions, /root/.ssh, another hand-in), holding a secret."""
    token = f"secret-{uuid.uuid4().hex}"
    folder = tmp_path / f"root-only-{uuid.uuid4().hex[:12]}"
    folder.mkdir(mode=0o700)
    folder.chmod(0o700)
    (folder / "secret.txt").write_text(token + "\n")
    return folder, token


def copies_of(token: str, top: Path, skip: Path) -> list[Path]:
    """Every file below `top` (outside `skip`) named secret.txt or holding `token`."""
    found = []
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if Path(folder) / d != skip]
        for name in files:
            path = Path(folder) / name
            if name == "secret.txt":
                found.append(path)
            elif not path.is_symlink() and path.stat().st_size < (1 << 20):
                if token in path.read_text(errors="replace"):
                    found.append(path)
    return found


@needs_sandbox_user
def test_a_dump_linked_to_a_root_only_folder_is_refused_and_copied_nowhere(
        toy_config, toy_submission, fake_submission, shared_tmp, root_secret, tmp_path):
    """Proves: a program whose dump is a link to a root-only folder gets every case failed
    with a sentence saying why, and nothing of that folder is copied, staged or bound anywhere
    (the grader once copied it into the shared temporary folder, readable by all)."""
    secret, token = root_secret
    fake_submission(dump_link=str(secret))
    result = grade.grade(toy_config, "toy", toy_submission, seed=12345)
    assert copies_of(token, tmp_path, skip=secret) == []  # shared_tmp and the work folder included
    assert result["status"] == "graded" and result["score"]["correctness"] == 0
    for case in result["cases"]:
        assert case["status"] == "failed" and "dump is a symbolic link" in case["message"], case


@needs_sandbox_user
def test_a_link_inside_a_dump_is_refused_in_words(toy_config, toy_submission, fake_submission, root_secret,
                                                    tmp_path):
    """Proves: a link at an inner component of a dump is refused too: every case fails and
    says which entry is a link, and nothing behind it is read."""
    secret, token = root_secret
    fake_submission(dump_inner_link=str(secret))
    result = grade.grade(toy_config, "toy", toy_submission, seed=12345)
    assert result["status"] == "graded" and result["score"]["correctness"] == 0
    for case in result["cases"]:
        assert case["status"] == "failed" and "dump/nested is a symbolic link" in case["message"], case
    assert copies_of(token, tmp_path, skip=secret) == []


# --------------------------------------------------------------------------- staged copies

def _old_staged_place(tool: Path, tmp: Path) -> Path:
    """Where the grader once staged `tool`, a name anyone could compute."""
    real = Path(os.path.realpath(tool))
    stamp = f"{real}\0{os.stat(real).st_mtime_ns}".encode("utf-8", "surrogateescape")
    return tmp / "cudalab-staged" / hashlib.sha256(stamp).hexdigest()[:16]


@needs_other_user
@needs_sandbox_user
def test_a_staged_copy_another_user_made_first_is_never_used(squatted, tmp_path):
    """Proves: a file shown to the sandbox through a copy is copied into a folder of the
    grader's own, so a forged copy another user put first where the copy would go is never
    what the program reads."""
    tool = private_file(tmp_path)
    place = _old_staged_place(tool, squatted)
    made = as_other_user(["/bin/sh", "-c", 'mkdir -p "$1" && echo forged > "$1/$2"', "sh", str(place), tool.name])
    assert made.returncode == 0, made.stderr
    assert cat_in_sandbox(tool, tmp_path) == "genuine\n"


_RACER = r"""
import os, sys, time
tmp, name, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
staged = os.path.join(tmp, "cudalab-staged")
os.makedirs(staged, mode=0o777, exist_ok=True)
print("ready", flush=True)
replaced = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    # Any copy it can find anywhere in the temporary folder is replaced by a forged one ...
    for folder, dirs, files in os.walk(tmp):
        if name in files:
            try:
                forged = os.path.join(folder, ".forged")
                with open(forged, "w") as f:
                    f.write("forged\n")
                os.rename(forged, os.path.join(folder, name))
                replaced += 1
            except OSError:
                pass
    # ... and a copy folder of the grader's in a folder it owns is swapped for its own.
    try:
        for entry in os.listdir(staged):
            path = os.path.join(staged, entry)
            if entry.startswith(".") or os.lstat(path).st_uid == os.getuid():
                continue
            try:
                os.rename(path, path + ".gone-%d" % replaced)
                os.mkdir(path)
                with open(os.path.join(path, name), "w") as f:
                    f.write("forged\n")
                replaced += 1
            except OSError:
                pass
    except OSError:
        pass
    time.sleep(0.001)
print("replaced", replaced, flush=True)
"""


@needs_other_user
@needs_sandbox_user
def test_a_staged_copy_raced_by_another_user_is_never_used(shared_tmp, tmp_path):
    """Proves: while another user keeps replacing every staged copy it can find (between the
    copy and its use), every run still reads the genuine file."""
    tool = private_file(tmp_path)
    racer = other_user_python(_RACER, str(shared_tmp), tool.name, "4", background=True)
    try:
        assert racer.stdout.readline().strip() == "ready"
        seen = []
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            seen.append(cat_in_sandbox(tool, tmp_path))
    finally:
        racer.wait(timeout=30)
    assert len(seen) >= 3 and set(seen) == {"genuine\n"}, seen


@needs_sandbox_user
def test_a_staged_copy_tampered_after_copying_is_detected(shared_tmp, tmp_path):
    """Proves: a staged copy is checked against the sha256 of what was copied before every
    use: one changed after copying is refused in a sentence, never run."""
    tool = private_file(tmp_path)
    assert cat_in_sandbox(tool, tmp_path) == "genuine\n"
    copies = files_named(shared_tmp, tool.name)
    assert len(copies) == 1, copies
    copies[0].write_text("forged\n")
    with pytest.raises(GraderError) as refused:
        cat_in_sandbox(tool, tmp_path)
    assert "no longer matches" in str(refused.value) and str(tool) in str(refused.value)
