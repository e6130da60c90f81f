//! Change-feed cursors as clients see them: opaque, and valid only for the account they were
//! given to.
//!
//! Inside, the feed is one sequence across all accounts (commit order, so a reader that has
//! seen `seq` has seen every smaller one and a cursor never skips a change); a client that saw
//! those numbers could gauge other accounts' activity from their gaps. So a cursor is the
//! sequence number enciphered with a key of this server and the account id (a 4-round Feistel
//! network over 64 bits whose round function is SHA-256 of the key, the account, the round
//! and the half; a permutation, so distinct numbers give distinct cursors), followed by a
//! 32-bit tag of the same inputs: `c` and 24 hex digits. A cursor that does not decode with
//! the tag intact (another account's, another server's, an integer from before) is
//! `invalid_cursor`, and clients then read the feed from its start.
//!
//! The tag also covers the *rollback epoch*: when the database was last rolled back (a
//! restore, a declared or detected rollback; 0 for never, which leaves the tag as it was). A
//! rollback takes feed positions back, so a position given out before it may name an entry
//! that is not the same, or not there yet: every cursor from before the rollback is then
//! `invalid_cursor`, and each device reads the feed from its start again.
use sha2::{Digest, Sha256};

use callsign_storage::AccountId;

/// The key, from the allocation database (migration 0005).
#[derive(Clone)]
pub struct CursorKey(Vec<u8>);

impl CursorKey {
    pub fn new(key: Vec<u8>) -> CursorKey {
        CursorKey(key)
    }

    fn hash(&self, account: AccountId, label: u8, value: u64) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(&self.0);
        h.update(account.to_le_bytes());
        h.update([label]);
        h.update(value.to_le_bytes());
        h.finalize().into()
    }

    fn round(&self, account: AccountId, round: u8, half: u32) -> u32 {
        let h = self.hash(account, round, u64::from(half));
        u32::from_le_bytes([h[0], h[1], h[2], h[3]])
    }

    fn tag(&self, account: AccountId, seq: u64, epoch: i64) -> u32 {
        let h = match epoch {
            0 => self.hash(account, b't', seq),
            _ => {
                let mut h = Sha256::new();
                h.update(self.hash(account, b't', seq));
                h.update(epoch.to_le_bytes());
                h.finalize().into()
            }
        };
        u32::from_le_bytes([h[0], h[1], h[2], h[3]])
    }

    /// The cursor a client of `account` sees for the feed position `seq` (≥ 0), in the
    /// rollback epoch `epoch`.
    pub fn encode(&self, account: AccountId, seq: i64, epoch: i64) -> String {
        let seq = seq.max(0) as u64;
        let (mut l, mut r) = ((seq >> 32) as u32, seq as u32);
        for i in 0..4 {
            (l, r) = (r, l ^ self.round(account, i, r));
        }
        let enciphered = (u64::from(l) << 32) | u64::from(r);
        format!("c{enciphered:016x}{:08x}", self.tag(account, seq, epoch))
    }

    /// The feed position of a cursor this server gave `account` in the rollback epoch
    /// `epoch`; `None` for anything else.
    pub fn decode(&self, account: AccountId, cursor: &str, epoch: i64) -> Option<i64> {
        let hex = cursor.strip_prefix('c')?;
        if hex.len() != 24 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let enciphered = u64::from_str_radix(&hex[..16], 16).ok()?;
        let tag = u32::from_str_radix(&hex[16..], 16).ok()?;
        let (mut l, mut r) = ((enciphered >> 32) as u32, enciphered as u32);
        for i in (0..4).rev() {
            (l, r) = (r ^ self.round(account, i, l), l);
        }
        let seq = (u64::from(l) << 32) | u64::from(r);
        (self.tag(account, seq, epoch) == tag)
            .then_some(seq)
            .and_then(|s| i64::try_from(s).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> CursorKey {
        CursorKey::new(vec![9; 32])
    }

    #[test]
    fn a_cursor_is_opaque_and_only_its_accounts() {
        let k = key();
        let c = k.encode(1, 42, 0);
        assert_eq!(c.len(), 25);
        assert!(!c.contains("42"), "{c}");
        assert_eq!(k.decode(1, &c, 0), Some(42));
        assert_eq!(k.decode(2, &c, 0), None, "another account's cursor");
        assert_eq!(
            CursorKey::new(vec![8; 32]).decode(1, &c, 0),
            None,
            "another server's"
        );
        assert_eq!(k.decode(1, "42", 0), None, "a cursor from before");
        assert_eq!(k.decode(1, "c", 0), None);
        assert_ne!(k.encode(1, 43, 0), c);
        assert_ne!(k.encode(2, 42, 0), c);
    }

    #[test]
    fn a_rollback_retires_every_earlier_cursor() {
        let k = key();
        let before = k.encode(1, 42, 0);
        assert_eq!(k.decode(1, &before, 1_764_000_000_000), None);
        let after = k.encode(1, 42, 1_764_000_000_000);
        assert_ne!(after, before);
        assert_eq!(k.decode(1, &after, 1_764_000_000_000), Some(42));
        assert_eq!(
            k.decode(1, &after, 1_765_000_000_000),
            None,
            "and the next one"
        );
    }

    #[test]
    fn round_trip_and_every_changed_digit_is_refused() {
        let k = key();
        let seqs = (0..2000i64).chain([i64::MAX, u32::MAX.into(), 1 << 40]);
        for (n, seq) in seqs.enumerate() {
            let account = 1 + (n as i64 % 7);
            let epoch = if n % 2 == 0 { 0 } else { 1_764_000_000_000 };
            let c = k.encode(account, seq, epoch);
            assert_eq!(k.decode(account, &c, epoch), Some(seq));
            let at = 1 + n % 24;
            let mut bytes = c.into_bytes();
            bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
            let changed = String::from_utf8(bytes).unwrap();
            assert_eq!(k.decode(account, &changed, epoch), None, "{changed}");
        }
    }
}
