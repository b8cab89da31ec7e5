"""Kubernetes' own CEL library tables (apiserver/pkg/cel/library/*_test.go), restated as expression -> outcome
and run on both backends: our Python libraries must answer as Kubernetes does."""

import pytest

from tests.cel import test_fidelity_ext as ext
from tests.cel.fidelity import assert_error, assert_value

# quantity_test.go
QUANTITY = [
    ("quantity('12Mi') == quantity('12582912')", True),
    ("isQuantity('20') && isQuantity('20M') && isQuantity('20Mi')", True),
    ("isQuantity('20Mo') || isQuantity('10Mm')", False),
    ("quantity('200M') == quantity('200M')", True),
    ("quantity('200M') == quantity('0.2G') && quantity('0.2G') == quantity('200M')", True),
    ("quantity('2M') == quantity('0.002G') && quantity('2000k') == quantity('2M') && quantity('0.002G') == quantity('2000k')", True),
    ("quantity('200M') == quantity('0.3G')", False),
    ("quantity('50M').isLessThan(quantity('50Mi'))", True),
    ("quantity('50M').isLessThan(quantity('100M'))", True),
    ("quantity('100M').isLessThan(quantity('50M'))", False),
    ("quantity('50Mi').isGreaterThan(quantity('50M'))", True),
    ("quantity('150Mi').isGreaterThan(quantity('100Mi'))", True),
    ("quantity('50M').isGreaterThan(quantity('100M'))", False),
    ("quantity('200M').compareTo(quantity('0.2G'))", 0),
    ("quantity('50M').compareTo(quantity('50Mi'))", -1),
    ("quantity('50Mi').compareTo(quantity('50M'))", 1),
    ("quantity('50k').add(quantity('20')) == quantity('50.02k')", True),
    ("quantity('50k').add(20).isLessThan(quantity('50020'))", False),
    ("quantity('50k').sub(quantity('20')) == quantity('49.98k')", True),
    ("quantity('50k').sub(20) == quantity('49980')", True),
    ("quantity('50k').add(20).sub(quantity('100k')).asInteger()", -49980),
    ("quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger()", 20),
    ("quantity('50k').asInteger()", 50000),
    ("quantity('9999999999999999999999999999999999999G').isInteger()", False),
    ("quantity('50').isInteger()", True),
    ("quantity('50.703k').asApproximateFloat()", 50703.0),
    # quantity.go's documented examples
    ("quantity('50000000G').isInteger() && quantity('50k').isInteger()", True),
    ("quantity('50k').sub(20000).asApproximateFloat() == 30000.0", True),
    ("isQuantity('1.3G') && isQuantity('1.3Gi') && isQuantity('10000k')", True),
    ("isQuantity('1,3G') || isQuantity('200K') || isQuantity('Three')", False),
    # Go's parser reads a missing number as 0 (parseQuantityString), whatever quantity.go's comment says
    ("quantity('Mi') == quantity('0')", True),
]
QUANTITY_ERRORS = [
    ("quantity('10Mo')", "quantities must match the regular expression"),
    ("quantity('10Mm')", "unable to parse quantity's suffix"),
    ("quantity('9999999999999999999999999999999999999G').asInteger()", "cannot convert value to integer"),
    ("quantity('200K')", "unable to parse quantity's suffix"),
    ("quantity('1e99999999999999999999')", "unable to parse quantity's suffix"),
    ("quantity('1.2.3')", "quantities must match the regular expression"),
]

