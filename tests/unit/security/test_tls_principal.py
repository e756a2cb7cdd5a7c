"""``ssl.principal.mapping.rules`` (Kafka's ``SslPrincipalMapper``, its test cases) and the
certificate subject as Java's ``X500Principal.getName()`` writes it (RFC 2253)."""

from __future__ import annotations

import pytest

from franz.errors import InvalidConfigurationError
from franz.security.principal import ANONYMOUS, KafkaPrincipal
from franz.security.tls_principal import (
    NoMatchingRuleError,
    SslPrincipalMapper,
    rfc2253_name,
    ssl_principal,
)

# getpeercert()["subject"] of a certificate made with -subj /C=DE/O=Franz/OU=clients/CN=alice
ALICE = (
    (("countryName", "DE"),),
    (("organizationName", "Franz"),),
    (("organizationalUnitName", "clients"),),
    (("commonName", "alice"),),
)


def test_rfc2253_reverses_the_rdns_and_uses_javas_keywords() -> None:
    assert rfc2253_name(ALICE) == "CN=alice,OU=clients,O=Franz,C=DE"


def test_rfc2253_escapes_special_characters_and_joins_multi_valued_rdns() -> None:
    subject = (
        (("commonName", "Smith, John"), ("userId", "js")),
        (("organizationName", " lead+trail "),),
        (("localityName", "#x"),),
    )
    assert rfc2253_name(subject) == "L=\\#x,O=\\ lead\\+trail\\ ,CN=Smith\\, John+UID=js"


def test_rfc2253_writes_email_address_as_its_oid_and_der_hex() -> None:
    subject = ((("emailAddress", "a@b.c"),), (("commonName", "a"),))
    assert rfc2253_name(subject) == "CN=a,1.2.840.113549.1.9.1=#16056140622e63"


def test_rfc2253_equals_javas_x500_principal_name() -> None:
    # getpeercert()["subject"] of a certificate made with openssl -multivalue-rdn -subj
    # "/C=DE/ST=Berlin/L=Berlin/O=Franz, Inc./OU=a+OU=b/CN=#Smith \"J\" <x>;/
    # emailAddress=js@example.com/DC=example/UID=js1", and what Java 17's
    # X509Certificate.getSubjectX500Principal().getName() printed for that certificate.
    subject = (
        (("countryName", "DE"),),
        (("stateOrProvinceName", "Berlin"),),
        (("localityName", "Berlin"),),
        (("organizationName", "Franz, Inc."),),
        (("organizationalUnitName", "a"), ("organizationalUnitName", "b")),
        (("commonName", '#Smith "J" <x>;'),),
        (("emailAddress", "js@example.com"),),
        (("domainComponent", "example"),),
        (("userId", "js1"),),
    )
    java = (
        "UID=js1,DC=example,1.2.840.113549.1.9.1=#160e6a73406578616d706c652e636f6d,"
        'CN=\\#Smith \\"J\\" \\<x\\>\\;,OU=a+OU=b,O=Franz\\, Inc.,L=Berlin,ST=Berlin,C=DE'
    )
    assert rfc2253_name(subject) == java


def test_default_rule_keeps_the_name() -> None:
    assert SslPrincipalMapper("DEFAULT").get_name("CN=alice,O=Franz") == "CN=alice,O=Franz"


@pytest.mark.parametrize(
    ("rules", "name", "expected"),
    [
        # SslPrincipalMapperTest.testSslPrincipalMapper
        (
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT",
            "CN=kafka1,OU=ServiceUsers,O=Org,C=US",
            "kafka1",
        ),
        (
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT",
            "CN=Kafka2,OU=Users,O=Org,C=US",
            "CN=Kafka2,OU=Users,O=Org,C=US",
        ),
        (
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,DEFAULT",
            "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Cupertino,ST=CA,C=US",
            "duke@javasoft",
        ),
        (
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U,DEFAULT",
            "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Cupertino,ST=CA,C=US",
            "DUKE@JAVASOFT",
        ),
        ("RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U", "cn=a,ou=b,dc=c,dc=d", "A@B"),
        # A rule with a comma inside its pattern, then spaces around the separators.
        ("RULE:^CN=([^,]*),OU=x$/$1/ ,  DEFAULT", "CN=y,OU=z", "CN=y,OU=z"),
        # An escaped slash in the replacement.
        ("RULE:^CN=(.*)$/a\\/$1/", "CN=b", "a/b"),
    ],
)
def test_rules_as_kafkas(rules: str, name: str, expected: str) -> None:
    assert SslPrincipalMapper(rules).get_name(name) == expected


def test_no_matching_rule_is_an_error() -> None:
    with pytest.raises(NoMatchingRuleError, match="No rules apply to CN=x"):
        SslPrincipalMapper("RULE:^CN=y$/y/").get_name("CN=x")


@pytest.mark.parametrize(
    "rules",
    [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "rule:CN=(.*?),OU=ServiceUsers.*/$1/",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1/L/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/L",
        "RULE:CN=(.*?),OU=ServiceUsers.*/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/LU",
    ],
)
def test_invalid_rules_are_refused(rules: str) -> None:
    # SslPrincipalMapperTest.testInvalidRules
    with pytest.raises(InvalidConfigurationError, match="Invalid rule"):
        SslPrincipalMapper(rules)


def test_principal_is_anonymous_without_a_certificate() -> None:
    mapper = SslPrincipalMapper()
    assert ssl_principal(None, mapper) == ANONYMOUS
    assert ssl_principal({}, mapper) == ANONYMOUS


def test_principal_is_the_mapped_subject() -> None:
    mapper = SslPrincipalMapper("RULE:^CN=([^,]*),.*$/$1/U")
    assert ssl_principal({"subject": ALICE}, mapper) == KafkaPrincipal("User", "ALICE")
