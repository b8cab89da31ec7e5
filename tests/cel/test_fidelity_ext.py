"""cel-go's extension tables (ext/strings_test.go, ext/formatting_test.go at StringsVersion 2 as Kubernetes
enables it, ext/lists_test.go, ext/sets_test.go) and Kubernetes' regex library, restated as
expression -> outcome; tests/cel/test_fidelity_k8s.py runs these tables with Kubernetes' own on both backends."""

import pytest

from webhook.cel import CelCompiler, CelError

STRINGS = [
    ("'tacocat'.charAt(3)", "o"),
    ("'tacocat'.charAt(7)", ""),
    ("'©αT'.charAt(0) == '©' && '©αT'.charAt(1) == 'α' && '©αT'.charAt(2) == 'T'", True),
    ("'tacocat'.indexOf('')", 0),
    ("'tacocat'.indexOf('ac')", 1),
    ("'tacocat'.indexOf('none')", -1),
    ("'tacocat'.indexOf('', 3)", 3),
    ("'tacocat'.indexOf('a', 3)", 5),
    ("'tacocat'.indexOf('at', 3)", 5),
    ("'ta©o©αT'.indexOf('©')", 2),
    ("'ta©o©αT'.indexOf('©', 3)", 4),
    ("'ta©o©αT'.indexOf('©αT', 3)", 4),
    ("'ta©o©αT'.indexOf('©α', 5)", -1),
    ("'ijk'.indexOf('k')", 2),
    ("'hello wello'.indexOf('hello wello')", 0),
    ("'hello wello'.indexOf('ello', 6)", 7),
    ("'hello wello'.indexOf('elbo room!!')", -1),
    ("'tacocat'.lastIndexOf('')", 7),
    ("'tacocat'.lastIndexOf('at')", 5),
    ("'tacocat'.lastIndexOf('none')", -1),
    ("'tacocat'.lastIndexOf('', 3)", 3),
    ("'tacocat'.lastIndexOf('a', 3)", 1),
    ("'ta©o©αT'.lastIndexOf('©')", 4),
    ("'ta©o©αT'.lastIndexOf('©', 3)", 2),
    ("'ta©o©αT'.lastIndexOf('©α', 4)", 4),
    ("'hello wello'.lastIndexOf('ello', 6)", 1),
    ("'hello wello'.lastIndexOf('low')", -1),
    ("'hello wello'.lastIndexOf('elbo room!!')", -1),
    ("'hello wello'.lastIndexOf('hello wello')", 0),
    ("'bananananana'.lastIndexOf('nana', 7)", 6),
    ("'TacoCat'.lowerAscii()", "tacocat"),
    ("'TacoCÆt Xii'.lowerAscii()", "tacocÆt xii"),
    ("'tacoCat'.upperAscii()", "TACOCAT"),
    ("'tacoCαt'.upperAscii()", "TACOCαT"),
    ("'12 days 12 hours'.replace('{0}', '2')", "12 days 12 hours"),
    ("'{0} days {0} hours'.replace('{0}', '2')", "2 days 2 hours"),
    ("'{0} days {0} hours'.replace('{0}', '2', 1).replace('{0}', '23')", "2 days 23 hours"),
    ("'1 ©αT taco'.replace('αT', 'o©α')", "1 ©o©α taco"),
    ("'hello world'.split(' ')", ["hello", "world"]),
    ("'hello world events!'.split(' ', 0)", []),
    ("'hello world events!'.split(' ', 1)", ["hello world events!"]),
    ("'o©o©o©o'.split('©', -1)", ["o", "o", "o", "o"]),
    ("'tacocat'.substring(4)", "cat"),
    ("'tacocat'.substring(7)", ""),
    ("'tacocat'.substring(0, 4)", "taco"),
    ("'tacocat'.substring(4, 4)", ""),
    ("'ta©o©αT'.substring(2, 6)", "©o©α"),
    ("'ta©o©αT'.substring(7, 7)", ""),
    ("' \\f\\n\\r\\t\\vtext  '.trim()", "text"),
    ("'\\u0085\\u00a0\\u1680text'.trim()", "text"),
    ("'\\u001ctext\\u001f'.trim()", "\x1ctext\x1f"),
    ("['x', 'y'].join()", "xy"),
    ("['x', 'y'].join('-')", "x-y"),
    ("[].join()", ""),
    ("[].join('-')", ""),
    ("strings.quote('first\\nsecond')", '"first\\nsecond"'),
    ("strings.quote('bell\\a')", '"bell\\a"'),
    ("strings.quote('\\\\')", '"\\\\"'),
    ("strings.quote('ends with \\\\')", '"ends with \\\\"'),
    ("strings.quote('\\v and \\f')", '"\\v and \\f"'),
    ("strings.quote('printable unicode😀')", '"printable unicode😀"'),
    ("strings.quote('mid string \\' quote')", '"mid string \' quote"'),
    ("strings.quote('single-quote with \"double quote\"')", '"single-quote with \\"double quote\\""'),
    ("strings.quote('')", '""'),
]
# past the end: -1 in cel-go as Kubernetes 1.34 pins it (ext/strings.go), an error in older releases
STRINGS_PAST_THE_END = [
    ("'tacocat'.indexOf('a', 30)", -1),
    ("'tacocat'.indexOf('a', 7)", -1),
    ("'tacocat'.lastIndexOf('a', 30)", -1),
    ("''.lastIndexOf('a')", -1),
]
STRINGS_ERRORS = [
    ("'tacocat'.charAt(30)", "index out of range: 30"),
    ("'tacocat'.charAt(-1)", "index out of range: -1"),
    ("'tacocat'.lastIndexOf('a', -1)", "index out of range: -1"),
    ("'tacocat'.substring(40)", "index out of range: 40"),
    ("'tacocat'.substring(-1)", "index out of range: -1"),
    ("'tacocat'.substring(1, 50)", "index out of range: 50"),
    ("'tacocat'.substring(49, 50)", "index out of range: 49"),
    ("'tacocat'.substring(4, 3)", "invalid substring range. start: 4, end: 3"),
    ("[1, 2].join()", "join"),
]

