//! An error's cause, kept whole: an error enum of ours holds the error that caused it (with
//! its own causes) instead of its text, so what reaches the log is the whole chain ("could
//! not send: error sending request: connection refused"), not only its first link.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// The cause of one of our errors: another error (kept, with its `source()` chain), or a
/// sentence where nothing else caused it. Cheap to clone, so errors that are `Clone` can
/// hold one. Shown, it prints the whole chain, each link once.
#[derive(Clone)]
pub struct Cause(Arc<dyn Error + Send + Sync + 'static>);

impl Cause {
    /// The cause `error`, kept with its own causes.
    pub fn new(error: impl Error + Send + Sync + 'static) -> Self {
        Self(Arc::new(error))
    }
}

/// A cause that is only a sentence.
#[derive(Debug)]
struct Said(String);

impl fmt::Display for Said {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Said {}

impl From<String> for Cause {
    fn from(text: String) -> Self {
        Self(Arc::new(Said(text)))
    }
}

impl From<&str> for Cause {
    fn from(text: &str) -> Self {
        Self::from(text.to_owned())
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", Chain(&*self.0))
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl Error for Cause {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0.source()
    }
}

/// An error and each of its causes, joined with ": " (a cause whose text the error's own
/// text already shows is not repeated).
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = self.0.to_string();
        f.write_str(&shown)?;
        let mut next = self.0.source();
        while let Some(cause) = next {
            let text = cause.to_string();
            if !text.is_empty() && !shown.contains(&text) {
                write!(f, ": {text}")?;
                shown.push_str(&text);
            }
            next = cause.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("error sending request")]
    struct Outer(#[source] std::io::Error);

    #[derive(Debug, thiserror::Error)]
    #[error("could not send: {0}")]
    struct Ours(#[source] Cause);

    #[test]
    fn a_cause_shows_its_whole_chain_once_and_stays_the_source() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
        let ours = Ours(Cause::new(Outer(io)));
        assert_eq!(
            ours.to_string(),
            "could not send: error sending request: connection refused"
        );
        // Walked as a chain, no link is said twice.
        assert_eq!(
            Chain(&ours).to_string(),
            "could not send: error sending request: connection refused"
        );
        let source = ours.source().expect("the cause is the source");
        assert_eq!(source.source().unwrap().to_string(), "connection refused");
        let said = Ours("not in room !r".into());
        assert_eq!(said.to_string(), "could not send: not in room !r");
    }
}
