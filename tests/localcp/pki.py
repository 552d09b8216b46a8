"""Certificates and keys for the local control plane (a throw-away CA per run)."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.TraditionalOpenSSL,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _write_cert(path: Path, cert) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _name(cn: str, orgs=()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    return x509.Name(attrs)


class PKI:
    """Writes ca.crt/ca.key, serving and client certificates, and the service-account key pair."""

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        now = datetime.datetime.now(datetime.timezone.utc)
        self._not_before = now - datetime.timedelta(minutes=5)
        self._not_after = now + datetime.timedelta(days=7)
        self.ca_key = _key()
        ca_name = _name("calico-ops-local-ca")
        self.ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
                        .public_key(self.ca_key.public_key()).serial_number(x509.random_serial_number())
                        .not_valid_before(self._not_before).not_valid_after(self._not_after)
                        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False,
                                                     False), critical=True)
                        .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.ca_key.public_key()),
                                       critical=False)
                        .sign(self.ca_key, hashes.SHA256()))
        self.ca_path = self.dir / "ca.crt"
        _write_cert(self.ca_path, self.ca_cert)
        _write_key(self.dir / "ca.key", self.ca_key)

    def issue(self, name: str, cn: str, orgs=(), server_names=(), server_ips=(), client=True):
        """Issue a certificate; return (cert_path, key_path)."""
        key = _key()
        builder = (x509.CertificateBuilder().subject_name(_name(cn, orgs))
                   .issuer_name(self.ca_cert.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(self._not_before).not_valid_after(self._not_after)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   # what kubeadm's certificates carry, and Python 3.13's default TLS verification (VERIFY_X509_STRICT)
                   # requires of a certificate issued by a CA: the issuer's key identifier
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.ca_key.public_key()),
                                  critical=False)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
        usages = []
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        if server_names or server_ips:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
            sans = [x509.DNSName(n) for n in server_names]
            sans += [x509.IPAddress(ipaddress.ip_address(i)) for i in server_ips]
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        cert = builder.sign(self.ca_key, hashes.SHA256())
        cert_path, key_path = self.dir / f"{name}.crt", self.dir / f"{name}.key"
        _write_cert(cert_path, cert)
        _write_key(key_path, key)
        return cert_path, key_path

    def service_account_keys(self):
        """RSA key pair that signs service-account tokens; return (private_path, public_path)."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        priv, pub = self.dir / "sa.key", self.dir / "sa.pub"
        _write_key(priv, key)
        pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo))
        return priv, pub


def serving_names():
    return ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local"]
