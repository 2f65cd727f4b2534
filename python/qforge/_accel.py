"""The process-wide default accelerator that qforge.quantize() and friends use."""

import threading

from . import _qforge

_lock = threading.Lock()
_default = None


def default_accelerator():
    """A qforge.Accelerator over every loaded plugin with options from the environment
    (QFORGE_ONLINE_TUNING, QFORGE_TUNING_CACHE, ...), made on first use."""
    global _default
    with _lock:
        if _default is None:
            _default = _qforge.Accelerator()
        return _default


def set_default_accelerator(accelerator):
    """Makes ``accelerator`` the one qforge.quantize() and friends use (None: make anew)."""
    global _default
    if accelerator is not None and not isinstance(accelerator, _qforge.Accelerator):
        raise TypeError(f"accelerator is a {type(accelerator).__name__}; expected "
                        "qforge.Accelerator")
    with _lock:
        _default = accelerator