FORMAT = [
    ("'no substitution'.format([])", "no substitution"),
    ("'str is %s and some more'.format(['filler'])", "str is filler and some more"),
    ("'%% and also %%'.format([])", "% and also %"),
    ("'%%%s%%'.format(['text'])", "%text%"),
    ("'%d %d %d, %s %s %s, %d %d %d, %s %s %s'.format([1, 2, 3, 'A', 'B', 'C', 4, 5, 6, 'D', 'E', 'F'])",
     "1 2 3, A B C, 4 5 6, D E F"),
    ("'%.3f'.format([1.2345])", "1.234"),
    ("'this is 5 in binary: %b'.format([5])", "this is 5 in binary: 101"),
    ("'this is -5 in binary: %b'.format([-5])", "this is -5 in binary: -101"),
    ("'unsigned 64 in binary: %b'.format([uint(64)])", "unsigned 64 in binary: 1000000"),
    ("'bit set from bool: %b'.format([true])", "bit set from bool: 1"),
    ("'%o'.format([11])", "13"),
    ("'%o'.format([-11])", "-13"),
    ("'this is an unsigned octal: %o'.format([uint(65535)])", "this is an unsigned octal: 177777"),
    ("'%x is 30 in hexadecimal'.format([30])", "1e is 30 in hexadecimal"),
    ("'%X is 20 in hexadecimal'.format([30])", "1E is 20 in hexadecimal"),
    ("'%x is -30 in hexadecimal'.format([-30])", "-1e is -30 in hexadecimal"),
    ("'%X is 6000 in hexadecimal'.format([uint(6000)])", "1770 is 6000 in hexadecimal"),
    ("'%x'.format(['Hello world!'])", "48656c6c6f20776f726c6421"),
    ("'%X'.format(['Hello world!'])", "48656C6C6F20776F726C6421"),
    ("'%x'.format([b'byte string'])", "6279746520737472696e67"),
    ("'%X'.format([b'byte string'])", "6279746520737472696E67"),
    ("'%.6e'.format([1052.032911275])", "1.052033\u202f\u00d7\u202f10\u2070\u00b3"),
    ("'%f'.format([2.71828])", "2.718280"),
    # x/text's English formatting groups thousands (its documented Println(123456.78) -> 123,456.78)
    ("'%.2f GiB, %.1f'.format([1234567.891, -1000.0])", "1,234,567.89 GiB, -1,000.0"),
    ("'%e'.format([2.71828])", "2.718280\u202f\u00d7\u202f10\u2070\u2070"),
    ("'%s'.format([2.71])", "2.71"),
    ("'%s'.format([[2.71]])", "[2.710000]"),
    ("'%s'.format([0.000000002])", "2e-09"),
    ("'%s'.format([[0.000000002]])", "[0.000000]"),
    ("'%f'.format(['NaN'])", "NaN"),
    ("'%f'.format(['Infinity'])", "∞"),
    ("'%f'.format(['-Infinity'])", "-∞"),
    ("'%s'.format([double('NaN')])", "NaN"),
    ("'%s'.format([double('Inf')])", "+Inf"),
    ("'%s'.format([double('-Inf')])", "-Inf"),
    ("'%s'.format([[double('NaN'), double('+Inf'), double('-Inf')]])", '["NaN", "+Inf", "-Inf"]'),
    ("'%d'.format([uint(64)])", "64"),
    ("'null: %s'.format([null])", "null: null"),
    ("'%s'.format([999999999999])", "999999999999"),
    ("'some bytes: %s'.format([b'xyz'])", "some bytes: xyz"),
    ("'%s'.format([timestamp('2023-02-03T23:31:20+00:00')])", "2023-02-03T23:31:20Z"),
    ("'%s'.format([duration('1h45m47s')])", "6347s"),
    ("'%s'.format([['abc', 3.14, null, [9, 8, 7, 6], timestamp('2023-02-03T23:31:20Z')]])",
     '["abc", 3.140000, null, [9, 8, 7, 6], timestamp("2023-02-03T23:31:20Z")]'),
    ("'%s'.format([{'key1': b'xyz', 'key5': null, 'key2': duration('2h'), 'key4': true, 'key3': 2.71828}])",
     '{"key1":b"xyz", "key2":duration("7200s"), "key3":2.718280, "key4":true, "key5":null}'),
    ("'true bool: %s, false bool: %s'.format([true, false])", "true bool: true, false bool: false"),
    ("'%s %s'.format([1000000.0, 123456.0])", "1e+06 123456"),
    ("'%s'.format([dyn([6, 4.2, 'a string'])])", '[6, 4.200000, "a string"]'),
    # RFC3339Nano trims the fraction; Go's %q writes a byte that is no UTF-8 as \x..
    ("'%s'.format([timestamp('2023-02-03T23:31:20.500Z')])", "2023-02-03T23:31:20.5Z"),
    ("'%s'.format([[timestamp('2023-02-03T23:31:20.120Z'), b'\\xff\\x01a']])",
     '[timestamp("2023-02-03T23:31:20.12Z"), b"\\xff\\x01a"]'),
]
FORMAT_ERRORS = [
    ("'%a'.format([1])", 'unrecognized formatting clause "a"|unrecognized formatting clause .a.'),
    ("'%d %d %d'.format([0, 1])", "takes 3 arguments, 2 supplied"),  # a constant format string: at compile time
    ("'string is %b'.format(['abc'])", "only integers and bools can be formatted as binary"),
    ("'%d'.format([duration('30m2s')])", "decimal clause can only be used on integers"),
    ("'octal: %o'.format(['a string'])", "octal clause can only be used on integers"),
    ("'double is %x'.format([0.5])", "only integers, byte buffers, and strings can be formatted as hex"),
    ("'double is %E'.format([0.5])", "unrecognized formatting clause"),
    ("'null: %d'.format([null])", "decimal clause can only be used on integers"),
    ("'null: %e'.format([null])", "scientific clause can only be used on doubles"),
    ("'null: %f'.format([null])", "fixed-point clause can only be used on doubles"),
    ("'null: %x'.format([null])", "can be formatted as hex"),
    ("'null: %b'.format([null])", "formatted as binary"),
    ("'null: %o'.format([null])", "octal clause"),
    ("'int is %f'.format([5])", "fixed-point clause can only be used on doubles"),
    ("'filler %'.format([])", "takes 1 arguments, 0 supplied"),
    ("'double is %.34'.format([5.0])", "could not find end of precision specifier"),
    ("'%s'.format([quantity('1Gi')])", "string clause can only be used on"),
]

