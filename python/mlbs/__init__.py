"""mlbs: MultiLayered Buffer Storage for out-of-core Python codes.

Snapshots written from numpy arrays are cached and prefetched across storage
tiers (DRAM -> node-local NVMe / burst buffer -> parallel file system) by
helper threads that overlap the I/O with your computation. See docs/python.md.

    import mlbs, numpy as np
    cfg = mlbs.Config(tiers="mem:256MiB,dir:/nvme/run", schedule="lifo")
    with mlbs.Runtime(cfg) as rt:
        s = rt.store("snap", shape=(nx, ny), dtype=np.float32)
        s.write(7, a)
        b = s.read(7)
"""

from . import _mlbs, errors
from ._mlbs import Config, Reader, Runtime, Store, Tier, __version__
from .errors import (
    CapacityError,
    ConfigError,
    CorruptionError,
    DeviceFullError,
    DuplicateIdError,
    Error,
    InvalidArgumentError,
    IoError,
    MpiError,
    ShutdownError,
    SizeMismatchError,
    StoreBusyError,
    TierError,
    UnknownIdError,
)

_mlbs._register_errors(errors)

__all__ = [
    "CapacityError",
    "Config",
    "ConfigError",
    "CorruptionError",
    "DeviceFullError",
    "DuplicateIdError",
    "Error",
    "InvalidArgumentError",
    "IoError",
    "MpiError",
    "Reader",
    "Runtime",
    "ShutdownError",
    "SizeMismatchError",
    "Store",
    "StoreBusyError",
    "Tier",
    "TierError",
    "UnknownIdError",
    "__version__",
]