# semver_test.go (SemverVersion 1: the normalizing overloads)
SEMVER = [
    ("semver('1.2.3') == semver('1.2.3')", True),
    ("isSemver('1.2.3-beta.1+build.1')", True),
    ("isSemver('') || isSemver('v1.0.0') || isSemver(' 1.0.0') || isSemver('1. 0.0') || isSemver('1.0.0 ')", False),
    ("isSemver('01.01.01') || isSemver('1') || isSemver('1.1')", False),
    ("isSemver('', true) || isSemver(' 1.0.0', true) || isSemver('1. 0.0', true) || isSemver('1.0.0 ', true)", False),
    ("isSemver('v1.0.0', true) && isSemver('01.01.01', true) && isSemver('1', true) && isSemver('1.1', true)", True),
    ("semver('v01.01', true) == semver('1.1.0')", True),
    ("semver('1.2.3') == semver('1.0.0')", False),
    ("semver('1.0.0').isLessThan(semver('1.2.3'))", True),
    ("semver('1.0.0').isLessThan(semver('1.0.0'))", False),
    ("semver('1.2.3').isGreaterThan(semver('1.0.0'))", True),
    ("semver('1.0.0').isGreaterThan(semver('1.0.0'))", False),
    ("semver('1.2.3').compareTo(semver('1.2.3'))", 0),
    ("semver('1.0.0').compareTo(semver('1.2.3'))", -1),
    ("semver('1.2.3').compareTo(semver('1.0.0'))", 1),
    ("[semver('1.2.3').major(), semver('1.2.3').minor(), semver('1.2.3').patch()]", [1, 2, 3]),
    # semverlib.go's normalizeAndParse: leading zeros of each part go, the third part keeps its suffix
    ("semver('v01.02.003-rc.1', true) == semver('1.2.3-rc.1') && semver('00.0', true) == semver('0.0.0')", True),
    ("isSemver('1.2-rc.1', true) || isSemver('1+build', true) || isSemver('1.2.03-01', true) || isSemver('vv1', true)", False),
    ("semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1')) && semver('1.0.0-beta.2').isLessThan(semver('1.0.0-beta.11'))", True),
    ("semver('1.0.0-rc.1').isLessThan(semver('1.0.0')) && semver('1.0.0+b1').compareTo(semver('1.0.0+b2')) == 0", True),
    # Semver.Equal is blang's EQ: build metadata does not count
    ("semver('1.0.0+b1') == semver('1.0.0+b2') && semver('1.0.0-rc.1+b') != semver('1.0.0')", True),
]
SEMVER_ERRORS = [
    ("semver('v1.0')", "semver|Major.Minor.Patch"),
]

# ip_test.go
IP = [
    ("ip('192.168.0.1') == ip('192.168.0.1')", True),
    ("isIP('192.168.0.1')", True),
    ("isIP('192.168.0.1.0')", False),
    ("ip.isCanonical('127.0.0.1')", True),
    ("ip('192.168.0.1').family()", 4),
    ("ip('0.0.0.0').isUnspecified()", True),
    ("ip('127.0.0.1').isUnspecified()", False),
    ("ip('127.0.0.1').isLoopback()", True),
    ("ip('1.2.3.4').isLoopback()", False),
    ("ip('224.0.0.1').isLinkLocalMulticast()", True),
    ("ip('224.0.1.1').isLinkLocalMulticast()", False),
    ("ip('169.254.169.254').isLinkLocalUnicast()", True),
    ("ip('192.168.0.1').isLinkLocalUnicast()", False),
    ("ip('192.168.0.1').isGlobalUnicast()", True),
    ("ip('255.255.255.255').isGlobalUnicast()", False),
    ("isIP('2001:db8::68')", True),
    ("isIP('2001:db8:::68')", False),
    ("ip.isCanonical('2001:db8::68')", True),
    ("ip.isCanonical('2001:DB8::68')", False),
    ("ip('2001:db8::68').family()", 6),
    ("ip('::').isUnspecified()", True),
    ("ip('::1').isUnspecified()", False),
    ("ip('::1').isLoopback()", True),
    ("ip('2001:db8::abcd').isLoopback()", False),
    ("ip('ff02::1').isLinkLocalMulticast()", True),
    ("ip('fd00::1').isLinkLocalMulticast()", False),
    ("ip('fe80::1').isLinkLocalUnicast()", True),
    ("ip('fd80::1').isLinkLocalUnicast()", False),
    ("ip('2001:db8::abcd').isGlobalUnicast()", True),
    ("ip('ff00::1').isGlobalUnicast()", False),
    ("string(ip('192.168.0.1'))", "192.168.0.1"),
    ("string(ip('2001:db8::68'))", "2001:db8::68"),
]
IP_ERRORS = [
    ("ip('192.168.0.1.0')", "IP Address '192.168.0.1.0' parse error during conversion from string|parse error"),
    ("ip.isCanonical('127.0.0.1.0')", "parse error during conversion from string"),
    ("ip('2001:db8:::68')", "parse error during conversion from string"),
    ("ip.isCanonical('2001:db8:::68')", "parse error during conversion from string"),
]

