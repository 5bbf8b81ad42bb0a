"""The soname -> Debian package rule that `make system-deps` and the doctor use to name what
Qt's xcb plugin lacks, checked against dpkg's own answer for every library the plugin links."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from memdesk.diagnostics.system_libs import debian_package, missing_packages, xcb_plugin


@pytest.mark.parametrize(
    ("soname", "package"),
    [
        ("libxcb-icccm.so.4", "libxcb-icccm4"),  # the two the issue found missing
        ("libxcb-keysyms.so.1", "libxcb-keysyms1"),
        ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0"),  # a name ending in a digit takes a hyphen
        ("libX11-xcb.so.1", "libx11-xcb1"),  # lowercase
        ("libgcc_s.so.1", "libgcc-s1"),  # underscores become hyphens
        ("libglib-2.0.so.0", "libglib2.0-0"),  # an exception to the rule
    ],
)
def test_debian_names(soname, package):
    assert debian_package(soname) == package


def test_an_unversioned_name_is_refused():
    with pytest.raises(ValueError):
        debian_package("libfoo.so")


def _dpkg_owner(path: Path) -> str | None:
    for candidate in {
        str(path),
        str(path.resolve()),
        str(path).replace("/usr/lib/", "/lib/"),
        str(path.resolve()).replace("/usr/lib/", "/lib/"),
    }:
        found = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True, check=False)
        if found.returncode == 0:
            return found.stdout.split(":")[0].strip()
    return None


@pytest.mark.processes
@pytest.mark.skipif(shutil.which("dpkg") is None or shutil.which("ldd") is None, reason="needs a Debian-family system")
def test_the_rule_agrees_with_dpkg_for_every_system_library_qts_xcb_plugin_links():
    plugin = xcb_plugin()
    assert plugin is not None
    output = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True, check=True).stdout
    compared = 0
    for line in output.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] != "=>" or not parts[2].startswith("/") or "PySide6" in parts[2]:
            continue  # vdso, the loader, and Qt's own bundled libraries
        owner = _dpkg_owner(Path(parts[2]))
        if owner is None:
            continue
        assert debian_package(parts[0]) == owner, parts[0]
        compared += 1
    assert compared >= 20  # the xcb family, X11, GL, fontconfig...


@pytest.mark.processes
def test_nothing_is_missing_after_make_system_deps():
    if shutil.which("ldd") is None or xcb_plugin() is None:
        pytest.skip("no ldd or no xcb plugin on this system")
    assert missing_packages() == []
