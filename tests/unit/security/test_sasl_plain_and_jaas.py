"""PLAIN (``franz.security.sasl_plain``) and the JAAS parser (``franz.security.jaas``)."""

from __future__ import annotations

import pytest

from franz.security.jaas import parse_jaas_config, parse_jaas_modules
from franz.security.sasl_errors import SaslAuthenticationError
from franz.security.sasl_plain import PlainMessageError, PlainSaslServer, plain_users

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" '
    'user_alice="alice-secret";'
)


def test_kafka_example_jaas_config_gives_the_users() -> None:
    module = parse_jaas_config(JAAS)
    assert module.login_module == "org.apache.kafka.common.security.plain.PlainLoginModule"
    assert module.flag == "required"
    assert plain_users(module.options) == {"admin": "admin-secret", "alice": "alice-secret"}
    assert "secret" not in repr(module)


def test_jaas_quotes_escapes_bare_words_and_newlines() -> None:
    module = parse_jaas_config('x.Module  optional\n  user_a="p;w=d \\"q\\""\n user_b=bare ;')
    assert module.options == {"user_a": 'p;w=d "q"', "user_b": "bare"}


@pytest.mark.parametrize(
    "text",
    [
        'x.Module required user_a="x"',  # no semicolon
        'x.Module sometimes user_a="x";',  # bad flag
        "x.Module required user_a=;",
        "x.Module required;y.Module required;",  # two modules
        "",
    ],
)
def test_bad_jaas_configs_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_jaas_config(text)


def test_two_modules_parse_as_a_list() -> None:
    assert len(parse_jaas_modules("a.B required;c.D optional k=v;")) == 2


def test_plain_accepts_the_right_password() -> None:
    server = PlainSaslServer({"alice": "alice-secret"})
    assert server.evaluate(b"\0alice\0alice-secret") == b""
    assert server.complete and server.authorization_id == "alice"


@pytest.mark.parametrize("token", [b"\0alice\0wrong", b"\0mallory\0alice-secret"])
def test_plain_wrong_password_and_unknown_user_look_the_same(token: bytes) -> None:
    with pytest.raises(SaslAuthenticationError) as info:
        PlainSaslServer({"alice": "alice-secret"}).evaluate(token)
    assert str(info.value) == "Authentication failed: Invalid username or password"


@pytest.mark.parametrize("token", [b"", b"\0\0pw", b"\0alice\0", b"garbage"])
def test_plain_incomplete_messages_fail(token: bytes) -> None:
    with pytest.raises(PlainMessageError):
        PlainSaslServer({"alice": "alice-secret"}).evaluate(token)


def test_plain_authorization_id_must_be_the_user() -> None:
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        PlainSaslServer({"alice": "alice-secret"}).evaluate(b"bob\0alice\0alice-secret")
    server = PlainSaslServer({"alice": "alice-secret"})
    server.evaluate(b"alice\0alice\0alice-secret")
    assert server.authorization_id == "alice"
