"""`quartermaster token-refresher` refuses bad input at once, with a message (exit 2), before any IdP call."""

from webhook.cli import main


def run(capsys, *args):
    code = main(["token-refresher", *args])
    return code, capsys.readouterr().err


def test_missing_credentials_are_named(tmp_path, capsys):
    code, err = run(capsys, f"--credentials-dir={tmp_path / 'nowhere'}", f"--token-file={tmp_path / 'token'}",
                    "--issuer=https://auth.example.org/realms/x", "--metrics-address=")
    assert code == 2 and "has no client_id file" in err


def test_plain_http_is_only_for_loopback(tmp_path, capsys):
    for name, value in (("client_id", "c"), ("refresh_token", "r")):
        (tmp_path / name).write_text(value)
    code, err = run(capsys, f"--credentials-dir={tmp_path}", f"--token-file={tmp_path / 'token'}",
                    "--issuer=http://auth.example.org/realms/x", "--metrics-address=")
    assert code == 2 and "must be an https URL" in err


def test_the_token_directory_must_exist(tmp_path, capsys):
    for name, value in (("client_id", "c"), ("refresh_token", "r")):
        (tmp_path / name).write_text(value)
    code, err = run(capsys, f"--credentials-dir={tmp_path}", f"--token-file={tmp_path / 'missing' / 'token'}",
                    "--issuer=https://auth.example.org/realms/x", "--metrics-address=")
    assert code == 2 and "does not exist" in err


def test_durations_are_checked(tmp_path, capsys):
    try:
        main(["token-refresher", f"--credentials-dir={tmp_path}", f"--token-file={tmp_path / 't'}",
              "--issuer=https://x", "--refresh-margin=soon"])
    except SystemExit as exc:
        assert exc.code == 2
    assert "is not a duration" in capsys.readouterr().err
