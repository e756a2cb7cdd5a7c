"""Security: principals, listeners' security protocols, SASL, TLS, ACLs and client quotas
(issue 20). Sans-IO where it can be: the network edge and the broker use it, it never
imports them."""