# cidr_test.go
CIDR = [
    ("cidr(dyn('192.168.0.0/24')) == cidr('192.168.0.0/24')", True),
    ("cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))", True),
    ("cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))", False),
    ("cidr('192.168.0.0/24').containsIP('192.168.0.1')", True),
    ("cidr('192.168.0.0/24').containsIP('192.168.1.1')", False),
    ("cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))", True),
    ("cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/23'))", False),
    ("cidr('192.168.0.0/24').containsCIDR('192.168.0.0/25')", True),
    ("cidr('192.168.0.0/24').containsCIDR('192.168.0.0/23')", False),
    ("cidr('192.168.0.0/24').ip() == ip('192.168.0.0')", True),
    ("cidr('192.168.0.0/24').masked() == cidr('192.168.0.0/24')", True),
    ("cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')", True),
    ("cidr('192.168.0.0/24').prefixLength()", 24),
    ("cidr('2001:db8::/32') == cidr('2001:db8::/32')", True),
    ("cidr('2001:db8::/32').containsIP(ip('2001:db8::1'))", True),
    ("cidr('2001:db8::/32').containsIP(ip('2001:dc8::1'))", False),
    ("cidr('2001:db8::/32').containsIP('2001:db8::1')", True),
    ("cidr('2001:db8::/32').containsIP('2001:dc8::1')", False),
    ("cidr('2001:db8::/32').containsCIDR(cidr('2001:db8::/33'))", True),
    ("cidr('2001:db8::/32').containsCIDR(cidr('2001:db8::/31'))", False),
    ("cidr('2001:db8::/32').containsCIDR('2001:db8::/33')", True),
    ("cidr('2001:db8::/32').containsCIDR('2001:db8::/31')", False),
    ("cidr('2001:db8::/32').ip() == ip('2001:db8::')", True),
    ("cidr('2001:db8::/32').masked() == cidr('2001:db8::/32')", True),
    ("cidr('2001:db8:1::/32').masked() == cidr('2001:db8::/32')", True),
    ("cidr('2001:db8::/32').prefixLength()", 32),
    ("string(cidr('192.168.0.0/24'))", "192.168.0.0/24"),
    # netip.ParsePrefix: the written address is kept (not masked); bits are plain decimal without a leading zero
    ("string(cidr('10.0.0.1/8'))", "10.0.0.1/8"),
    ("isCIDR('192.168.0.0/024') || isCIDR('192.168.0.0/33') || isCIDR('::1/129') || isCIDR('fe80::1%eth0/64')", False),
    ("isCIDR('1.2.3.4/0') && !cidr('0.0.0.0/0').containsIP('::1')", True),
]
CIDR_ERRORS = [
    ("cidr('192.168.0.0/')", "network address parse error during conversion from string"),
    ("cidr('2001:db8::/')", "network address parse error during conversion from string"),
]

# urls.go's documented examples (Go's url.ParseRequestURI, then url.Parse)
URLS = [
    ("isURL('https://user:pass@example.com:80/path?query=val#fragment')", True),
    ("isURL('/absolute-path')", True),
    ("isURL('https://a:b:c/') || isURL('../relative-path')", False),
    ("url('/path').getScheme()", ""),
    ("url('https://example.com/').getScheme()", "https"),
    ("url('https://example.com:80/').getHost()", "example.com:80"),
    ("url('https://example.com/').getHost()", "example.com"),
    ("url('https://[::1]:80/').getHost()", "[::1]:80"),
    ("url('https://[::1]/').getHost()", "[::1]"),
    ("url('/path').getHost()", ""),
    ("url('https://example.com:80/').getHostname()", "example.com"),
    ("url('https://127.0.0.1:80/').getHostname()", "127.0.0.1"),
    ("url('https://[::1]:80/').getHostname()", "::1"),
    ("url('/path').getHostname()", ""),
    ("url('https://example.com:80/').getPort()", "80"),
    ("url('https://example.com/').getPort()", ""),
    ("url('/path').getPort()", ""),
    ("url('https://example.com/path').getEscapedPath()", "/path"),
    ("url('https://example.com/path with spaces/').getEscapedPath()", "/path%20with%20spaces/"),
    ("url('https://example.com').getEscapedPath()", ""),
    ("url('https://example.com/path?k1=a&k2=b&k2=c').getQuery()", {"k1": ["a"], "k2": ["b", "c"]}),
    ("url('https://example.com/path?key with spaces=value with spaces').getQuery()",
     {"key with spaces": ["value with spaces"]}),
    ("url('https://example.com/path?').getQuery()", {}),
    ("url('https://example.com/path').getQuery()", {}),
    # Go keeps a path's own valid escapes (EscapedPath returns RawPath) and refuses opaque URIs for requests
    ("url('https://example.com/a%2Fb').getEscapedPath()", "/a%2Fb"),
    ("url('https://example.com/a!b(c)').getEscapedPath()", "/a!b(c)"),
    ("isURL('mailto:someone@example.com') && url('mailto:someone@example.com?x=1').getEscapedPath() == ''", True),
    ("isURL('https://example.com/\\tx') || isURL('https://exa mple.com/') || isURL('')", False),
    ("url('HTTPS://example.com/p#frag').getScheme() + url('//host/p').getHost()", 'httpshost'),
    ("url('https://example.com/?a=1;b=2&c=%zz&d=x+y').getQuery()", {'d': ['x y']}),
    ("url('https://[fe80::1%25en0]:8080/').getHost() + ' ' + url('https://[fe80::1%25en0]:8080/').getHostname()",
     "[fe80::1%en0]:8080 fe80::1%en0"),
]
URL_ERRORS = [
    ("url('https://a:b:c/')", "URL parse error during conversion from string"),
    ("url('../relative-path')", "URL parse error during conversion from string"),
    ("url('https://example.com/%zz')", "URL parse error during conversion from string"),
]

