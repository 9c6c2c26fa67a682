//! Durations as the config writes them: whole seconds or milliseconds, so a runtime setting
//! can be a [`Duration`](std::time::Duration) and still be read straight from its TOML key (`timeout_secs = 600`).
//! Used with `#[serde(with = "…")]`.

/// A duration written as whole seconds.
pub mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    /// Reads whole seconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_secs)
    }
}

/// A duration written as whole milliseconds.
pub mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    /// Reads whole milliseconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize)]
    struct Both {
        #[serde(with = "secs")]
        a: Duration,
        #[serde(with = "millis")]
        b: Duration,
    }

    #[test]
    fn seconds_and_milliseconds_read_as_durations() {
        let both: Both = serde_json::from_str(r#"{"a": 3, "b": 250}"#).unwrap();
        assert_eq!(both.a, Duration::from_secs(3));
        assert_eq!(both.b, Duration::from_millis(250));
        assert!(serde_json::from_str::<Both>(r#"{"a": -1, "b": 1}"#).is_err());
    }
}
