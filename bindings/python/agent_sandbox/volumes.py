"""Volumes: persistent filesystems sandboxes mount at create
(``Sandbox.create(volume_mounts={"/mnt/data": "data"})``), made, listed and
deleted with the API key, and their files read and written without a
sandbox with the volume's own token (the C core's ``asb_volume*``,
docs/volumes.md). The names are E2B's ``Volume`` class's::

    vol = VolumeSync.create("data", size_mb=64)
    vol.write_file("/hello.txt", "hi", uid=1000, gid=1000)
    with SandboxSync.create(volume_mounts={"/mnt/data": vol}) as sb:
        sb.commands.run("cat /mnt/data/hello.txt")
    vol.read_file("/hello.txt")           # "hi"
    VolumeSync.list()                     # [VolumeInfo(...)]
    vol.list("/", depth=2)                # [VolumeEntryStat(...)]
    VolumeSync.destroy(vol.volume_id)     # True (False if there was none)

``Volume`` (async, every method awaited) and ``VolumeSync`` have the same
methods. ``get_info`` and ``list`` are E2B's dual methods: on the class
they take a volume id (``Volume.get_info(volume_id)``, ``Volume.list()``),
on a volume a path (``vol.get_info(path)``, ``vol.list(path)``).

``VolumeSync.from_token(volume_id, name, token)`` makes a volume object
from its id and token with no API call (E2B's ``Volume(volume_id, name,
token)``): its file calls need only the token.

Errors: :class:`VolumeNotFoundException` for an unknown volume,
:class:`VolumePathNotFoundException` for an unknown path (both
:class:`NotFoundException`, as E2B's),
:class:`InvalidArgumentException` for a bad name, size, path or owner,
:class:`SandboxException` (code ``ASB_EEXISTS``) for a taken name, an
existing file without ``force`` or a delete while sandboxes mount the
volume, :class:`NotEnoughSpaceException` when it is full.
"""

from __future__ import annotations

import datetime as _dt
import functools
from dataclasses import dataclass
from enum import Enum
from typing import IO, Any, Callable, List, Optional, Union

from . import _native as N
from . import lowlevel as ll
from .exceptions import VolumeNotFoundException, VolumePathNotFoundException

__all__ = ["Volume", "VolumeSync", "VolumeInfo", "VolumeAndToken", "VolumeEntryStat"]


@dataclass
class VolumeInfo:
    """A volume of ``list()`` (E2B's ``VolumeInfo``; ``size_mb`` is ours)."""

    volume_id: str
    name: str
    size_mb: int = 0


@dataclass
class VolumeAndToken(VolumeInfo):
    """``Volume.get_info(volume_id)``: with the token of its content API."""

    token: str = ""
    domain: Optional[str] = None


class VolumeFileType(str, Enum):
    """What a volume entry is (E2B's ``VolumeFileType``): a ``str`` enum, so
    it also compares equal to ``"file"``, ``"directory"``, ..."""

    DIRECTORY = "directory"
    FILE = "file"
    SYMLINK = "symlink"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return str(self.value)


def _file_type(t: Optional[str]) -> VolumeFileType:
    try:
        return VolumeFileType(t or "unknown")
    except ValueError:
        return VolumeFileType.UNKNOWN


@dataclass
class VolumeEntryStat:
    """What is at a path of a volume (E2B's ``VolumeEntryStat``)."""

    name: str
    type: VolumeFileType
    path: str
    size: int
    mode: int
    uid: int
    gid: int
    atime: _dt.datetime
    mtime: _dt.datetime
    ctime: _dt.datetime
    target: Optional[str] = None


_CHUNK = 64 * 1024


async def _aiter(chunks: Any) -> Any:
    for c in chunks:
        yield c


def _time(t: int) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(t, tz=_dt.timezone.utc)


