"""The public op functions, by family. Each module lists its public names in ``__all__``."""

import importlib

__all__: list[str] = []
for _family in ("math", "array", "nn", "random"):
    try:
        _mod = importlib.import_module(f"{__name__}.{_family}")
    except ModuleNotFoundError as _e:  # a family not written yet
        if _e.name != f"{__name__}.{_family}":
            raise
        continue
    if _family in ("math", "array"):
        for _name in _mod.__all__:
            globals()[_name] = getattr(_mod, _name)
        __all__ += list(_mod.__all__)
