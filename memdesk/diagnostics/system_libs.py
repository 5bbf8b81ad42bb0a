"""The system libraries Qt's xcb platform plugin needs, asked of the plugin itself (ldd).

A fixed list goes stale with every Qt release and distribution; ``ldd libqxcb.so`` names exactly
what this machine lacks. ``debian_package`` maps a library's soname to its Debian/Ubuntu package
by Debian's naming policy (libfoo.so.N -> libfooN, libfoo1.so.N -> libfoo1-N, lowercase,
underscores as hyphens) plus the few libraries packaged under another name. ``scripts/system-deps``
(``make system-deps``) and ``memdesk doctor`` both use it.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

#: Libraries whose Debian package does not follow the soname rule.
EXCEPTIONS = {
    "libglib-2.0.so.0": "libglib2.0-0",
    "libgthread-2.0.so.0": "libglib2.0-0",
    "libgobject-2.0.so.0": "libglib2.0-0",
    "libgio-2.0.so.0": "libglib2.0-0",
    "libgmodule-2.0.so.0": "libglib2.0-0",
    "libGLdispatch.so.0": "libglvnd0",
    "libbrotlidec.so.1": "libbrotli1",
    "libbrotlicommon.so.1": "libbrotli1",
    "libz.so.1": "zlib1g",
    "libm.so.6": "libc6",
    "libpthread.so.0": "libc6",
    "libdl.so.2": "libc6",
    "librt.so.1": "libc6",
}

_SONAME = re.compile(r"^(?P<base>lib[^/]+?)\.so\.(?P<major>\d+)")


def debian_package(soname: str) -> str:
    if soname in EXCEPTIONS:
        return EXCEPTIONS[soname]
    match = _SONAME.match(soname)
    if not match:
        raise ValueError(f"not a versioned shared library name: {soname}")
    base = match["base"].lower().replace("_", "-")
    return f"{base}-{match['major']}" if base[-1].isdigit() else f"{base}{match['major']}"


def xcb_plugin() -> Path | None:
    """PySide6's xcb platform plugin, located without importing Qt."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or spec.origin is None:
        return None
    plugin = Path(spec.origin).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    return plugin if plugin.is_file() else None


def missing_libraries(plugin: Path | None = None) -> list[str]:
    """Sonames the plugin (or what it links) needs but this machine lacks; [] when ldd is absent."""
    plugin = plugin or xcb_plugin()
    if plugin is None or shutil.which("ldd") is None:
        return []
    output = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, check=False).stdout
    return sorted({line.split()[0] for line in output.splitlines() if "not found" in line})


def missing_packages(plugin: Path | None = None) -> list[str]:
    return sorted({debian_package(soname) for soname in missing_libraries(plugin)})