def _entry(e: Any) -> VolumeEntryStat:
    return VolumeEntryStat(
        name=ll.asb_volume_entry_name(e) or "",
        type=_file_type(ll.asb_volume_entry_type(e)),
        path=ll.asb_volume_entry_path(e) or "",
        size=ll.asb_volume_entry_size(e),
        mode=ll.asb_volume_entry_mode(e),
        uid=ll.asb_volume_entry_uid(e),
        gid=ll.asb_volume_entry_gid(e),
        atime=_time(ll.asb_volume_entry_accessed_at(e)),
        mtime=_time(ll.asb_volume_entry_modified_at(e)),
        ctime=_time(ll.asb_volume_entry_changed_at(e)),
        target=ll.asb_volume_entry_target(e),
    )


def _call(request_timeout: Optional[float]) -> Any:
    o = ll.asb_call_options()
    if request_timeout is not None:
        o.timeout_ms = N.ms(request_timeout)
    o.cancel = N.current_cancel()
    return o


def _write_opts(uid: Optional[int], gid: Optional[int], mode: Optional[int],
                force: Optional[bool], request_timeout: Optional[float]) -> Any:
    o = ll.asb_volume_write_options()
    o.uid = int(uid or 0)
    o.gid = int(gid or 0)
    o.mode = int(mode or 0)
    o.force = 1 if force else 0
    if request_timeout is not None:
        o.timeout_ms = N.ms(request_timeout)
    o.cancel = N.current_cancel()
    return o


def _bytes(data: Union[str, bytes, bytearray, memoryview, IO[Any]]) -> bytes:
    if isinstance(data, str):
        return data.encode()
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    if hasattr(data, "read"):
        return _bytes(data.read())
    raise TypeError("data must be str, bytes or a file-like object")


class _dual:
    """E2B's ``DualMethod``: ``cls_fn`` on the class, ``inst_fn`` on a volume."""

    def __init__(self, cls_fn: Callable[..., Any], inst_fn: Callable[..., Any]) -> None:
        self._cls_fn = cls_fn
        self._inst_fn = inst_fn
        functools.update_wrapper(self, inst_fn)  # type: ignore[arg-type]

    def __get__(self, obj: Any, owner: Any) -> Callable[..., Any]:
        if obj is None:
            return functools.partial(self._cls_fn, owner)
        return functools.partial(self._inst_fn, obj)