LISTS_EXT = [
    ("[1, 2, 3, 4].slice(0, 4)", [1, 2, 3, 4]),
    ("[1, 2, 3, 4].slice(0, 0) + [1, 2, 3, 4].slice(1, 1) + [1, 2, 3, 4].slice(4, 4)", []),
    ("[1, 2, 3, 4].slice(1, 3)", [2, 3]),
    ("[].flatten()", []),
    ("[dyn(1), dyn([dyn(2), dyn([3, 4])])].flatten()", [1, 2, [3, 4]]),
    ("[dyn(1), dyn(2), dyn([]), dyn([]), dyn([3, 4])].flatten()", [1, 2, 3, 4]),
    ("[dyn(1), dyn([dyn(2), dyn([3, 4])])].flatten(2)", [1, 2, 3, 4]),
    ("[dyn(1), dyn([dyn(2), dyn([dyn(3), dyn([4])])])].flatten(2)", [1, 2, 3, [4]]),
    ("[].sort()", []),
    ("[4, 3, 2, 1].sort()", [1, 2, 3, 4]),
    ("['d', 'a', 'b', 'c'].sort()", ["a", "b", "c", "d"]),
    ("[b'c', b'a'].sort() == [b'a', b'c']", True),
    ("[duration('2s'), duration('1s')].sort() == [duration('1s'), duration('2s')]", True),
    ("[].distinct()", []),
    ("[-2, 5, -2, 1, 1, 5, -2, 1].distinct()", [-2, 5, 1]),
    ("['c', 'a', 'a', 'b', 'a', 'b', 'c', 'c'].distinct()", ["c", "a", "b"]),
    ("[dyn(1), dyn(2.0), dyn('c'), dyn(3), dyn('c'), dyn(1)].distinct()", [1, 2.0, "c", 3]),
    ("[dyn(1), dyn(1.0), dyn(2), dyn(2u)].distinct()", [1, 2]),
    ("[[1], [1], [2]].distinct()", [[1], [2]]),
    ("[5, 1, 2, 3].reverse()", [3, 2, 1, 5]),
    ("[].reverse()", []),
    ("lists.range(4)", [0, 1, 2, 3]),
    ("lists.range(0)", []),
]
LISTS_EXT_ERRORS = [
    ("[1, 2, 3, 4].slice(3, 0)", r"cannot slice\(3, 0\), start index must be less than or equal to end index"),
    ("[1, 2, 3, 4].slice(0, 10)", r"cannot slice\(0, 10\), list is length 4"),
    ("[1, 2, 3, 4].slice(-5, 10)", r"cannot slice\(-5, 10\), negative indexes not supported"),
    ("[dyn(1), dyn([dyn(2), dyn([dyn(3), dyn([4])])])].flatten(-1)", "level must be non-negative"),
    ("[dyn('d'), dyn(3), dyn(2), dyn('c')].sort()", "list elements must have the same type"),
    ("[dyn(1), dyn(2.0)].sort()", "list elements must have the same type"),
]

