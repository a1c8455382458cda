"""Build step of the engram-host package (the metadata is in pyproject.toml).

The wheel bundles the engram WASI component: ``build_py`` copies it into the
built package as ``engram_host/engram.wasm``, from ``$ENGRAM_COMPONENT`` when
set, else from the repository's release build
(``target/wasm32-wasip2/release/engram.wasm``, made by
``scripts/build-component``). With neither, the build fails and says so: a
package without its component could not run.
"""

import os
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def component() -> Path:
    env = os.environ.get("ENGRAM_COMPONENT")
    if env:
        return Path(env)
    return HERE.parents[1] / "target" / "wasm32-wasip2" / "release" / "engram.wasm"


class BuildWithComponent(build_py):
    def run(self) -> None:
        super().run()
        src = component()
        if not src.is_file():
            raise SystemExit(
                f"engram-host: no component at {src}: run scripts/build-component in the "
                "repository first, or set ENGRAM_COMPONENT to an engram.wasm"
            )
        dst = Path(self.build_lib) / "engram_host" / "engram.wasm"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)


setup(cmdclass={"build_py": BuildWithComponent})
