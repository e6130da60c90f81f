//! TaskChampion's encryption envelope, as its sync protocol documents it
//! (<https://gothenburgbitfactory.org/taskchampion/encryption.html>), and the server key that
//! keeps each account's Taskwarrior secret at rest.
//!
//! A sync client encrypts every version and snapshot before it leaves the machine; the server
//! takes part as a replica of the account, so it must read and write the same envelope:
//! ChaCha20-Poly1305 under a key derived with PBKDF2-HMAC-SHA256 (600,000 rounds) from the
//! encryption secret, salted with the client id; the bytes are `01 ‖ nonce (12) ‖ ciphertext ‖
//! tag`, and the additional data is `01 ‖ version id` (the parent version for a history
//! segment, the version itself for a snapshot). TaskChampion's own implementation is private to
//! its crate, so this one follows the document, with `ring` (the library TaskChampion uses);
//! the end-to-end tests check it against TaskChampion's client.
use std::num::NonZeroU32;

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, CHACHA20_POLY1305, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};
use uuid::Uuid;

const PBKDF2_ROUNDS: u32 = 600_000;
const ENVELOPE_VERSION: u8 = 1;
const TASK_APP_ID: u8 = 1;
/// Bytes of a Taskwarrior encryption secret the server generates (shown as 64 hex digits).
pub const SECRET_LEN: usize = 32;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EnvelopeError {
    #[error("the encrypted payload is too short")]
    TooShort,
    #[error("unknown encryption envelope version {0}")]
    Version(u8),
    #[error("the payload does not decrypt with this account's secret")]
    Open,
    #[error("the system's random number generator failed")]
    Random,
    #[error("the server key must be {} hex digits", SECRET_LEN * 2)]
    BadKey,
}

/// Seals and opens one account's versions and snapshots.
pub struct Cryptor {
    key: LessSafeKey,
}

impl Cryptor {
    /// Derives the key of `client_id` and `secret` (PBKDF2: a fraction of a second; callers
    /// keep the result).
    pub fn new(client_id: Uuid, secret: &[u8]) -> Cryptor {
        let mut key = [0u8; 32];
        ring::pbkdf2::derive(
            ring::pbkdf2::PBKDF2_HMAC_SHA256,
            NonZeroU32::new(PBKDF2_ROUNDS).expect("non-zero"),
            client_id.as_bytes(),
            secret,
            &mut key,
        );
        Cryptor {
            key: LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, &key).expect("32 bytes")),
        }
    }

    /// The envelope of `payload` bound to `version_id`.
    pub fn seal(&self, version_id: Uuid, payload: &[u8]) -> Result<Vec<u8>, EnvelopeError> {
        seal_with(&self.key, &aad(version_id), payload)
    }

    /// The payload of an envelope bound to `version_id`.
    pub fn open(&self, version_id: Uuid, sealed: &[u8]) -> Result<Vec<u8>, EnvelopeError> {
        open_with(&self.key, &aad(version_id), sealed)
    }
}

fn aad(version_id: Uuid) -> [u8; 17] {
    let mut a = [0u8; 17];
    a[0] = TASK_APP_ID;
    a[1..].copy_from_slice(version_id.as_bytes());
    a
}

fn seal_with(key: &LessSafeKey, aad: &[u8], payload: &[u8]) -> Result<Vec<u8>, EnvelopeError> {
    let mut nonce = [0u8; NONCE_LEN];
    SystemRandom::new()
        .fill(&mut nonce)
        .map_err(|_| EnvelopeError::Random)?;
    let mut body = payload.to_vec();
    key.seal_in_place_append_tag(
        Nonce::assume_unique_for_key(nonce),
        Aad::from(aad),
        &mut body,
    )
    .map_err(|_| EnvelopeError::Random)?;
    let mut out = Vec::with_capacity(1 + NONCE_LEN + body.len());
    out.push(ENVELOPE_VERSION);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&body);
    Ok(out)
}