SETS = [
    ("sets.contains([], [])", True),
    ("sets.contains([1], [])", True),
    ("sets.contains([], [1])", False),
    ("sets.contains([1, 2, 3, 4], [2, 3])", True),
    ("sets.contains([1, 2, 3], [3, 2, 1])", True),
    ("sets.contains([2, 3], [1])", False),
    ("sets.contains([dyn(1)], [dyn(1.0), dyn(1u)])", True),
    ("sets.contains([[1], [2, 3]], [[2, 3]])", True),
    ("sets.contains([{'a': 1}], [{'a': 1}])", True),
    ("sets.contains([{'a': 1}], [{'a': 2}])", False),
    ("sets.equivalent([], [])", True),
    ("sets.equivalent([1], [1, 1])", True),
    ("sets.equivalent([dyn(1), dyn(2), dyn(3)], [dyn(3u), dyn(2.0), dyn(1)])", True),
    ("sets.equivalent([1, 2], [2, 2, 2])", False),
    ("sets.intersects([dyn(1)], [dyn(1.0), dyn(2)])", True),
    ("sets.intersects([], [])", False),
    ("sets.intersects([1], [])", False),
    ("sets.intersects([dyn([1]), dyn([2, 3])], [dyn([1, 2]), dyn([dyn(2), dyn(3.0)])])", True),
]

