//! Typed errors of translation and execution, each with the location of the instruction at fault.

use std::fmt;

/// Where an error happened: the instruction's word offset in the module, its opcode and result id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Location {
    /// Word offset of the instruction in the module (the header is words 0..5).
    pub word: Option<u32>,
    /// The instruction's opcode name, e.g. `OpGroupNonUniformShuffle`.
    pub opcode: Option<String>,
    /// The instruction's result id, if it has one.
    pub id: Option<u32>,
}

impl Location {
    /// A location naming an instruction.
    pub fn at(word: u32, opcode: u32, id: Option<u32>) -> Self {
        Location {
            word: Some(word),
            opcode: Some(op_name(opcode)),
            id,
        }
    }
}

/// The SPIR-V name of an opcode (`Op` + the `spirv` crate's name), or its number.
pub fn op_name(opcode: u32) -> String {
    match spirv::Op::from_u32(opcode) {
        Some(op) => format!("Op{op:?}"),
        None => format!("opcode {opcode}"),
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.opcode, self.id, self.word) {
            (None, _, None) => write!(f, "the module"),
            (op, id, word) => {
                if let Some(op) = op {
                    write!(f, "{op}")?;
                }
                if let Some(id) = id {
                    write!(f, " %{id}")?;
                }
                if let Some(w) = word {
                    write!(f, " (word {w})")?;
                }
                Ok(())
            }
        }
    }
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The binary is not well-formed SPIR-V (truncated, bad header, undefined id, wrong operand).
    Malformed(String),
    /// An instruction or feature the simulator does not execute.
    Unsupported(String),
    /// The dispatch does not fit the module (no such entry point, bad size).
    Dispatch(String),
    /// The dispatch ran more instructions than its step limit (an endless loop?).
    StepLimit(u64),
    /// A memory access outside its buffer or variable.
    OutOfBounds(String),
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Malformed(m) => write!(f, "malformed module: {m}"),
            ErrorKind::Unsupported(m) => write!(f, "unsupported: {m}"),
            ErrorKind::Dispatch(m) => write!(f, "cannot dispatch: {m}"),
            ErrorKind::StepLimit(n) => write!(f, "step limit of {n} instructions reached"),
            ErrorKind::OutOfBounds(m) => write!(f, "out-of-bounds access: {m}"),
        }
    }
}

/// An error of translation or execution, with its location.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at {location}")]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    /// Where.
    pub location: Location,
}

impl Error {
    /// An error at the module level.
    pub fn new(kind: ErrorKind) -> Self {
        Error {
            kind,
            location: Location::default(),
        }
    }

    /// The same error at `location` unless it already has one.
    pub fn at(mut self, location: &Location) -> Self {
        if self.location == Location::default() {
            self.location = location.clone();
        }
        self
    }
}

/// A malformed-module error.
pub fn malformed(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Malformed(msg.into()))
}

/// An unsupported-feature error.
pub fn unsupported(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Unsupported(msg.into()))
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, Error>;