class VolumeSync:
    """A volume (from :meth:`create` or :meth:`connect`), holding its token."""

    def __init__(self, handle: Any) -> None:
        self._h = handle

    @staticmethod
    def _conn(conn: Any) -> Any:
        """The connection options (agent_sandbox.compat maps E2B's here)."""
        return conn

    def __repr__(self) -> str:
        return f"Volume(volume_id={self.volume_id!r}, name={self.name!r})"

    @property
    def volume_id(self) -> str:
        return ll.asb_volume_id(self._h)

    @property
    def name(self) -> str:
        return ll.asb_volume_name(self._h)

    @property
    def token(self) -> str:
        return ll.asb_volume_token(self._h)

    @property
    def size_mb(self) -> int:
        return ll.asb_volume_size_mb(self._h)

    # ---- the control plane --------------------------------------------------------

    @classmethod
    def create(cls, name: str, *, size_mb: Optional[int] = None,
               request_timeout: Optional[float] = None, **conn: Any) -> "VolumeSync":
        """Make a volume named ``name`` (1..63 of ``[A-Za-z0-9_-]``) of
        ``size_mb`` MiB (its quota; default 1024)."""
        return cls(N.call(ll.asb_volumes_create, N.client(**cls._conn(conn)), name,
                          int(size_mb or 0), _call(request_timeout)))

    @classmethod
    def connect(cls, volume_id: str, *, request_timeout: Optional[float] = None,
                **conn: Any) -> "VolumeSync":
        """The volume of this id or name."""
        return cls(N.call(ll.asb_volumes_get, N.client(**cls._conn(conn)), volume_id,
                          _call(request_timeout), not_found=VolumeNotFoundException))

    @classmethod
    def from_token(cls, volume_id: str, name: Optional[str], token: str,
                   **conn: Any) -> "VolumeSync":
        """The volume ``volume_id`` from its content token, with no API call
        (E2B's ``Volume(volume_id, name, token)``); a wrong id or token is
        found out by the first file call. The API key is not needed."""
        return cls(N.call(ll.asb_volume_from_token, N.client(**cls._conn(conn)), volume_id,
                          name, token))

    def _class_get_info(cls, volume_id: str, *, request_timeout: Optional[float] = None,
                        **conn: Any) -> VolumeAndToken:
        v = cls.connect(volume_id, request_timeout=request_timeout, **conn)
        return VolumeAndToken(volume_id=v.volume_id, name=v.name, size_mb=v.size_mb,
                              token=v.token)

    def _class_list(cls, *, request_timeout: Optional[float] = None,
                    **conn: Any) -> List[VolumeInfo]:
        lst = N.call(ll.asb_volumes_list, N.client(**cls._conn(conn)), _call(request_timeout))
        out = []
        for i in range(ll.asb_volume_list_count(lst)):
            v = ll.asb_volume_list_get(lst, i)
            out.append(VolumeInfo(volume_id=ll.asb_volume_id(v), name=ll.asb_volume_name(v),
                                  size_mb=ll.asb_volume_size_mb(v)))
        return out

    @classmethod
    def destroy(cls, volume_id: str, *, request_timeout: Optional[float] = None,
                **conn: Any) -> bool:
        """Delete a volume by id or name, with its files: True, or False if
        there was none. Refused while a sandbox mounts it."""
        rc = ll.asb_volumes_delete(N.client(**cls._conn(conn)), volume_id,
                                   _call(request_timeout))
        if rc == ll.ASB_ENOTFOUND:
            return False
        if rc < 0:
            N.fail(rc)
        return True

    # ---- its files ---------------------------------------------------------------

    def read_file(self, path: str, format: str = "text", *,
                  request_timeout: Optional[float] = None) -> Any:
        """The file at ``path``: text (``format="text"``), ``bytes``, or
        ``"stream"``: an iterator of ``bytes`` chunks (the file is read
        whole first, then handed out in chunks; a missing file raises here,
        not on iteration)."""
        if format not in ("text", "bytes", "stream"):
            raise ValueError('format must be "text", "bytes" or "stream"')
        data = N.call(ll.asb_volume_read_file, self._h, path, _call(request_timeout),
                      not_found=VolumePathNotFoundException)
        if format == "stream":
            return iter([data[i:i + _CHUNK] for i in range(0, len(data), _CHUNK)])
        return data if format == "bytes" else data.decode(errors="replace")

    def write_file(self, path: str, data: Union[str, bytes, IO[Any]], *,
                   uid: Optional[int] = None, gid: Optional[int] = None,
                   mode: Optional[int] = None, force: Optional[bool] = None,
                   request_timeout: Optional[float] = None) -> VolumeEntryStat:
        """Write a file (at most 256 MiB), owned by ``uid``/``gid`` as
        sandboxes see them (default root) with ``mode`` (default 0o644);
        an existing file is replaced only with ``force``."""
        return _entry(N.call(ll.asb_volume_write_file, self._h, path, _bytes(data),
                             _write_opts(uid, gid, mode, force, request_timeout),
                             not_found=VolumePathNotFoundException))

    def make_dir(self, path: str, *, uid: Optional[int] = None, gid: Optional[int] = None,
                 mode: Optional[int] = None, force: Optional[bool] = None,
                 request_timeout: Optional[float] = None) -> VolumeEntryStat:
        """Make a directory (mode default 0o755); ``force`` makes missing
        parents and accepts an existing one."""
        return _entry(N.call(ll.asb_volume_make_dir, self._h, path,
                             _write_opts(uid, gid, mode, force, request_timeout),
                             not_found=VolumePathNotFoundException))

    def _instance_get_info(self, path: str, *,
                           request_timeout: Optional[float] = None) -> VolumeEntryStat:
        return _entry(N.call(ll.asb_volume_get_info, self._h, path, _call(request_timeout),
                             not_found=VolumePathNotFoundException))

    def exists(self, path: str, *, request_timeout: Optional[float] = None) -> bool:
        return N.call(ll.asb_volume_exists, self._h, path, _call(request_timeout)) == 1

    def update_metadata(self, path: str, *, uid: Optional[int] = None,
                        gid: Optional[int] = None, mode: Optional[int] = None,
                        request_timeout: Optional[float] = None) -> VolumeEntryStat:
        """Change the owner or mode of what is at ``path`` (a symlink is refused)."""
        def keep(x: Optional[int]) -> int:
            return -1 if x is None else int(x)
        return _entry(N.call(ll.asb_volume_update_metadata, self._h, path, keep(uid), keep(gid),
                             keep(mode), _call(request_timeout),
                             not_found=VolumePathNotFoundException))

    def remove(self, path: str, *, request_timeout: Optional[float] = None) -> None:
        """Remove what is at ``path``, recursively (a symlink is not followed)."""
        N.call(ll.asb_volume_remove, self._h, path, _call(request_timeout),
               not_found=VolumePathNotFoundException)

    def _instance_list(self, path: str = "/", depth: Optional[int] = None, *,
                       request_timeout: Optional[float] = None) -> List[VolumeEntryStat]:
        lst = N.call(ll.asb_volume_entries_list, self._h, path, int(depth or 0),
                     _call(request_timeout), not_found=VolumePathNotFoundException)
        return [_entry(ll.asb_volume_entry_list_get(lst, i))
                for i in range(ll.asb_volume_entry_list_count(lst))]

    get_info = _dual(_class_get_info, _instance_get_info)
    list = _dual(_class_list, _instance_list)


