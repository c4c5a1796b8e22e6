"""Git in a sandbox: ``sandbox.git`` (the C core's ``asb_git_*``, git.h).

Each call runs the sandbox's own git as a command and reads what it
printed; the names and arguments are those of E2B's SDKs (``clone``,
``init``, ``add``, ``commit``, ``push``, ``pull``, ``status``,
``branches`` ...), so code written for ``e2b``'s ``sandbox.git`` runs
unchanged through :mod:`agent_sandbox.compat`::

    sandbox.git.clone("https://example.com/org/repo.git", "repo",
                      username="bot", password=token)
    sandbox.git.commit("repo", "Fix", author_name="Bot", author_email="bot@example.com")
    sandbox.git.push("repo", username="bot", password=token)

Credentials reach git on the command's stdin and through a credential
helper that lives for that one git command: they are on no command line
and in no environment envd records, and are stored only when asked
(``dangerously_store_credentials``, :meth:`Git.dangerously_authenticate`).

Every call takes ``envs``, ``user``, ``cwd``, ``timeout`` (git's lifetime
in seconds, default 60, 0 = none) and ``request_timeout``. The calls that
change something return git's :class:`CommandResult`; when git fails they
raise :class:`CommandExitException` (its ``stderr`` says why),
:class:`GitAuthException` (the remote wanted or refused credentials) or
:class:`GitUpstreamException` (push/pull without an upstream); bad
arguments raise :class:`InvalidArgumentException` before anything runs.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional

from . import _native as N
from . import exceptions as E
from . import lowlevel as ll
from .models import CommandResult, GitBranches, GitFileStatus, GitStatus

__all__ = ["Git", "AsyncGit"]

Envs = Optional[Mapping[str, str]]


def _result(res: Any) -> CommandResult:
    return CommandResult(
        stderr=N.text(ll.asb_command_result_stderr(res)),
        stdout=N.text(ll.asb_command_result_stdout(res)),
        exit_code=ll.asb_command_result_exit_code(res),
        error=ll.asb_command_result_error(res),
    )


def _tri(v: Optional[bool]) -> int:
    return 0 if v is None else (1 if v else -1)


class Git:
    """Git helpers of a sandbox (blocking API): ``sandbox.git``."""

    def __init__(self, sandbox: Any) -> None:
        self._sandbox = sandbox

    # ---- plumbing --------------------------------------------------------------
    @staticmethod
    def _opts(envs: Envs, user: Optional[str], cwd: Optional[str], timeout: Optional[float],
              request_timeout: Optional[float], **fields: Any) -> Any:
        o = ll.asb_git_options()
        if envs:
            o.envs = dict(envs)
        if user:
            o.user = user
        if cwd:
            o.cwd = cwd
        o.timeout_ms = N.ms(timeout)
        if request_timeout is not None:
            o.request_timeout_ms = N.ms(request_timeout)
        o.cancel = N.current_cancel()
        for k, v in fields.items():
            if v is None:
                continue
            if isinstance(v, bool):
                v = 1 if v else 0
            setattr(o, k, v)
        return o

    @staticmethod
    def _run(fn: Any, *args: Any) -> CommandResult:
        rc, res = fn(*args)
        if rc == N.OK:
            return _result(res)
        if res is not None:
            # The message says which git call failed and why; the result
            # goes with the exception as E2B's CommandExitException does.
            exc = N.make_error(rc)
            r = _result(res)
            if isinstance(exc, E.CommandExitException):
                exc.stdout, exc.stderr, exc.exit_code, exc.error = (r.stdout, r.stderr,
                                                                    r.exit_code, r.error)
            else:
                exc.result = r  # type: ignore[attr-defined]
            raise exc
        N.fail(rc)
        raise AssertionError("unreachable")

    # ---- repositories ------------------------------------------------------------
    def clone(self, url: str, path: Optional[str] = None, branch: Optional[str] = None,
              depth: Optional[int] = None, username: Optional[str] = None,
              password: Optional[str] = None, envs: Envs = None, user: Optional[str] = None,
              cwd: Optional[str] = None, timeout: Optional[float] = None,
              request_timeout: Optional[float] = None,
              dangerously_store_credentials: bool = False) -> CommandResult:
        """``git clone url [path]``: ``branch`` alone, ``depth`` for a shallow
        clone; ``username``/``password`` for an http(s) remote, kept in the
        clone (``.git/credentials``) only with ``dangerously_store_credentials``."""
        o = self._opts(envs, user, cwd, timeout, request_timeout, branch=branch,
                       depth=int(depth) if depth else None, username=username,
                       password=password, store_credentials=dangerously_store_credentials)
        return self._run(ll.asb_git_clone, self._sandbox._h, url, path, o)

    def init(self, path: str, bare: bool = False, initial_branch: Optional[str] = None,
             envs: Envs = None, user: Optional[str] = None, cwd: Optional[str] = None,
             timeout: Optional[float] = None,
             request_timeout: Optional[float] = None) -> CommandResult:
        """``git init path`` (``bare``, ``initial_branch``)."""
        o = self._opts(envs, user, cwd, timeout, request_timeout, bare=bare,
                       initial_branch=initial_branch)
        return self._run(ll.asb_git_init, self._sandbox._h, path, o)

    def remote_add(self, path: str, name: str, url: str, fetch: bool = False,
                   overwrite: bool = False, envs: Envs = None, user: Optional[str] = None,
                   cwd: Optional[str] = None, timeout: Optional[float] = None,
                   request_timeout: Optional[float] = None) -> CommandResult:
        """``git remote add name url``; ``overwrite`` sets the URL of an existing
        remote, ``fetch`` fetches it."""
        o = self._opts(envs, user, cwd, timeout, request_timeout, fetch=fetch,
                       overwrite=overwrite)
        return self._run(ll.asb_git_remote_add, self._sandbox._h, path, name, url, o)

    def remote_get(self, path: str, name: str, envs: Envs = None, user: Optional[str] = None,
                   cwd: Optional[str] = None, timeout: Optional[float] = None,
                   request_timeout: Optional[float] = None) -> Optional[str]:
        """The URL of remote ``name``, or None when there is no such remote."""
        o = self._opts(envs, user, cwd, timeout, request_timeout)
        return N.call(ll.asb_git_remote_get, self._sandbox._h, path, name, o)

    # ---- status and branches -------------------------------------------------------
    def status(self, path: str, envs: Envs = None, user: Optional[str] = None,
               cwd: Optional[str] = None, timeout: Optional[float] = None,
               request_timeout: Optional[float] = None) -> GitStatus:
        """The work tree's state: branch, upstream, ahead/behind, changed files."""
        o = self._opts(envs, user, cwd, timeout, request_timeout)
        s = N.call(ll.asb_git_status_read, self._sandbox._h, path, o)
        files = [
            GitFileStatus(
                name=ll.asb_git_status_file_name(s, i) or "",
                status=ll.asb_git_status_file_status(s, i) or "unknown",
                index_status=ll.asb_git_status_file_index_status(s, i) or " ",
                working_tree_status=ll.asb_git_status_file_worktree_status(s, i) or " ",
                staged=bool(ll.asb_git_status_file_staged(s, i)),
                renamed_from=ll.asb_git_status_file_renamed_from(s, i),
            )
            for i in range(ll.asb_git_status_files_count(s))
        ]
        return GitStatus(
            current_branch=ll.asb_git_status_current_branch(s),
            upstream=ll.asb_git_status_upstream(s),
            ahead=ll.asb_git_status_ahead(s),
            behind=ll.asb_git_status_behind(s),
            detached=bool(ll.asb_git_status_detached(s)),
            file_status=files,
        )

    def branches(self, path: str, envs: Envs = None, user: Optional[str] = None,
                 cwd: Optional[str] = None, timeout: Optional[float] = None,
                 request_timeout: Optional[float] = None) -> GitBranches:
        """The local branches and the checked-out one."""
        o = self._opts(envs, user, cwd, timeout, request_timeout)
        lst = N.call(ll.asb_git_branches_list, self._sandbox._h, path, o)
        names: List[str] = [ll.asb_git_branch_list_get(lst, i)
                            for i in range(ll.asb_git_branch_list_count(lst))]
        return GitBranches(branches=names, current_branch=ll.asb_git_branch_list_current(lst))

    def create_branch(self, path: str, branch: str, envs: Envs = None,
                      user: Optional[str] = None, cwd: Optional[str] = None,
                      timeout: Optional[float] = None,
                      request_timeout: Optional[float] = None) -> CommandResult:
        """``git checkout -b branch``."""
        o = self._opts(envs, user, cwd, timeout, request_timeout)
        return self._run(ll.asb_git_branch_create, self._sandbox._h, path, branch, o)

    def checkout_branch(self, path: str, branch: str, envs: Envs = None,
                        user: Optional[str] = None, cwd: Optional[str] = None,
                        timeout: Optional[float] = None,
                        request_timeout: Optional[float] = None) -> CommandResult:
        """``git checkout branch``."""
        o = self._opts(envs, user, cwd, timeout, request_timeout)
        return self._run(ll.asb_git_branch_checkout, self._sandbox._h, path, branch, o)

    def delete_branch(self, path: str, branch: str, force: bool = False, envs: Envs = None,
                      user: Optional[str] = None, cwd: Optional[str] = None,
                      timeout: Optional[float] = None,
                      request_timeout: Optional[float] = None) -> CommandResult:
        """``git branch -d branch`` (``force``: ``-D``)."""
        o = self._opts(envs, user, cwd, timeout, request_timeout, force=force)
        return self._run(ll.asb_git_branch_delete, self._sandbox._h, path, branch, o)

    # ---- changes ---------------------------------------------------------------------
    def add(self, path: str, files: Optional[List[str]] = None, all: bool = True,
            envs: Envs = None, user: Optional[str] = None, cwd: Optional[str] = None,
            timeout: Optional[float] = None,
            request_timeout: Optional[float] = None) -> CommandResult:
        """Stage ``files``, or without them everything (``all``) or the
        repository directory's changes (``all=False``)."""
        o = self._opts(envs, user, cwd, timeout, request_timeout,
                       paths=list(files) if files else None)
        o.all = 1 if all else -1
        return self._run(ll.asb_git_add, self._sandbox._h, path, o)

    def commit(self, path: str, message: str, author_name: Optional[str] = None,
               author_email: Optional[str] = None, allow_empty: bool = False,
               envs: Envs = None, user: Optional[str] = None, cwd: Optional[str] = None,
               timeout: Optional[float] = None,
               request_timeout: Optional[float] = None) -> CommandResult:
        """``git commit -m message``, the author for this commit only."""
        o = self._opts(envs, user, cwd, timeout, request_timeout, author_name=author_name,
                       author_email=author_email, allow_empty=allow_empty)
        return self._run(ll.asb_git_commit, self._sandbox._h, path, message, o)

    def reset(self, path: str, mode: Optional[str] = None, target: Optional[str] = None,
              paths: Optional[List[str]] = None, envs: Envs = None,
              user: Optional[str] = None, cwd: Optional[str] = None,
              timeout: Optional[float] = None,
              request_timeout: Optional[float] = None) -> CommandResult:
        """``git reset [--mode] [target] [-- paths]``."""
        o = self._opts(envs, user, cwd, timeout, request_timeout, mode=mode, target=target,
                       paths=list(paths) if paths else None)
        return self._run(ll.asb_git_reset, self._sandbox._h, path, o)

    def restore(self, path: str, paths: List[str], staged: Optional[bool] = None,
                worktree: Optional[bool] = None, source: Optional[str] = None,
                envs: Envs = None, user: Optional[str] = None, cwd: Optional[str] = None,
                timeout: Optional[float] = None,
                request_timeout: Optional[float] = None) -> CommandResult:
        """``git restore paths``: the work tree by default, the index only with
        ``staged=True`` alone, both when both are True."""
        o = self._opts(envs, user, cwd, timeout, request_timeout, source=source)
        o.staged = _tri(staged)
        o.worktree = _tri(worktree)
        return self._run(ll.asb_git_restore, self._sandbox._h, path,
                         list(paths) if paths else [], o)

    # ---- syncing -----------------------------------------------------------------------
    def push(self, path: str, remote: Optional[str] = None, branch: Optional[str] = None,
             set_upstream: bool = True, username: Optional[str] = None,
             password: Optional[str] = None, envs: Envs = None, user: Optional[str] = None,
             cwd: Optional[str] = None, timeout: Optional[float] = None,
             request_timeout: Optional[float] = None) -> CommandResult:
        """``git push [--set-upstream] [remote] [branch]``."""
        o = self._opts(envs, user, cwd, timeout, request_timeout, remote=remote,
                       branch=branch, username=username, password=password)
        o.set_upstream = 1 if set_upstream else -1
        return self._run(ll.asb_git_push, self._sandbox._h, path, o)

    def pull(self, path: str, remote: Optional[str] = None, branch: Optional[str] = None,
             username: Optional[str] = None, password: Optional[str] = None,
             envs: Envs = None, user: Optional[str] = None, cwd: Optional[str] = None,
             timeout: Optional[float] = None,
             request_timeout: Optional[float] = None) -> CommandResult:
        """``git pull [remote] [branch]``."""
        o = self._opts(envs, user, cwd, timeout, request_timeout, remote=remote,
                       branch=branch, username=username, password=password)
        return self._run(ll.asb_git_pull, self._sandbox._h, path, o)

    # ---- configuration ---------------------------------------------------------------------
    def set_config(self, key: str, value: str, scope: str = "global",
                   path: Optional[str] = None, envs: Envs = None, user: Optional[str] = None,
                   cwd: Optional[str] = None, timeout: Optional[float] = None,
                   request_timeout: Optional[float] = None) -> CommandResult:
        """``git config --scope key value`` (``local`` needs ``path``)."""
        o = self._opts(envs, user, cwd, timeout, request_timeout, scope=scope)
        return self._run(ll.asb_git_config_set, self._sandbox._h, path, key, value, o)

    def get_config(self, key: str, scope: str = "global", path: Optional[str] = None,
                   envs: Envs = None, user: Optional[str] = None, cwd: Optional[str] = None,
                   timeout: Optional[float] = None,
                   request_timeout: Optional[float] = None) -> Optional[str]:
        """The value of ``key`` in ``scope``, or None when it is not set."""
        o = self._opts(envs, user, cwd, timeout, request_timeout, scope=scope)
        return N.call(ll.asb_git_config_get, self._sandbox._h, path, key, o)

    def dangerously_authenticate(self, username: str, password: str,
                                 host: str = "github.com", protocol: str = "https",
                                 envs: Envs = None, user: Optional[str] = None,
                                 cwd: Optional[str] = None, timeout: Optional[float] = None,
                                 request_timeout: Optional[float] = None) -> CommandResult:
        """Store the credentials for ``host`` in the user's git credential store
        (plain text in ``~/.git-credentials``, readable by anything running as
        that user). Prefer per-call credentials."""
        o = self._opts(envs, user, cwd, timeout, request_timeout, host=host, protocol=protocol)
        return self._run(ll.asb_git_dangerously_authenticate, self._sandbox._h, username,
                         password, o)

    def configure_user(self, name: str, email: str, scope: str = "global",
                       path: Optional[str] = None, envs: Envs = None,
                       user: Optional[str] = None, cwd: Optional[str] = None,
                       timeout: Optional[float] = None,
                       request_timeout: Optional[float] = None) -> CommandResult:
        """Set ``user.name`` and ``user.email`` in ``scope``."""
        o = self._opts(envs, user, cwd, timeout, request_timeout, scope=scope)
        return self._run(ll.asb_git_configure_user, self._sandbox._h, path, name, email, o)


def _async_twin(name: str) -> Any:
    method = getattr(Git, name)

    async def f(self: "AsyncGit", *args: Any, **kwargs: Any) -> Any:
        return await N.run(getattr(self._sync, name), *args, **kwargs)

    f.__name__ = name
    f.__qualname__ = f"AsyncGit.{name}"
    f.__doc__ = method.__doc__
    # the same signature as the blocking one (E2B's SDKs check theirs match)
    import inspect

    f.__signature__ = inspect.signature(method)  # type: ignore[attr-defined]
    return f


class AsyncGit:
    """Git helpers of a sandbox (async API): the methods of :class:`Git`, awaited."""

    def __init__(self, sync: Git) -> None:
        self._sync = sync


for _name in [n for n in vars(Git) if not n.startswith("_")]:
    setattr(AsyncGit, _name, _async_twin(_name))
del _name
