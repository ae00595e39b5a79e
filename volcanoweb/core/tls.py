"""A self-signed certificate for the HTTPS listener (kubectl sends bearer tokens only over TLS)."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

VALID_DAYS = 825


#: The names every certificate covers (the loopback addresses, both families).
LOOPBACK = ("127.0.0.1", "::1", "localhost")
#: Bind-all addresses: no client connects to them by that name.
_ANY_ADDRESS = frozenset({"0.0.0.0", "::", ""})


def certificate_hosts(bind_host: str, allowed_hosts: list[str] | tuple[str, ...] = ()) -> tuple[str, ...]:
    """Return the names a certificate must cover: the bind host, the loopback names and the configured host
    names (``ALLOWED_HOSTS`` without wildcards; ``.example.com`` covers ``example.com``)."""
    names = [bind_host, *LOOPBACK, *(h.lstrip(".") for h in allowed_hosts if h and "*" not in h)]
    return tuple(dict.fromkeys(n for n in names if n not in _ANY_ADDRESS))


def _covers(cert_path: Path, hosts: tuple[str, ...]) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return False
    have = {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} | set(names.get_values_for_type(x509.DNSName))
    return all(str(ipaddress.ip_address(h)) in have if _is_ip(h) else h in have for h in hosts)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def ensure_self_signed(directory: Path, hosts: tuple[str, ...] = LOOPBACK) -> tuple[Path, Path]:
    """Return (certificate, key) paths under ``directory``, creating a self-signed pair on first use, or again
    when the existing certificate does not cover every name in ``hosts`` (its kubeconfigs must then be
    written again: their ``certificate-authority-data`` is the old certificate).

    The certificate is its own CA (``basicConstraints CA:TRUE``), so a kubeconfig can trust it through
    ``certificate-authority-data`` instead of skipping verification.
    """
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "server.crt", directory / "server.key"
    if cert_path.exists() and key_path.exists() and _covers(cert_path, hosts):
        return cert_path, key_path
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "volcanoweb")])
    now = datetime.datetime.now(tz=datetime.UTC)
    alt_names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt_names.append(x509.DNSName(host))
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def https_endpoint(host: str, port: int, cert: Path, key: Path) -> str:
    """Return the Twisted endpoint description daphne listens on for HTTPS."""
    interface = host.replace(":", r"\:")
    return f"ssl:port={port}:interface={interface}:privateKey={key}:certKey={cert}"
