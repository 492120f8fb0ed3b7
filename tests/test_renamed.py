"""Old module paths of 0.1.0 load as modules that forward to where the names live now."""

from __future__ import annotations

import importlib

import pytest

from marlhub._renamed import RENAMED_MODULES


@pytest.mark.parametrize("old", sorted(RENAMED_MODULES))
def test_every_renamed_module_imports_and_forwards(old: str) -> None:
    for target in RENAMED_MODULES[old]:
        try:
            importlib.import_module(target)
        except ImportError as exc:
            if type(exc).__name__ == "MissingDependencyError":
                pytest.skip(str(exc))
            raise
    module = importlib.import_module(old)
    new = importlib.import_module(RENAMED_MODULES[old][0])
    public = [n for n in getattr(new, "__all__", ()) if not n.startswith("_")]
    assert public, new
    for name in public:
        assert getattr(module, name) is getattr(new, name)
    assert set(public) <= set(dir(module))


def test_an_unknown_name_says_where_the_module_went() -> None:
    module = importlib.import_module("marlhub.adapters.groups")
    with pytest.raises(AttributeError, match="moved to marlhub.wrappers.groups"):
        module.no_such_name  # noqa: B018


def test_old_submodules_of_an_old_package_load() -> None:
    from marlhub.registry.families.gymnasium import GymnasiumFamily as Old

    from marlhub.adapters.gymnasium.family import GymnasiumFamily

    assert Old is GymnasiumFamily


def test_modules_that_exist_are_never_shadowed() -> None:
    import marlhub.adapters.pettingzoo as new

    assert importlib.import_module("marlhub.adapters.pettingzoo") is new
    assert not any(old in new.__name__ for old in RENAMED_MODULES)
