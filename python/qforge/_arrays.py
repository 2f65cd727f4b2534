"""What qforge accepts as an array: numpy arrays, and any DLPack producer in host memory.

A DLPack producer (an object with ``__dlpack__``: a PyTorch CPU tensor, a JAX or CuPy array...)
is viewed as a numpy array through ``numpy.from_dlpack``, without a copy. qforge's C++ side then
reads the memory in place, so the array must already be C-contiguous and of the element type
the operation reads; anything else is refused with a TypeError or ValueError rather than copied
behind the caller's back.
"""

import numpy as np

_DLPACK_CPU = 1  # DLDeviceType kDLCPU
_DLPACK_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal",
                   10: "rocm", 13: "cuda_managed", 14: "oneapi"}


def as_array(x, what="x"):
    """``x`` as a numpy array without copying; TypeError/ValueError for what cannot be."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__"):
        device = x.__dlpack_device__() if hasattr(x, "__dlpack_device__") else (_DLPACK_CPU, 0)
        if int(device[0]) != _DLPACK_CPU:
            name = _DLPACK_DEVICES.get(int(device[0]), f"device type {int(device[0])}")
            raise ValueError(f"{what} lives on {name}:{int(device[1])}; qforge's numpy API takes "
                             "host memory (copy it to the CPU first)")
        return np.from_dlpack(x)
    raise TypeError(f"{what} is a {type(x).__name__}; expected a numpy array or an object with "
                    "__dlpack__ (a DLPack producer)")
