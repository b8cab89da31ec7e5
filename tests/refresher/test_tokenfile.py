import os
import stat

import pytest

from webhook.refresher.tokenfile import TokenFileError, eos_token_content, mark_ready, write_token_file


def test_content_is_what_eosxd_reads():
    assert eos_token_content("abc.def", "auth.cern.ch/auth/realms/cern/protocol/openid-connect/userinfo") == \
        "oauth2:abc.def:auth.cern.ch/auth/realms/cern/protocol/openid-connect/userinfo"
    with pytest.raises(TokenFileError, match="without a scheme"):
        eos_token_content("abc", "https://auth.cern.ch/userinfo")


def test_written_0600_by_the_running_uid_even_with_a_permissive_umask(tmp_path):
    path = tmp_path / "token"
    old = os.umask(0)
    try:
        write_token_file(path, "oauth2:one:idp/userinfo")
        write_token_file(path, "oauth2:two:idp/userinfo")
    finally:
        os.umask(old)
    info = os.stat(path)
    assert path.read_text() == "oauth2:two:idp/userinfo"
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["token"]


def test_replaced_by_rename_so_readers_never_see_half_a_token(tmp_path):
    path = tmp_path / "token"
    write_token_file(path, "oauth2:one:idp/userinfo")
    reader = open(path)  # a reader holding the old file keeps reading the whole old token
    write_token_file(path, "oauth2:two:idp/userinfo")
    assert reader.read() == "oauth2:one:idp/userinfo"
    reader.close()


def test_a_leftover_temporary_or_planted_symlink_is_not_written_through(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    (tmp_path / ".token.tmp").symlink_to(target)
    write_token_file(tmp_path / "token", "oauth2:t:idp/userinfo")
    assert target.read_text() == "keep"
    assert (tmp_path / "token").read_text() == "oauth2:t:idp/userinfo"


def test_unwritable_directory_is_a_clear_error(tmp_path):
    with pytest.raises(TokenFileError, match="cannot write token file"):
        write_token_file(tmp_path / "missing" / "token", "x")


def test_ready_file_follows_the_token(tmp_path):
    ready = tmp_path / ".ready"
    mark_ready(ready, True)
    assert ready.exists()
    mark_ready(ready, False)
    assert not ready.exists()
