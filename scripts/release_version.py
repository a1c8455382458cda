#!/usr/bin/env python3
"""engram's one version, in every manifest that states it.

    release_version.py check      prints the version; fails (naming each
                                  file and what it says) unless every
                                  manifest states the same one and
                                  CHANGELOG.md has a section for it
    release_version.py set X.Y.Z  writes X.Y.Z into every manifest and lock
                                  file below (the CHANGELOG section is
                                  yours to write)

The manifests: Cargo.toml (the engram crate), js/package.json (the npm
package), hosts/python/pyproject.toml (engram-host), hosts/rust/Cargo.toml
(engram-wasmtime-host); the lock files that repeat them: Cargo.lock,
hosts/rust/Cargo.lock, js/package-lock.json.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEMVER = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$")
# The first `version = "..."` of a TOML file's [package] / [project] table.
TOML_VERSION = re.compile(r'(?ms)^\[(?:package|project)\]\n(?:(?!^\[).)*?^version = "([^"]+)"')


def toml_version(path: Path) -> str | None:
    m = TOML_VERSION.search(path.read_text())
    return m.group(1) if m else None


def stated(root: Path) -> dict[str, str | None]:
    return {
        "Cargo.toml": toml_version(root / "Cargo.toml"),
        "js/package.json": json.loads((root / "js/package.json").read_text()).get("version"),
        "hosts/python/pyproject.toml": toml_version(root / "hosts/python/pyproject.toml"),
        "hosts/rust/Cargo.toml": toml_version(root / "hosts/rust/Cargo.toml"),
    }


def changelog_has(root: Path, version: str) -> bool:
    path = root / "CHANGELOG.md"
    if not path.exists():
        return False
    return re.search(rf"(?m)^## \[?{re.escape(version)}\]?(?:\s|$)", path.read_text()) is not None


def check(root: Path) -> str:
    versions = stated(root)
    distinct = set(versions.values())
    if len(distinct) != 1 or None in distinct:
        lines = "\n".join(f"  {file}: {v or '(no version)'}" for file, v in versions.items())
        raise SystemExit(f"release: the manifests state different versions:\n{lines}\n"
                         "  (scripts/release_version.py set X.Y.Z writes one into all)")
    (version,) = distinct
    assert version is not None
    if not SEMVER.match(version):
        raise SystemExit(f"release: {version!r} is not a semantic version (X.Y.Z)")
    if not changelog_has(root, version):
        raise SystemExit(f"release: CHANGELOG.md has no section `## {version}`")
    return version


def set_toml(path: Path, version: str) -> None:
    text = path.read_text()
    m = TOML_VERSION.search(text)
    if not m:
        raise SystemExit(f"release: no [package] version in {path}")
    path.write_text(text[: m.start(1)] + version + text[m.end(1):])


def set_lock(path: Path, package: str, version: str) -> None:
    text = path.read_text()
    pattern = re.compile(rf'(\[\[package\]\]\nname = "{re.escape(package)}"\nversion = ")[^"]+(")')
    text, n = pattern.subn(rf"\g<1>{version}\g<2>", text)
    if n != 1:
        raise SystemExit(f"release: {path} lists {package} {n} times, not once")
    path.write_text(text)


def set_version(root: Path, version: str) -> None:
    if not SEMVER.match(version):
        raise SystemExit(f"release: {version!r} is not a semantic version (X.Y.Z)")
    set_toml(root / "Cargo.toml", version)
    set_toml(root / "hosts/python/pyproject.toml", version)
    set_toml(root / "hosts/rust/Cargo.toml", version)
    set_lock(root / "Cargo.lock", "engram", version)
    set_lock(root / "hosts/rust/Cargo.lock", "engram-wasmtime-host", version)
    lock = root / "hosts/rust/Cargo.lock"
    if re.search(r'(?m)^name = "engram"$', lock.read_text()):
        set_lock(lock, "engram", version)
    for name in ("js/package.json", "js/package-lock.json"):
        path = root / name
        data = json.loads(path.read_text())
        data["version"] = version
        if name.endswith("lock.json"):
            data.get("packages", {}).get("", {})["version"] = version
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def main(argv: list[str]) -> None:
    root = Path(argv[2]) if len(argv) > 2 and argv[1] == "check" else ROOT
    if len(argv) >= 2 and argv[1] == "check":
        print(check(root))
    elif len(argv) == 3 and argv[1] == "set":
        set_version(ROOT, argv[2])
        print(f"release: version {argv[2]} written; add its section to CHANGELOG.md")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
