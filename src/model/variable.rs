//! Environment variable names, by grammar: what may name a variable that reaches an agent,
//! a launcher or a container engine's env file. A name is `[A-Za-z_][A-Za-z0-9_]*` and
//! nothing else: a line break, `=`, `*` or a NUL in one would be read by some consumer as
//! something other than a name (a bare `NAME` line in an env file copies the engine's own
//! variable; `NAME*` copies every variable with that prefix).

/// Whether `name` is a variable name: an ASCII letter or `_`, then letters, digits or `_`.
pub fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `Err` says why `name` is not a variable name (for an error an agent or an operator reads).
pub fn check_name(name: &str) -> Result<(), String> {
    match is_name(name) {
        true => Ok(()),
        false => Err(format!(
            "{name:?} is not a variable name (letters, digits and `_`, not starting with a \
             digit)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_letters_digits_and_underscores_not_starting_with_a_digit() {
        for ok in ["PATH", "_", "a1", "HTTP_PROXY", "x_Y_9"] {
            assert!(is_name(ok), "{ok}");
        }
        for bad in [
            "", "1A", "A-B", "A B", "A=B", "A\nB", "A\rB", "A*", "Ä", "A\0",
        ] {
            assert!(!is_name(bad), "{bad:?}");
            assert!(check_name(bad).unwrap_err().contains("not a variable name"));
        }
    }

    proptest::proptest! {
        /// Every accepted name is made of the grammar's characters only, whatever it is.
        #[test]
        fn an_accepted_name_holds_nothing_but_the_grammar(name in "\\PC{0,12}|[A-Za-z_=\n*0-9 -]{0,12}") {
            if is_name(&name) {
                proptest::prop_assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
                proptest::prop_assert!(!name.starts_with(|c: char| c.is_ascii_digit()));
            }
        }
    }
}
