//! Where in the shader source an instruction came from, read from the module's own debug
//! information, so that a finding can name `FILE:LINE:COLUMN` and not only a word offset.
//!
//! Two encodings are read, as compilers write them:
//! - `OpLine File Line Column` (glslang `-g`, DXC `-Zi` without `-fspv-debug=vulkan`): the file is
//!   an `OpString`. The spec: "This location information applies to the instructions physically
//!   following this instruction, up to the first occurrence of any of the following: the next end
//!   of block, the next OpLine instruction, or the next OpNoLine instruction."
//! - `NonSemantic.Shader.DebugInfo.100`'s `DebugLine Source LineStart LineEnd ColumnStart
//!   ColumnEnd` (glslang `-gV`, DXC `-fspv-debug=vulkan-with-source`): the source is a
//!   `DebugSource` whose `File` is an `OpString`, the numbers are ids of `OpConstant`s; it applies
//!   the same way, and `DebugNoLine` ends it.
//!
//! Both are read in one walk up to the last instruction a finding names, only when there are
//! findings: a module without them pays nothing.

use spirv::Op;

use crate::diag::{Diagnostic, SourceLocation};
use crate::module::Module;

/// The instruction numbers of `NonSemantic.Shader.DebugInfo.100` read here.
const DEBUG_SOURCE: u32 = 35;
const DEBUG_LINE: u32 = 103;
const DEBUG_NO_LINE: u32 = 104;

/// A line in effect: the id naming the file (an `OpString`, or a `DebugSource` for `DebugLine`),
/// the line and the column (0: not known).
#[derive(Clone, Copy)]
struct Current {
    file: u32,
    line: u32,
    column: u32,
}

/// Fills in [`Diagnostic::source`] of every finding whose instruction has a line in effect.
pub(crate) fn attach(m: &Module<'_>, diags: &mut [Diagnostic]) {
    let Some(last) = diags.iter().map(|d| d.location.inst_index).max() else {
        return;
    };
    let mut wanted: Vec<usize> = diags.iter().map(|d| d.location.inst_index).collect();
    wanted.sort_unstable();
    wanted.dedup();
    let debug_info = debug_info_set(m);
    let mut found: Vec<(usize, Current)> = Vec::new();
    let mut current: Option<Current> = None;
    let mut next = 0;
    for i in 0..=last.min(m.insts.len().saturating_sub(1)) {
        let op = m.opcode(i);
        // A line instruction applies to what follows it, so it is read before the instruction's
        // own entry is recorded only for the instructions after it.
        let line_here = match op {
            o if o == Op::Line as u32 => {
                Some(m.word(i, 1).zip(m.word(i, 2)).map(|(file, line)| Current {
                    file,
                    line,
                    column: m.word(i, 3).unwrap_or(0),
                }))
            }
            o if o == Op::NoLine as u32 => Some(None),
            o if o == Op::ExtInst as u32 && debug_info.is_some() && m.word(i, 3) == debug_info => {
                match m.word(i, 4) {
                    Some(DEBUG_LINE) => Some(debug_line(m, i)),
                    Some(DEBUG_NO_LINE) => Some(None),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(line) = line_here {
            current = line;
        }
        if wanted.get(next) == Some(&i) {
            if let Some(c) = current {
                found.push((i, c));
            }
            next += 1;
        }
        if ends_block(op) {
            current = None;
        }
    }
    if found.is_empty() {
        return;
    }
    for d in diags.iter_mut() {
        let i = d.location.inst_index;
        let Ok(k) = found.binary_search_by_key(&i, |(j, _)| *j) else {
            continue;
        };
        let c = found[k].1;
        if let Some(file_bytes) = file_name(m, c.file, debug_info) {
            d.source = Some(SourceLocation {
                file: String::from_utf8_lossy(&file_bytes).into_owned(),
                file_bytes,
                line: c.line,
                column: c.column,
            });
        }
    }
}

/// The result id of `OpExtInstImport "NonSemantic.Shader.DebugInfo.100"`, if the module has it.
fn debug_info_set(m: &Module<'_>) -> Option<u32> {
    (0..m.insts.len())
        .take_while(|&i| m.opcode(i) != Op::Function as u32)
        .find(|&i| {
            m.opcode(i) == Op::ExtInstImport as u32
                && m.string(i, 2) == "NonSemantic.Shader.DebugInfo.100"
        })
        .and_then(|i| m.word(i, 1))
}

/// The line a `DebugLine` at instruction `i` puts in effect; `None` when its operands are not
/// the constants the extended instruction set requires (then no line is claimed).
fn debug_line(m: &Module<'_>, i: usize) -> Option<Current> {
    Some(Current {
        file: m.word(i, 5)?,
        line: m.const_u32(m.word(i, 6)?)?,
        column: m.word(i, 8).and_then(|c| m.const_u32(c)).unwrap_or(0),
    })
}

/// The file name an `OpString` (or a `DebugSource` naming one) holds, as its bytes.
fn file_name(m: &Module<'_>, id: u32, debug_info: Option<u32>) -> Option<Vec<u8>> {
    let i = m.def_inst(id)?;
    let op = m.opcode(i);
    if op == Op::String as u32 {
        return Some(m.string_bytes(i, 2));
    }
    let is_debug_source = op == Op::ExtInst as u32
        && debug_info.is_some()
        && m.word(i, 3) == debug_info
        && m.word(i, 4) == Some(DEBUG_SOURCE);
    if is_debug_source {
        let file = m.def_inst(m.word(i, 5)?)?;
        if m.opcode(file) == Op::String as u32 {
            return Some(m.string_bytes(file, 2));
        }
    }
    None
}

/// Whether `op` ends a block (a line in effect ends with it) or a function.
fn ends_block(op: u32) -> bool {
    [
        Op::Branch,
        Op::BranchConditional,
        Op::Switch,
        Op::Kill,
        Op::Return,
        Op::ReturnValue,
        Op::Unreachable,
        Op::TerminateInvocation,
        Op::IgnoreIntersectionKHR,
        Op::TerminateRayKHR,
        Op::EmitMeshTasksEXT,
        Op::FunctionEnd,
    ]
    .iter()
    .any(|o| *o as u32 == op)
}
