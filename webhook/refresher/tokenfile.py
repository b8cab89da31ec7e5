"""Write the token file the way `eosxd` accepts it.

eosxd reads `OAUTH2_TOKEN=FILE:<path>` and refuses the file unless it is owned by the uid that
accesses EOS and has no group or other permission bits; its content is `oauth2:<token>:<oauth-url>`.
Readers must never see a half-written token, so the file is written beside its final name and
renamed over it (rename is atomic within one directory).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class TokenFileError(Exception):
    pass


def eos_token_content(access_token: str, oauth_url: str) -> str:
    if "://" in oauth_url:
        raise TokenFileError(f"oauth-url {oauth_url!r} must be given without a scheme (EOS splits the content on ':')")
    return f"oauth2:{access_token}:{oauth_url}"


def write_token_file(path: Path, content: str) -> None:
    """Atomically replace `path` with `content`, mode 0600, owned by the running uid."""
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        temporary.unlink(missing_ok=True)  # left over from a crash mid-write
        # O_EXCL|O_NOFOLLOW: never write through a planted file or symlink; 0600 from the first byte
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)  # the umask may have taken bits away, never added; make it exact
            os.write(fd, content.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise TokenFileError(f"cannot write token file {path}: {exc.strerror or exc}") from exc
    _check_eos_requirements(path)


def _check_eos_requirements(path: Path) -> None:
    info = os.stat(path, follow_symlinks=False)
    if info.st_uid != os.geteuid():
        raise TokenFileError(f"token file {path} is owned by uid {info.st_uid}, not by the running uid {os.geteuid()}: "
                             "eosxd would refuse it")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise TokenFileError(f"token file {path} has mode {stat.S_IMODE(info.st_mode):o}: eosxd needs 0600")


def mark_ready(ready_file: Path | None, ready: bool) -> None:
    """The startup probe checks this file: present exactly while an unexpired token is written."""
    if ready_file is None:
        return
    if ready:
        ready_file.touch(mode=0o644, exist_ok=True)
    else:
        ready_file.unlink(missing_ok=True)
