import pytest

from tests.refresher import oidc_idp


@pytest.fixture
def idp():
    """A real OIDC provider whose access tokens live 6 s (refreshes happen within a test's time)."""
    running = oidc_idp.start(access_token_ttl=6)
    yield running
    running.stop()


@pytest.fixture
def credentials(idp, tmp_path):
    tokens = oidc_idp.log_in(idp, "jdoe")
    return oidc_idp.write_credentials(tmp_path / "oidc-credentials", idp, tokens["refresh_token"])
