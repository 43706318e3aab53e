"""`harness.lazy_names`: the packages whose public names load on first use still offer every
name they list, each the very object of the submodule that defines it."""

from __future__ import annotations

import importlib
import sys
import types

import pytest

from harness.lazy_names import lazy_names

LAZY_PACKAGES = ("harness.runtime", "harness.tools", "harness.agent.roster")


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_listed_name_of_a_lazy_package_resolves(package: str) -> None:
    # Given a package whose names load on first use
    module = importlib.import_module(package)
    # When each name of its `__all__` is asked for
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    # Then every one is there
    assert missing == [], f"{package} lists names it cannot give: {missing}"


def test_a_lazy_name_is_the_object_of_its_submodule_and_stays() -> None:
    # Given the runtime package and the module that defines `Runtime`
    import harness.runtime
    from harness.runtime.instance import Runtime

    # When `Runtime` is asked of the package
    found = harness.runtime.Runtime
    # Then it is the same class, kept on the package as a plain attribute
    assert found is Runtime
    assert vars(harness.runtime)["Runtime"] is Runtime


def test_an_unknown_name_raises_attribute_error_and_imports_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a package with one lazy name, from a submodule not yet imported
    package = types.ModuleType("lazy_probe")
    package.__getattr__ = lazy_names("lazy_probe", {"dumps": "codec"})  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "lazy_probe", package)
    # When a name it does not list is asked for
    with pytest.raises(AttributeError, match="no attribute 'loads'"):
        package.loads  # noqa: B018
    # Then no submodule was imported for it
    assert "lazy_probe.codec" not in sys.modules
