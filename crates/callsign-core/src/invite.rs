//! Invite codes: what an owner reads out or pastes to a new teammate, who redeems it once with
//! a handle of their own (`callsign join --code …`).
//!
//! A code is 80 random bits in Crockford's base 32, in four groups of four (`7KQ2-M9XD-…`):
//! no `I L O U`, so it survives being read aloud or typed from a screen. Reading one forgives
//! case, spaces and dashes, and takes `O` for `0` and `I`/`L` for `1`.

/// Crockford's base-32 alphabet.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/// Characters in a code, without its dashes.
pub const LEN: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{input:?} is not an invite code: a code is 16 letters and digits, such as 7KQ2-M9XD-4TRA-Z0PB"
)]
pub struct InviteCodeError {
    pub input: String,
}

/// The code for 10 random bytes, grouped for reading: `XXXX-XXXX-XXXX-XXXX`.
pub fn format(bytes: [u8; 10]) -> String {
    let mut bits: u128 = 0;
    for b in bytes {
        bits = (bits << 8) | u128::from(b);
    }
    let chars: Vec<char> = (0..LEN)
        .map(|i| {
            let shift = 5 * (LEN - 1 - i);
            char::from(ALPHABET[((bits >> shift) & 31) as usize])
        })
        .collect();
    chars
        .chunks(4)
        .map(|g| g.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join("-")
}

/// The canonical form of a typed code (16 upper-case characters, no dashes): what the server
/// hashes and looks up.
pub fn normalize(input: &str) -> Result<String, InviteCodeError> {
    let err = || InviteCodeError {
        input: input.to_owned(),
    };
    let mut out = String::with_capacity(LEN);
    for c in input.chars().filter(|c| !matches!(c, '-' | ' ')) {
        let c = match c.to_ascii_uppercase() {
            'O' => '0',
            'I' | 'L' => '1',
            c => c,
        };
        if !c.is_ascii() || !ALPHABET.contains(&(c as u8)) {
            return Err(err());
        }
        out.push(c);
    }
    if out.len() != LEN {
        return Err(err());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_reads_back_however_it_is_typed() {
        let code = format([0xff, 0, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0]);
        assert_eq!(code.len(), LEN + 3);
        assert_eq!(code.matches('-').count(), 3);
        let canon = normalize(&code).unwrap();
        assert_eq!(canon, code.replace('-', ""));
        assert_eq!(normalize(&code.to_lowercase()).unwrap(), canon);
        assert_eq!(normalize(&code.replace('-', " ")).unwrap(), canon);
        assert_eq!(format([0; 10]), "0000-0000-0000-0000");
        assert_eq!(
            normalize("oooo-iiii-llll-0000").unwrap(),
            "0000111111110000"
        );
    }

    #[test]
    fn different_bytes_give_different_codes() {
        let a = format([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        let b = format([1, 2, 3, 4, 5, 6, 7, 8, 9, 11]);
        assert_ne!(normalize(&a).unwrap(), normalize(&b).unwrap());
    }

    #[test]
    fn what_is_not_a_code_is_refused() {
        for bad in [
            "",
            "ABCD-EFGH",
            "ABCD-EFGH-JKMN-PQRSTV",
            "ABCD-EFGH-JKMN-PQR!",
            "ÄBCD-EFGH-JKMN-PQRS",
            "UUUU-EFGH-JKMN-PQRS",
        ] {
            assert!(normalize(bad).is_err(), "{bad}");
        }
    }
}
