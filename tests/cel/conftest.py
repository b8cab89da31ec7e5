import pytest

from webhook.cel import BACKENDS, CelCompiler


@pytest.fixture(params=BACKENDS)
def compiler(request):
    return CelCompiler(request.param)


@pytest.fixture
def cpp():
    return CelCompiler("cel-expr-python")
