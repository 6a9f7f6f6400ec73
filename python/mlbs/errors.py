"""mlbs errors: one class per C++ error class (include/mlbs/errors.hpp), same names.

Every error the library raises is an :class:`Error`; its attributes say where it happened::

    try:
        s.read(7)
    except mlbs.UnknownIdError as e:
        print(e.store, e.id, e.errno)

Bad arrays (wrong dtype or shape, a read-only ``out=``) are ``TypeError``/``ValueError`` instead, raised
before anything is written or consumed.
"""

from __future__ import annotations


class Error(Exception):
    """Base of every mlbs error."""

    errno: int
    """The positive errno value of the failure (``errno.ENOENT``, ...)."""
    message: str
    """The message without its context."""
    store: str | None
    """The store it concerns, if any."""
    id: int | None
    """The record id it concerns, if any."""
    tier: str | None
    """The tier it concerns, e.g. ``"tier 1 (directory /nvme/run)"``, if any."""


class ConfigError(Error, ValueError):
    """A configuration value is invalid."""

    field: str
    """The configuration field, e.g. ``"tiers[1].capacity"``."""
    source: str | None
    """The file or environment variable it came from."""
    line: int | None
    """Its line in that file."""


class InvalidArgumentError(Error, ValueError):
    """An argument is malformed."""


class UnknownIdError(Error):
    """The store holds no record of that id (or a reader cannot read it yet)."""


class DuplicateIdError(Error):
    """The store already holds a record of that id: erase it first."""


class SizeMismatchError(Error):
    """A record's size does not fit the store's shape and dtype."""


class TierError(Error):
    """A tier cannot be used: path missing, not a directory, not writable."""


class CapacityError(Error):
    """No tier quota can hold the record, now or after the schedule frees space."""


class DeviceFullError(Error):
    """The device under a tier is full (ENOSPC/EDQUOT)."""


class IoError(Error):
    """An I/O failure, with its errno."""


class CorruptionError(Error):
    """Bytes read back do not match their checksum."""


class StoreBusyError(Error):
    """A persistent store is open in another runtime or process."""


class ShutdownError(Error):
    """The runtime, store or reader is closed, or the helper engine failed."""


class MpiError(Error):
    """An MPI call failed."""
