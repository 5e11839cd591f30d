"""Go's two ways of quoting a string, which Kubernetes' and Karpenter's messages use: fmt's
%q (strconv.Quote) and the time package's own quote in ParseDuration's errors."""

from __future__ import annotations

import pytest

from nodewright.api import golang
from nodewright.cluster.memory.admission.field_errors import go_value, invalid_error, not_supported


@pytest.mark.parametrize(("text", "quoted"), [
    ("plain", '"plain"'),
    ('say "hi" \\ bye', '"say \\"hi\\" \\\\ bye"'),
    ("tab\tnew\nline", '"tab\\tnew\\nline"'),
    ("nul\x00del\x7f", '"nul\\x00del\\x7f"'),       # JSON would write \\u0000 and keep DEL
    ("café ☕", '"café ☕"'),                          # printable: kept as it is
    ("line\u2028sep", '"line\\u2028sep"'),            # not printable: JSON would keep it
    ("soft\u00adhyphen", '"soft\\u00adhyphen"'),
])
def test_strconv_quote_keeps_printable_characters_and_escapes_the_rest_as_go_does(
        text: str, quoted: str) -> None:
    assert golang.quote(text) == quoted


@pytest.mark.parametrize(("text", "quoted"), [
    ("5m", '"5m"'),
    ('a"b\\c', '"a\\"b\\\\c"'),
    ("é", '"\\xc3\\xa9"'),
    ("☕", '"\\xe2\\x98\\x95"'),
    ("\t", '"\\x09"'),
    ("\x7f", '"\x7f"'),  # DEL is below utf8.RuneSelf and not below ' ': written as it is
])
def test_the_time_package_quotes_every_byte_beyond_ascii(text: str, quoted: str) -> None:
    assert golang.time_quote(text) == quoted


def test_the_in_memory_api_server_quotes_bad_values_and_names_as_apimachinery_does() -> None:
    """field.Error's ErrorBody prints a string value with %q, NotSupported quotes each value
    with strconv.Quote, and the 422's message quotes the name with %q."""
    assert go_value("a\x01b") == '"a\\x01b"'
    assert str(not_supported("spec.x", "b\x01", ["a\u2028"])).endswith(
        'Unsupported value: "b\\x01": supported values: "a\\u2028"')
    assert str(invalid_error("Pod", "we\x01rd", [not_supported("spec.x", "b", ["a"])])) \
        .startswith('Pod "we\\x01rd" is invalid: ')
