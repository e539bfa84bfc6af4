"""What the sandbox child's confinement applies (:class:`ConfinementPolicy`) and how it reports a
layer it could not apply (:class:`ConfinementError`).

Part of the child's confinement (:mod:`confine` runs the layers); the bootstrap loads it by path
under ``python -I -S`` before any thread exists. Standard library only and no imports at all: the
policy is a plain value object, so every layer module can depend on it without pulling in anything.
"""

from __future__ import annotations

__all__ = ["ConfinementError", "ConfinementPolicy"]


class ConfinementError(Exception):
    """A layer that was required could not be applied (the host decides whether to refuse the run).

    ``report`` is the enforcement report as far as confinement got (layers actually applied).
    """

    def __init__(self, message: str, report: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.report = report


_FIELDS = (
    "cpu_seconds",
    "memory_bytes",
    "max_open_files",
    "max_file_bytes",
    "max_processes",
    "read_paths",
    "read_write_paths",
    "drop_to",
    "landlock",
    "seccomp",
    "private_task_count",
)


def _check_int(name: str, value: object, minimum: int) -> int:
    if type(value) is not int or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, not {value!r}")
    return value


def _check_paths(name: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, (tuple, list)):
        raise ValueError(f"{name} must be a tuple of absolute paths, not {type(value).__name__}")
    for item in value:
        if type(item) is not str or not item.startswith("/") or "\0" in item:
            raise ValueError(f"{name} entries must be absolute paths, not {item!r}")
    return tuple(value)


class ConfinementPolicy:
    """What :func:`confine` applies. A frozen value object with dataclass semantics (keyword or
    positional construction, ``==``, ``hash``, ``repr``, immutability), written by hand because
    importing :mod:`dataclasses` costs the child ~25 ms (it pulls in ``inspect`` and ``re``).

    ``as_dict`` / ``from_dict`` round-trip it through JSON (for the host's boot frame).
    """

    __slots__ = _FIELDS

    cpu_seconds: int
    """RLIMIT_CPU soft limit; the hard limit is one second more (SIGXCPU, then SIGKILL)."""
    memory_bytes: int
    """RLIMIT_AS."""
    max_open_files: int
    """RLIMIT_NOFILE."""
    max_file_bytes: int
    """RLIMIT_FSIZE (one file; the host still needs a disk quota for many files)."""
    max_processes: int | None
    """RLIMIT_NPROC, applied only when the child will not be root. The kernel counts every task
    (threads included) of the real uid, system-wide; ``None`` leaves it unset."""
    read_paths: tuple[str, ...]
    """Extra Landlock read(+execute) grants on top of :func:`default_read_paths`."""
    read_write_paths: tuple[str, ...]
    """Landlock read-write grants (the private work dir)."""
    drop_to: tuple[int, int] | None
    """(uid, gid) to switch to when real root in the initial user namespace; ``None`` keeps root."""
    landlock: bool
    seccomp: bool
    private_task_count: bool
    """Count RLIMIT_NPROC in a user namespace of the child's own (:func:`private_task_count`), so
    that concurrent runs of one uid cannot starve each other. The host asks for it where the child
    would otherwise share its count (the landlock backend); bwrap already makes one per run."""

    def __init__(  # noqa: PLR0917 (positional construction, as with the dataclass it mirrors)
        self,
        cpu_seconds: int,
        memory_bytes: int,
        max_open_files: int = 64,
        max_file_bytes: int = 64 << 20,
        max_processes: int | None = 64,
        read_paths: tuple[str, ...] = (),
        read_write_paths: tuple[str, ...] = (),
        drop_to: tuple[int, int] | None = (65534, 65534),
        landlock: bool = True,
        seccomp: bool = True,
        private_task_count: bool = False,
    ) -> None:
        values: dict[str, object] = {
            "cpu_seconds": _check_int("cpu_seconds", cpu_seconds, 1),
            "memory_bytes": _check_int("memory_bytes", memory_bytes, 1),
            "max_open_files": _check_int("max_open_files", max_open_files, 4),
            "max_file_bytes": _check_int("max_file_bytes", max_file_bytes, 0),
            "max_processes": None if max_processes is None else _check_int("max_processes", max_processes, 1),
            "read_paths": _check_paths("read_paths", read_paths),
            "read_write_paths": _check_paths("read_write_paths", read_write_paths),
            "landlock": landlock,
            "seccomp": seccomp,
            "private_task_count": private_task_count,
        }
        if drop_to is not None:
            if not isinstance(drop_to, (tuple, list)) or len(drop_to) != 2:
                raise ValueError(f"drop_to must be (uid, gid) or None, not {drop_to!r}")
            drop_to = (_check_int("drop_to uid", drop_to[0], 1), _check_int("drop_to gid", drop_to[1], 1))
        values["drop_to"] = drop_to
        if type(landlock) is not bool or type(seccomp) is not bool or type(private_task_count) is not bool:
            raise ValueError("landlock, seccomp and private_task_count must be booleans")
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: ConfinementPolicy is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: ConfinementPolicy is frozen")

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in _FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, ConfinementPolicy)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in _FIELDS)
        return f"ConfinementPolicy({inner})"

    def __reduce__(self) -> tuple[object, ...]:
        return (ConfinementPolicy, self._values())

    def replace(self, **changes: object) -> ConfinementPolicy:
        """A copy with some fields changed (like ``dataclasses.replace``)."""
        unknown = set(changes) - set(_FIELDS)
        if unknown:
            raise TypeError(f"unknown ConfinementPolicy field(s): {sorted(unknown)}")
        merged = {name: changes.get(name, getattr(self, name)) for name in _FIELDS}
        return ConfinementPolicy(**merged)  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, object]:
        """JSON-ready fields (tuples become lists)."""
        out: dict[str, object] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_dict(cls, data: object) -> ConfinementPolicy:
        """Rebuild from :meth:`as_dict` output; unknown or mistyped fields raise ``ValueError``."""
        if type(data) is not dict:
            raise ValueError("policy must be a JSON object")
        unknown = set(data) - set(_FIELDS)
        if unknown:
            raise ValueError(f"unknown policy field(s): {sorted(unknown)}")
        if "cpu_seconds" not in data or "memory_bytes" not in data:
            raise ValueError("policy needs cpu_seconds and memory_bytes")
        return cls(**data)