REGEX = [
    ("'abc 123'.find('[0-9]+')", "123"),
    ("'abc 123'.find('xyz')", ""),
    ("'123 abc 456'.findAll('[0-9]+')", ["123", "456"]),
    ("'123 abc 456'.findAll('[0-9]+', 0)", []),
    ("'123 abc 456'.findAll('[0-9]+', 1)", ["123"]),
    ("'123 abc 456'.findAll('[0-9]+', -1)", ["123", "456"]),
    ("'123 abc 456'.findAll('xyz')", []),
    ("'aaa'.findAll('a*')", ["aaa"]),
    ("'abc'.findAll('')", ["", "", "", ""]),
    ("'baaab'.findAll('a*')", ["", "aaa", ""]),  # Go drops the empty match right after "aaa"
]
REGEX_ERRORS = [
    ("'abc'.find('[')", "invalid regular expression"),  # a constant pattern: refused at compile time
    ("'abc'.findAll('(')", "invalid regular expression"),
]

TABLES = STRINGS + STRINGS_PAST_THE_END + FORMAT + LISTS_EXT + SETS + REGEX
ERRORS = STRINGS_ERRORS + FORMAT_ERRORS + LISTS_EXT_ERRORS + REGEX_ERRORS


# cel-go's ext/math_test.go and ext/encoders_test.go: built into the C++ runtime; cel-python refuses them
# at compile time with a clear error (the backend convention), never a wrong value
MATH_ENCODERS = [
    ("math.least(-1, 0)", -1), ("math.greatest([1, 2, 3])", 3), ("math.greatest(1, 2.5)", 2.5),
    ("math.ceil(1.2)", 2.0), ("math.floor(-1.2)", -2.0), ("math.round(1.5)", 2.0), ("math.round(-1.5)", -2.0),
    ("math.trunc(-1.7)", -1.0), ("math.abs(-1)", 1), ("math.sign(-2.5)", -1.0), ("math.isNaN(0.0/0.0)", True),
    ("math.isInf(1.0/0.0)", True), ("math.isFinite(1.0)", True), ("math.bitOr(1, 2)", 3),
    ("math.bitAnd(3, 5)", 1), ("math.bitXor(3, 5)", 6), ("math.bitNot(1)", -2), ("math.bitShiftLeft(1, 2)", 4),
    ("math.bitShiftRight(-1024, 3)", 2305843009213693824), ("base64.encode(b'hello')", "aGVsbG8="),
    ("base64.decode('aGVsbG8=')", b"hello"), ("base64.decode('aGVsbG8')", b"hello"),
]


@pytest.mark.parametrize("expression,expected", MATH_ENCODERS)
def test_math_and_encoders_on_the_cpp_runtime(cpp, expression, expected):
    assert cpp.compile(expression).evaluate({}) == expected


def test_cel_python_refuses_math_and_encoders_clearly():
    with pytest.raises(CelError, match="not supported by the cel-python backend"):
        CelCompiler("cel-python").compile("math.greatest(1, 2)")
