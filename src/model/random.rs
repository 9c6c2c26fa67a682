//! Names no one can guess or repeat: tokens, command marks, socket names. Each is bytes from
//! the system's randomness, as lowercase hex.

/// `bytes` random bytes as hex (twice as many characters). Panics when the system has no
/// randomness: a guessable token or name is worse than none.
pub fn hex(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).expect("the system has no randomness");
    buffer.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_name_is_hex_of_its_length_and_new() {
        let (a, b) = (super::hex(16), super::hex(16));
        assert_eq!(a.len(), 32);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }
}
