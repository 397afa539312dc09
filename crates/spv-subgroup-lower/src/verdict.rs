//! What a lowering's outcome means for whoever runs it, decided once: written, refused (the
//! input's fault) or an internal error (ours). `spv-subgroup lower` turns it into its exit
//! status, and the fuzz properties judge the CLI by the same [`Verdict`], so the rule cannot
//! drift between them.

use crate::verify::VerifyError;
use crate::LowerError;

/// The outcome of lowering one module with verification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Lowered (or nothing to lower) and verified: the output may be written.
    Lowered,
    /// The input is malformed, invalid, or uses something the target lacks and no rewrite
    /// provides: nothing is written, and the input is to blame.
    Refused,
    /// The output failed verification although the input did not: a bug in the lowering.
    Internal,
}

impl Verdict {
    /// The verdict on a module the pass itself refused: always the input's fault.
    pub fn of_lowering(_: &LowerError) -> Verdict {
        Verdict::Refused
    }

    /// The verdict on a failed verification: ours only when the input has none of the
    /// output's errors.
    pub fn of_verification(e: &VerifyError) -> Verdict {
        match e {
            VerifyError::Internal { .. } => Verdict::Internal,
            _ => Verdict::Refused,
        }
    }

    /// The exit status `spv-subgroup lower` gives it: 0, 1 or 3 (2 is for usage and IO errors,
    /// which never reach a verdict).
    pub const fn exit_status(self) -> u8 {
        match self {
            Verdict::Lowered => 0,
            Verdict::Refused => 1,
            Verdict::Internal => 3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_internal_verification_failure_is_ours() {
        let internal = VerifyError::Internal {
            errors: Default::default(),
            unreadable: None,
        };
        let input = VerifyError::Input {
            errors: Default::default(),
        };
        assert_eq!(Verdict::of_verification(&internal).exit_status(), 3);
        assert_eq!(Verdict::of_verification(&input).exit_status(), 1);
        let refused = LowerError::Parse("x".into());
        assert_eq!(Verdict::of_lowering(&refused), Verdict::Refused);
        assert_eq!(Verdict::Lowered.exit_status(), 0);
    }
}