fn open_with(key: &LessSafeKey, aad: &[u8], sealed: &[u8]) -> Result<Vec<u8>, EnvelopeError> {
    if sealed.len() <= 1 + NONCE_LEN {
        return Err(EnvelopeError::TooShort);
    }
    if sealed[0] != ENVELOPE_VERSION {
        return Err(EnvelopeError::Version(sealed[0]));
    }
    let mut nonce = [0u8; NONCE_LEN];
    nonce.copy_from_slice(&sealed[1..=NONCE_LEN]);
    let mut body = sealed[1 + NONCE_LEN..].to_vec();
    let plain = key
        .open_in_place(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad),
            &mut body,
        )
        .map_err(|_| EnvelopeError::Open)?;
    Ok(plain.to_vec())
}

/// The key the admin gives the server (`--taskwarrior-key-file`): 32 bytes as 64 hex digits.
/// It seals each account's Taskwarrior secret in the database, so a copy of the database alone
/// does not reveal the secrets. The server itself can read them, and so the tasks: this is not
/// end-to-end encryption.
pub struct ServerKey(LessSafeKey);

impl ServerKey {
    pub fn parse(text: &str) -> Result<ServerKey, EnvelopeError> {
        let bytes = hex::decode(text.trim()).map_err(|_| EnvelopeError::BadKey)?;
        if bytes.len() != SECRET_LEN {
            return Err(EnvelopeError::BadKey);
        }
        let key = UnboundKey::new(&CHACHA20_POLY1305, &bytes).map_err(|_| EnvelopeError::BadKey)?;
        Ok(ServerKey(LessSafeKey::new(key)))
    }

    /// A new key, as the text to store in the key file.
    pub fn generate() -> Result<String, EnvelopeError> {
        Ok(hex::encode(random_bytes()?))
    }

    /// Seals an account's secret, bound to its client id.
    pub fn seal(&self, client_id: Uuid, secret: &[u8]) -> Result<Vec<u8>, EnvelopeError> {
        seal_with(&self.0, &secret_aad(client_id), secret)
    }

    pub fn open(&self, client_id: Uuid, sealed: &[u8]) -> Result<Vec<u8>, EnvelopeError> {
        open_with(&self.0, &secret_aad(client_id), sealed)
    }
}

fn secret_aad(client_id: Uuid) -> Vec<u8> {
    let mut a = b"callsign taskwarrior secret ".to_vec();
    a.extend_from_slice(client_id.as_bytes());
    a
}

/// [`SECRET_LEN`] bytes from the system's generator.
pub fn random_bytes() -> Result<[u8; SECRET_LEN], EnvelopeError> {
    let mut b = [0u8; SECRET_LEN];
    SystemRandom::new()
        .fill(&mut b)
        .map_err(|_| EnvelopeError::Random)?;
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_payload_opens_only_with_its_key_and_version() {
        let client = Uuid::new_v4();
        let c = Cryptor::new(client, b"secret");
        let v = Uuid::new_v4();
        let sealed = c.seal(v, b"{\"operations\":[]}").unwrap();
        assert_eq!(sealed[0], 1);
        assert_eq!(c.open(v, &sealed).unwrap(), b"{\"operations\":[]}");
        assert_eq!(c.open(Uuid::new_v4(), &sealed), Err(EnvelopeError::Open));
        let other = Cryptor::new(client, b"another secret");
        assert_eq!(other.open(v, &sealed), Err(EnvelopeError::Open));
        let mut bad = sealed.clone();
        bad[0] = 2;
        assert_eq!(c.open(v, &bad), Err(EnvelopeError::Version(2)));
        assert_eq!(c.open(v, &sealed[..10]), Err(EnvelopeError::TooShort));
    }

    #[test]
    fn a_secret_at_rest_opens_with_the_server_key_for_its_client_only() {
        let key = ServerKey::parse(&ServerKey::generate().unwrap()).unwrap();
        let client = Uuid::new_v4();
        let sealed = key.seal(client, b"abc").unwrap();
        assert_eq!(key.open(client, &sealed).unwrap(), b"abc");
        assert!(key.open(Uuid::new_v4(), &sealed).is_err());
        assert!(ServerKey::parse("abcd").is_err());
        assert!(ServerKey::parse(&"zz".repeat(32)).is_err());
    }
}