# lists.go's documented examples
LISTS = [
    ("[1, 2, 3].isSorted() && ['a', 'b', 'b', 'c'].isSorted() && [1].isSorted() && [].isSorted()", True),
    ("[2.0, 1.0].isSorted()", False),
    ("[1, 3].sum()", 4),
    ("[1.0, 3.0].sum()", 4.0),
    ("[duration('1m'), duration('1s')].sum() == duration('1m1s')", True),
    ("[].sum()", 0),
    ("[1, 3].min()", 1),
    ("[1, 3].max()", 3),
    ("[1].min()", 1),
    ("([0] + []).min()", 0),
    ("[1, 2, 2, 3].indexOf(2)", 1),
    ("['a', 'b', 'b', 'c'].lastIndexOf('b')", 2),
    ("[1.0].indexOf(1.1)", -1),
    ("[].indexOf('string')", -1),
    ("[timestamp('2020-01-01T00:00:00Z'), timestamp('2021-01-01T00:00:00Z')].isSorted()", True),
    ("[b'b', b'a'].min() == b'a'", True),
    ("[true, false].max()", True),
    ("[duration('2s'), duration('1s')].min() == duration('1s')", True),
    ("[timestamp('2020-01-01T00:00:00Z'), timestamp('2021-01-01T00:00:00Z')].max() == timestamp('2021-01-01T00:00:00Z')", True),
]
LISTS_ERRORS = [
    ("[].min()", "min called on empty list"),
    ("[].max()", "max called on empty list"),
]

# with cel-go's extension tables (strings, format, lists, sets, regex), kept in test_fidelity_ext.py
TABLES = QUANTITY + SEMVER + IP + CIDR + URLS + LISTS + ext.TABLES
ERRORS = QUANTITY_ERRORS + SEMVER_ERRORS + IP_ERRORS + CIDR_ERRORS + URL_ERRORS + LISTS_ERRORS + ext.ERRORS


@pytest.mark.parametrize("expression,expected", TABLES)
def test_kubernetes_table(compiler, expression, expected):
    assert_value(compiler, expression, expected)


@pytest.mark.parametrize("expression,message", ERRORS)
def test_kubernetes_error_table(compiler, expression, message):
    assert_error(compiler, expression, message)


def test_long_quantities_with_huge_exponents_are_answered_at_once():
    """Past the model's 256-character bound a quantity of Kubernetes' shape is read exactly (values beyond
    2^63), and an exponent such as -(10^300 - 1) made that 10^(10^300): `isQuantity` on such a string, from an
    annotation, say, never returned. In a subprocess: a hang holds the interpreter, so it must fail by timeout."""
    import subprocess
    import sys

    check = (
        "from webhook.cel import CelCompiler\n"
        "for backend in ('cel-python', 'cel-expr-python'):\n"
        "    cel = CelCompiler(backend)\n"
        "    beyond = '1e-' + '9' * 300\n"  # an exponent past 64 bits: Kubernetes refuses it
        "    assert cel.compile(f\"isQuantity('{beyond}')\").evaluate({}) is False, backend\n"
        "    tiny = '0' * 250 + '1e-9000000000000000000'\n"  # 10^-9e18, rounded up to a nano
        "    assert cel.compile(f\"quantity('{tiny}') == quantity('1n')\").evaluate({}) is True, backend\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
