//! Whether an encrypted event really comes from the user it names. The homeserver vouches
//! for the `sender` of a plain event; for an encrypted one, only the keys do: the room key
//! must belong to a device of that user, and that user's identity must not have changed
//! since it was verified. An event that fails this is refused, however allowed the user it
//! names.

use matrix_sdk::deserialized_responses::{EncryptionInfo, VerificationLevel, VerificationState};

/// How much proof of its sender an encrypted event needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderTrust {
    /// Also refuse events from devices their owner has not signed (cross-signed), and from
    /// devices that cannot be found.
    pub require_cross_signed: bool,
    /// Also refuse events from cross-signed devices whose owner's identity the agent's own
    /// identity has not verified: otherwise a homeserver that gives a user a new identity
    /// of its making, and a device it signs, is believed.
    pub require_verified_identity: bool,
}

/// Why `info` does not prove that `claimed` sent the event it came with; `None`: proven
/// enough for `trust`.
pub fn unproven(info: &EncryptionInfo, claimed: &str, trust: SenderTrust) -> Option<String> {
    if info.sender.as_str() != claimed {
        return Some(format!(
            "its keys belong to {}, not to {claimed}",
            info.sender
        ));
    }
    let level = match &info.verification_state {
        VerificationState::Verified => return None,
        VerificationState::Unverified(level) => level,
    };
    match level {
        VerificationLevel::MismatchedSender => Some(format!(
            "the room key it was encrypted with belongs to a device of another user, not \
             {claimed}"
        )),
        VerificationLevel::VerificationViolation => Some(format!(
            "{claimed}'s identity has changed since it was verified"
        )),
        VerificationLevel::UnverifiedIdentity if trust.require_verified_identity => Some(format!(
            "{claimed}'s identity has not been verified by this agent (this gateway requires \
             verified identities: sign in as the agent and verify {claimed})"
        )),
        // Cross-signed by its owner: who the owner is was not verified by the agent, which
        // no one expects of a bot unless the operator asked for it.
        VerificationLevel::UnverifiedIdentity => None,
        VerificationLevel::UnsignedDevice if trust.require_cross_signed => Some(format!(
            "it comes from a device {claimed} has not verified (this gateway requires \
             cross-signed devices: verify the session in your client's security settings)"
        )),
        VerificationLevel::None(problem) if trust.require_cross_signed => Some(format!(
            "the device it comes from cannot be checked ({problem:?})"
        )),
        VerificationLevel::UnsignedDevice | VerificationLevel::None(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use matrix_sdk::deserialized_responses::{AlgorithmInfo, DeviceLinkProblem};

    fn info(sender: &str, state: VerificationState) -> EncryptionInfo {
        EncryptionInfo {
            sender: sender.try_into().unwrap(),
            sender_device: Some("DEVICE".into()),
            forwarder: None,
            algorithm_info: AlgorithmInfo::MegolmV1AesSha2 {
                curve25519_key: "key".into(),
                sender_claimed_keys: Default::default(),
                session_id: Some("session".into()),
            },
            verification_state: state,
        }
    }

    #[test]
    fn forged_and_changed_senders_are_refused_and_the_rest_as_configured() {
        use VerificationLevel::*;
        let unverified = |level| VerificationState::Unverified(level);
        let (lenient, strict, strictest) = (
            SenderTrust::default(),
            SenderTrust {
                require_cross_signed: true,
                require_verified_identity: false,
            },
            SenderTrust {
                require_cross_signed: true,
                require_verified_identity: true,
            },
        );
        // (state, refused: by default, cross-signing required, verified identity required)
        let table = [
            (VerificationState::Verified, false, false, false),
            (unverified(UnverifiedIdentity), false, false, true),
            (unverified(MismatchedSender), true, true, true),
            (unverified(VerificationViolation), true, true, true),
            (unverified(UnsignedDevice), false, true, true),
            (
                unverified(None(DeviceLinkProblem::MissingDevice)),
                false,
                true,
                true,
            ),
            (
                unverified(None(DeviceLinkProblem::InsecureSource)),
                false,
                true,
                true,
            ),
        ];
        for (state, refused_lenient, refused_strict, refused_strictest) in table {
            let event = info("@alice:x", state.clone());
            assert_eq!(
                unproven(&event, "@alice:x", lenient).is_some(),
                refused_lenient,
                "{state:?}"
            );
            assert_eq!(
                unproven(&event, "@alice:x", strict).is_some(),
                refused_strict,
                "{state:?}, cross-signing required"
            );
            assert_eq!(
                unproven(&event, "@alice:x", strictest).is_some(),
                refused_strictest,
                "{state:?}, verified identities required"
            );
        }
        // Keys of one user on an event naming another: refused, even fully verified.
        let forged = info("@mallory:x", VerificationState::Verified);
        let why = unproven(&forged, "@alice:x", lenient).unwrap();
        assert!(why.contains("belong to @mallory:x"), "{why}");
    }
}
