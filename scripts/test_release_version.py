#!/usr/bin/env python3
"""Self-test of scripts/release_version.py on copies of the manifests: the
real ones agree; one version changed, a CHANGELOG without the version's
section, or a version that is not X.Y.Z is refused, naming the problem;
`set` writes one version everywhere (lock files included)."""

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FILES = ["Cargo.toml", "Cargo.lock", "js/package.json", "js/package-lock.json",
         "hosts/python/pyproject.toml", "hosts/rust/Cargo.toml", "hosts/rust/Cargo.lock", "CHANGELOG.md"]
sys.path.insert(0, str(ROOT / "scripts"))
import release_version as rv  # noqa: E402


def copy() -> Path:
    d = Path(tempfile.mkdtemp(prefix="engram-version-"))
    for f in FILES:
        (d / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / f, d / f)
    return d


def refused(root: Path, needle: str) -> None:
    try:
        rv.check(root)
    except SystemExit as e:
        assert needle in str(e), f"refused, but without {needle!r}: {e}"
        return
    raise AssertionError(f"accepted, expected a refusal naming {needle!r}")


version = rv.check(ROOT)
d = copy()
try:
    p = d / "hosts/python/pyproject.toml"
    p.write_text(p.read_text().replace(f'version = "{version}"', 'version = "9.9.9"', 1))
    refused(d, "hosts/python/pyproject.toml: 9.9.9")
    shutil.copy(ROOT / "hosts/python/pyproject.toml", p)
    (d / "CHANGELOG.md").write_text("# Changelog\n")
    refused(d, f"no section `## {version}`")
    shutil.copy(ROOT / "CHANGELOG.md", d / "CHANGELOG.md")
    rv.ROOT = d
    rv.set_version(d, "1.2.3")
    for f in ["Cargo.lock", "hosts/rust/Cargo.lock", "js/package-lock.json"]:
        assert "1.2.3" in (d / f).read_text(), f"set left {f} behind"
    refused(d, "no section `## 1.2.3`")
    (d / "CHANGELOG.md").write_text("# Changelog\n\n## 1.2.3\n")
    assert rv.check(d) == "1.2.3"
    try:
        rv.set_version(d, "1.2")
        raise AssertionError("1.2 accepted")
    except SystemExit as e:
        assert "not a semantic version" in str(e)
finally:
    shutil.rmtree(d)
print(f"release_version: {version} everywhere; 5 refusals and a set checked")