class Volume:
    """The async twin of :class:`VolumeSync`: the same methods, awaited."""

    _sync = VolumeSync

    def __init__(self, sync: VolumeSync) -> None:
        self._s = sync

    def __repr__(self) -> str:
        return repr(self._s)

    volume_id = property(lambda self: self._s.volume_id)
    name = property(lambda self: self._s.name)
    token = property(lambda self: self._s.token)
    size_mb = property(lambda self: self._s.size_mb)

    @classmethod
    async def create(cls, name: str, **kw: Any) -> "Volume":
        return cls(await N.run(cls._sync.create, name, **kw))

    @classmethod
    async def connect(cls, volume_id: str, **kw: Any) -> "Volume":
        return cls(await N.run(cls._sync.connect, volume_id, **kw))

    @classmethod
    def from_token(cls, volume_id: str, name: Optional[str], token: str,
                   **conn: Any) -> "Volume":
        """:meth:`VolumeSync.from_token` (no API call, so not awaited)."""
        return cls(cls._sync.from_token(volume_id, name, token, **conn))

    @classmethod
    async def destroy(cls, volume_id: str, **kw: Any) -> bool:
        return await N.run(cls._sync.destroy, volume_id, **kw)

    async def _class_get_info(cls, volume_id: str, **kw: Any) -> VolumeAndToken:
        return await N.run(cls._sync.get_info, volume_id, **kw)

    async def _class_list(cls, **kw: Any) -> List[VolumeInfo]:
        return await N.run(cls._sync.list, **kw)

    async def read_file(self, path: str, format: str = "text", **kw: Any) -> Any:
        got = await N.run(self._s.read_file, path, format, **kw)
        return _aiter(got) if format == "stream" else got

    async def write_file(self, path: str, data: Any, **kw: Any) -> VolumeEntryStat:
        return await N.run(self._s.write_file, path, data, **kw)

    async def make_dir(self, path: str, **kw: Any) -> VolumeEntryStat:
        return await N.run(self._s.make_dir, path, **kw)

    async def _instance_get_info(self, path: str, **kw: Any) -> VolumeEntryStat:
        return await N.run(self._s.get_info, path, **kw)

    async def exists(self, path: str, **kw: Any) -> bool:
        return await N.run(self._s.exists, path, **kw)

    async def update_metadata(self, path: str, **kw: Any) -> VolumeEntryStat:
        return await N.run(self._s.update_metadata, path, **kw)

    async def remove(self, path: str, **kw: Any) -> None:
        await N.run(self._s.remove, path, **kw)

    async def _instance_list(self, path: str = "/", depth: Optional[int] = None,
                             **kw: Any) -> List[VolumeEntryStat]:
        return await N.run(self._s.list, path, depth, **kw)

    get_info = _dual(_class_get_info, _instance_get_info)
    list = _dual(_class_list, _instance_list)
