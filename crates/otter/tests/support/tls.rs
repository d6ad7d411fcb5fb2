//! Certificates for the TLS distribution tests, made by the test (rcgen): a CA, and two
//! node certificates it signs naming this host (`-sname`'s short host name,
//! `localhost` and 127.0.0.1) on one key, one valid and one that expired in 2020, with
//! the PEM files an otter node reads and the `-ssl_dist_optfile`s an
//! `erl -proto_dist inet_tls` node reads, in a directory removed when the [`Pki`] is
//! dropped.
//!
//! Used as `#[path = "support/tls.rs"] mod tls;` next to `support/erlang.rs`.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use crate::erlang;

/// A CA and one node certificate it signed, as files.
pub struct Pki {
    dir: PathBuf,
}

impl Pki {
    /// A new CA named `ca_name` and a node certificate for this host.
    pub fn new(ca_name: &str) -> Pki {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "otter-tls-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();

        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, ca_name);
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, ca_key);

        let names = vec![
            erlang::short_host(),
            "localhost".to_string(),
            "127.0.0.1".to_string(),
        ];
        let key = KeyPair::generate().unwrap();
        let mut node = CertificateParams::new(names).unwrap();
        node.distinguished_name
            .push(DnType::CommonName, "otter test node");
        let cert = node.signed_by(&key, &issuer).unwrap();
        node.not_before = rcgen::date_time_ymd(2019, 1, 1);
        node.not_after = rcgen::date_time_ymd(2020, 1, 1);
        let expired = node.signed_by(&key, &issuer).unwrap();

        std::fs::write(dir.join("ca.pem"), ca_cert.pem()).unwrap();
        std::fs::write(dir.join("node.pem"), cert.pem()).unwrap();
        std::fs::write(dir.join("expired.pem"), expired.pem()).unwrap();
        std::fs::write(dir.join("node.key"), key.serialize_pem()).unwrap();
        for (conf, certfile) in [
            ("ssl_dist.conf", "node.pem"),
            ("expired.conf", "expired.pem"),
        ] {
            let side = |extra: &str| {
                format!(
                    "[{{certfile, {:?}}}, {{keyfile, {:?}}}, {{cacertfile, {:?}}}, \
                     {{verify, verify_peer}}{extra}]",
                    dir.join(certfile).display().to_string(),
                    dir.join("node.key").display().to_string(),
                    dir.join("ca.pem").display().to_string(),
                )
            };
            let optfile = format!(
                "[{{server, {}}}, {{client, {}}}].\n",
                side(", {fail_if_no_peer_cert, true}"),
                side("")
            );
            std::fs::write(dir.join(conf), optfile).unwrap();
        }
        Pki { dir }
    }

    pub fn cert(&self) -> PathBuf {
        self.dir.join("node.pem")
    }

    pub fn key(&self) -> PathBuf {
        self.dir.join("node.key")
    }

    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// The node certificate that expired in 2020 (same key, same CA).
    pub fn expired_cert(&self) -> PathBuf {
        self.dir.join("expired.pem")
    }

    /// The `-ssl_dist_optfile` for `erl`.
    pub fn optfile(&self) -> PathBuf {
        self.dir.join("ssl_dist.conf")
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// An Erlang node with TLS distribution on these certificates.
    pub fn erl(&self, setup: &str) -> erlang::Node {
        self.erl_with("ssl_dist.conf", setup)
    }

    /// An Erlang node with TLS distribution on the expired certificate.
    pub fn erl_expired(&self, setup: &str) -> erlang::Node {
        self.erl_with("expired.conf", setup)
    }

    fn erl_with(&self, conf: &str, setup: &str) -> erlang::Node {
        erlang::Node::builder("erl")
            .arg("-proto_dist")
            .arg("inet_tls")
            .arg("-ssl_dist_optfile")
            .arg(&self.dir.join(conf).display().to_string())
            .setup(setup)
            .start()
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
