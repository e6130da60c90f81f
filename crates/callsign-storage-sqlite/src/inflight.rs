//! Which idempotency keys are being processed right now, in this process.
//!
//! Phase 1 claims the key before it looks at the slot; the reaper claims it before it settles
//! a slot. A second claim fails (`409 request_in_progress`), so phase 2 never runs twice at once
//! for one slot. The claim is released when the [`Claim`] is dropped, on every path.
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use crate::alloc::AccountId;

type Set = Arc<Mutex<HashSet<(AccountId, String)>>>;

#[derive(Clone, Default)]
pub struct InFlight(Set);

pub struct Claim {
    set: Set,
    key: (AccountId, String),
}

impl InFlight {
    pub fn claim(&self, account: AccountId, idem: &str) -> Option<Claim> {
        let key = (account, idem.to_owned());
        let fresh = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone());
        fresh.then(|| Claim {
            set: self.0.clone(),
            key,
        })
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_claim_fails_until_the_first_is_dropped() {
        let f = InFlight::default();
        let a = f.claim(1, "k").unwrap();
        assert!(f.claim(1, "k").is_none());
        assert!(
            f.claim(2, "k").is_some(),
            "another account's key is separate"
        );
        drop(a);
        assert!(f.claim(1, "k").is_some());
    }
}
