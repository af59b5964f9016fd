//! The TLS of a run on pods: a CA made for that run alone, a certificate for its workers
//! (every worker's name, `NAME-I.NAME`) and one for its coordinator, all kept in the run's
//! Secret. Workers accept only a coordinator that presents the run's certificate (mutual TLS)
//! and the coordinator checks the worker's against the run's CA, so the worker token never
//! crosses the pod network in clear and nobody else in the cluster can drive the workers. The
//! CA's key is dropped once both certificates are signed: nothing can issue another.

use crate::exit::Fail;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The Secret's keys of the run's TLS files.
pub const CA: &str = "ca.crt";
pub const WORKER_CERT: &str = "worker.crt";
pub const WORKER_KEY: &str = "worker.key";
pub const COORDINATOR_CERT: &str = "coordinator.crt";
pub const COORDINATOR_KEY: &str = "coordinator.key";

/// The run's TLS files, PEM, by their key in the Secret.
pub struct RunTls {
    pub files: Vec<(&'static str, String)>,
}

/// A CA and the two certificates of the run `name` over `workers` worker pods, valid from a
/// day ago (clocks disagree) for `life` more.
pub fn make(name: &str, workers: usize, life: Duration) -> Result<RunTls, Fail> {
    let bad = |e: rcgen::Error| Fail::input(format!("cannot make the run's certificates: {e}"));
    let (from, until) = validity(life);
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(bad)?;
    ca_params.distinguished_name = named(&format!("brink run {name} CA"));
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    (ca_params.not_before, ca_params.not_after) = (from, until);
    let ca_key = KeyPair::generate().map_err(bad)?;
    let ca = ca_params.self_signed(&ca_key).map_err(bad)?;
    let leaf = |names: Vec<String>, cn: &str, usage: ExtendedKeyUsagePurpose| {
        let mut p = CertificateParams::new(names).map_err(bad)?;
        p.distinguished_name = named(cn);
        p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        p.extended_key_usages = vec![usage];
        (p.not_before, p.not_after) = (from, until);
        let key = KeyPair::generate().map_err(bad)?;
        let cert = p.signed_by(&key, &ca, &ca_key).map_err(bad)?;
        Ok::<_, Fail>((cert.pem(), key.serialize_pem()))
    };
    let (worker, worker_key) = leaf(
        worker_names(name, workers),
        &format!("brink run {name} worker"),
        ExtendedKeyUsagePurpose::ServerAuth,
    )?;
    let (coordinator, coordinator_key) = leaf(
        Vec::new(),
        &format!("brink run {name} coordinator"),
        ExtendedKeyUsagePurpose::ClientAuth,
    )?;
    Ok(RunTls {
        files: vec![
            (CA, ca.pem()),
            (WORKER_CERT, worker),
            (WORKER_KEY, worker_key),
            (COORDINATOR_CERT, coordinator),
            (COORDINATOR_KEY, coordinator_key),
        ],
    })
}

/// The names the coordinator dials its workers by: `NAME-I.NAME` (pod I in the headless
/// Service's subdomain). One name each: a wildcard over a single label is not accepted.
pub fn worker_names(name: &str, workers: usize) -> Vec<String> {
    (1..=workers)
        .map(|i| format!("{name}-{i}.{name}"))
        .collect()
}

fn named(cn: &str) -> DistinguishedName {
    let mut d = DistinguishedName::new();
    d.push(DnType::CommonName, cn);
    d
}

/// From a day ago until `life` after now, to the day.
fn validity(life: Duration) -> (time::OffsetDateTime, time::OffsetDateTime) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let day = |secs: u64| {
        let at = time::OffsetDateTime::from_unix_timestamp(secs.min(253_402_300_799) as i64)
            .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
        rcgen::date_time_ymd(at.year(), at.month() as u8, at.day())
    };
    (
        day(now.saturating_sub(86_400)),
        day(now + life.as_secs() + 86_400),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worker_certificate_names_every_worker_and_the_ca_signs_both() {
        let tls = make("load", 3, Duration::from_secs(3600)).unwrap();
        let get = |k: &str| {
            tls.files
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        for k in [CA, WORKER_CERT, COORDINATOR_CERT] {
            assert!(get(k).starts_with("-----BEGIN CERTIFICATE-----"), "{k}");
        }
        for k in [WORKER_KEY, COORDINATOR_KEY] {
            assert!(get(k).contains("PRIVATE KEY-----"), "{k}");
        }
        assert_eq!(
            worker_names("load", 3),
            ["load-1.load", "load-2.load", "load-3.load"]
        );
        // Two runs never share a CA.
        let other = make("load", 3, Duration::from_secs(3600)).unwrap();
        assert_ne!(other.files[0].1, get(CA));
    }
}
