//! An index over a parsed module: capabilities, extensions, version, memory model, definitions,
//! types (decoded on demand from their `OpType*` words), function membership, entry points,
//! and the store/call tables the provenance rule follows.
//!
//! Built in one pass after [`crate::binary::parse`]; every lookup is total (returns `Option` or
//! [`Ty::Missing`]) so rules never panic on a module whose ids do not resolve.

use std::cell::Cell;

use spirv::Op;

use crate::binary::{op_table, IdMap, Inst, Parsed};
use crate::diag::Location;
use crate::target::Target;

mod names;

/// A decoded type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    Bool,
    Int {
        width: u32,
        signed: bool,
    },
    Float {
        width: u32,
    },
    Vector {
        comp: u32,
        n: u32,
    },
    Pointer {
        storage: u32,
        pointee: u32,
    },
    /// Another type (struct, array, matrix...), by opcode.
    Other,
    /// The id is not defined or not a type.
    Missing,
}

/// A scalar component kind (of a scalar, or of a vector's components).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    Bool,
    Int { width: u32, signed: bool },
    Float { width: u32 },
}

/// One store into a variable (found by following access chains back to the variable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum StoreKind {
    /// `OpStore %var %value` to the whole variable.
    Whole(u32),
    /// `OpCopyMemory %var %source` from another pointer.
    CopyFrom(u32),
    /// A store or copy into part of the variable (through an access chain).
    Partial,
}

/// The index.
#[derive(Debug)]
pub(crate) struct Module<'a> {
    pub words: &'a [u32],
    pub version: u32,
    #[allow(dead_code)]
    pub bound: u32,
    pub insts: Vec<Inst>,
    pub def: IdMap,
    /// The functions, in order: (index of `OpFunction`, index of its `OpFunctionEnd` or
    /// `u32::MAX` while open, result id). A range per function rather than an id per
    /// instruction: 4 bytes per instruction are a module's size again for `OpNop`s.
    funcs: Vec<(u32, u32, u32)>,
    /// Declared capabilities: (capability, instruction index).
    pub caps: Vec<(u32, usize)>,
    /// Declared extensions: (name, instruction index).
    pub exts: Vec<(String, usize)>,
    /// `OpMemoryModel` addressing and memory model, if present.
    pub memory_model: Option<(u32, u32)>,
    pub entry_points: Vec<usize>,
    /// Ids used before (or without) a definition: (id, instruction index).
    pub forward: Vec<(u32, u32)>,
    /// Stores keyed by the root variable or pointer parameter, sorted.
    pub stores: Vec<(u32, StoreKind)>,
    /// `OpFunctionCall`s keyed by callee, sorted: (callee, instruction index).
    pub calls: Vec<(u32, u32)>,
    /// Pointer arguments passed to calls, sorted: (argument id, callee, parameter index).
    pub passed: Vec<(u32, u32, u32)>,
    /// Friendly names for disassembly, built on the first finding only.
    names: std::cell::OnceCell<std::collections::HashMap<u32, String>>,
    /// A direct-mapped memo of [`Module::ty`], slot `id % TY_MEMO`: the rules ask about the same
    /// few types again and again, and decoding one reads three tables far apart in memory
    /// (measured: docs/PERFORMANCE.md). Id 0 is never a type, so the empty slot is true.
    ty_memo: [Cell<(u32, Ty)>; TY_MEMO],
}

/// Slots of [`Module::ty`]'s memo (16 bytes each).
const TY_MEMO: usize = 64;

impl<'a> Module<'a> {
    pub(crate) fn build(words: &'a [u32], p: Parsed) -> Module<'a> {
        let Parsed {
            version,
            bound,
            insts,
            def,
            forward,
        } = p;
        let mut m = Module {
            words,
            version,
            bound,
            funcs: Vec::new(),
            insts,
            def,
            caps: Vec::new(),
            exts: Vec::new(),
            memory_model: None,
            entry_points: Vec::new(),
            forward,
            stores: Vec::new(),
            calls: Vec::new(),
            passed: Vec::new(),
            names: std::cell::OnceCell::new(),
            ty_memo: std::array::from_fn(|_| Cell::new((0, Ty::Missing))),
        };
        for i in 0..m.insts.len() {
            let inst = m.insts[i];
            let op = inst.opcode as u32;
            const FUNCTION: u32 = Op::Function as u32;
            const FUNCTION_END: u32 = Op::FunctionEnd as u32;
            const CAPABILITY: u32 = Op::Capability as u32;
            const EXTENSION: u32 = Op::Extension as u32;
            const MEMORY_MODEL: u32 = Op::MemoryModel as u32;
            const ENTRY_POINT: u32 = Op::EntryPoint as u32;
            const STORE: u32 = Op::Store as u32;
            const COPY_MEMORY: u32 = Op::CopyMemory as u32;
            const CALL: u32 = Op::FunctionCall as u32;
            match op {
                FUNCTION => m
                    .funcs
                    .push((i as u32, u32::MAX, m.word(i, 2).unwrap_or(0))),
                CAPABILITY => {
                    if let Some(c) = m.word(i, 1) {
                        m.caps.push((c, i));
                    }
                }
                EXTENSION => {
                    let s = m.string(i, 1);
                    m.exts.push((s, i));
                }
                MEMORY_MODEL => {
                    if let (Some(a), Some(b)) = (m.word(i, 1), m.word(i, 2)) {
                        m.memory_model = Some((a, b));
                    }
                }
                ENTRY_POINT => m.entry_points.push(i),
                STORE | COPY_MEMORY => {
                    if let (Some(ptr), Some(val)) = (m.word(i, 1), m.word(i, 2)) {
                        let root = m.root_pointer(ptr);
                        let kind = if root != ptr {
                            StoreKind::Partial
                        } else if op == STORE {
                            StoreKind::Whole(val)
                        } else {
                            StoreKind::CopyFrom(val)
                        };
                        m.stores.push((root, kind));
                    }
                }
                CALL => {
                    if let Some(callee) = m.word(i, 3) {
                        m.calls.push((callee, i as u32));
                        for k in 4..inst.wc as usize {
                            let Some(arg) = m.word(i, k) else { break };
                            let by_pointer = m.def_op(arg).is_some_and(|o| {
                                o == Op::Variable as u32
                                    || o == Op::FunctionParameter as u32
                                    || o == Op::AccessChain as u32
                                    || o == Op::InBoundsAccessChain as u32
                            });
                            if by_pointer {
                                m.passed.push((m.root_pointer(arg), callee, k as u32 - 4));
                            }
                        }
                    }
                }
                _ => {}
            }
            if op == FUNCTION_END {
                if let Some(f) = m.funcs.last_mut() {
                    f.1 = f.1.min(i as u32);
                }
            }
        }
        m.stores.sort_unstable();
        m.calls.sort_unstable();
        m.passed.sort_unstable();
        m
    }

    /// Friendly names of ids (see [`names::friendly_names`]), computed once.
    pub(crate) fn names(&self) -> &std::collections::HashMap<u32, String> {
        self.names.get_or_init(|| names::friendly_names(self))
    }

    /// `%N`, followed by the id's OpName in parentheses when it has one.
    pub(crate) fn id_text(&self, id: u32) -> String {
        match self.names().get(&id) {
            Some(n) if n.parse::<u32>().is_err() && self.has_op_name(id) => {
                format!("%{id} (`{n}`)")
            }
            _ => format!("%{id}"),
        }
    }

    fn has_op_name(&self, id: u32) -> bool {
        // Friendly names of types and constants are derived, not OpNames; only OpNames add information.
        !matches!(self.def_op(id), Some(o) if (Op::TypeVoid as u32..=Op::SpecConstantOp as u32).contains(&o))
    }

    /// Word `k` of instruction `i` (word 0 is the opcode/word-count word).
    #[inline]
    pub(crate) fn word(&self, i: usize, k: usize) -> Option<u32> {
        let inst = self.insts.get(i)?;
        if k >= inst.wc as usize {
            return None;
        }
        self.words.get(inst.offset as usize + k).copied()
    }

    #[inline]
    pub(crate) fn opcode(&self, i: usize) -> u32 {
        self.insts.get(i).map_or(0, |x| u32::from(x.opcode))
    }

    /// Number of words of instruction `i`.
    #[inline]
    pub(crate) fn wc(&self, i: usize) -> usize {
        self.insts.get(i).map_or(0, |x| x.wc as usize)
    }

    /// The literal string starting at word `k` of instruction `i` (lossy UTF-8).
    pub(crate) fn string(&self, i: usize, k: usize) -> String {
        String::from_utf8_lossy(&self.string_bytes(i, k)).into_owned()
    }

    /// The bytes of the literal string starting at word `k` of instruction `i`, up to its
    /// terminating zero (or the instruction's end).
    pub(crate) fn string_bytes(&self, i: usize, k: usize) -> Vec<u8> {
        let Some(inst) = self.insts.get(i) else {
            return Vec::new();
        };
        let start = inst.offset as usize + k;
        let end = inst.offset as usize + inst.wc as usize;
        self.words
            .get(start..end)
            .unwrap_or(&[])
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .take_while(|&b| b != 0)
            .collect()
    }

    /// The index of the instruction that defines `id`.
    #[inline]
    pub(crate) fn def_inst(&self, id: u32) -> Option<usize> {
        self.def.get(id)
    }

    /// The opcode of the instruction that defines `id`.
    #[inline]
    pub(crate) fn def_op(&self, id: u32) -> Option<u32> {
        self.def_inst(id).map(|i| self.opcode(i))
    }

    /// The result id of instruction `i`, if it has one.
    pub(crate) fn result_id(&self, i: usize) -> Option<u32> {
        let info = op_table().get(self.opcode(i) as usize)?;
        if !info.has_result {
            return None;
        }
        self.word(i, if info.has_type { 2 } else { 1 })
    }

    /// The result type id of instruction `i`, if it has one.
    pub(crate) fn result_type(&self, i: usize) -> Option<u32> {
        let info = op_table().get(self.opcode(i) as usize)?;
        if !info.has_type {
            return None;
        }
        self.word(i, 1)
    }

    /// The type of the value `id` (the result type of its definition).
    pub(crate) fn type_of(&self, id: u32) -> Option<u32> {
        self.result_type(self.def_inst(id)?)
    }

    /// Follows access chains back to the variable (or parameter) they start from.
    pub(crate) fn root_pointer(&self, mut ptr: u32) -> u32 {
        for _ in 0..64 {
            let Some(i) = self.def_inst(ptr) else {
                return ptr;
            };
            let op = self.opcode(i);
            let chain = op == Op::AccessChain as u32
                || op == Op::InBoundsAccessChain as u32
                || op == Op::PtrAccessChain as u32
                || op == Op::InBoundsPtrAccessChain as u32;
            match (chain, self.word(i, 3)) {
                (true, Some(base)) => ptr = base,
                _ => return ptr,
            }
        }
        ptr
    }

    /// Decodes the type `id`.
    pub(crate) fn ty(&self, id: u32) -> Ty {
        let slot = &self.ty_memo[id as usize % TY_MEMO];
        match slot.get() {
            (memo, ty) if memo == id => ty,
            _ => {
                let ty = self.decode_ty(id);
                slot.set((id, ty));
                ty
            }
        }
    }

    /// [`Module::ty`] without the memo.
    fn decode_ty(&self, id: u32) -> Ty {
        let Some(i) = self.def_inst(id) else {
            return Ty::Missing;
        };
        let w = |k| self.word(i, k);
        match crate::binary::op_of(self.opcode(i)) {
            Some(Op::TypeBool) => Ty::Bool,
            Some(Op::TypeInt) => match (w(2), w(3)) {
                (Some(width), Some(s)) => Ty::Int {
                    width,
                    signed: s != 0,
                },
                _ => Ty::Missing,
            },
            Some(Op::TypeFloat) => w(2).map_or(Ty::Missing, |width| Ty::Float { width }),
            Some(Op::TypeVector) => match (w(2), w(3)) {
                (Some(comp), Some(n)) => Ty::Vector { comp, n },
                _ => Ty::Missing,
            },
            Some(Op::TypePointer) => match (w(2), w(3)) {
                (Some(storage), Some(pointee)) => Ty::Pointer { storage, pointee },
                _ => Ty::Missing,
            },
            _ if op_table()
                .get(self.opcode(i) as usize)
                .is_some_and(|o| o.is_type) =>
            {
                Ty::Other
            }
            _ => Ty::Missing,
        }
    }

    /// The scalar kind of a scalar type.
    pub(crate) fn scalar(&self, id: u32) -> Option<Scalar> {
        match self.ty(id) {
            Ty::Bool => Some(Scalar::Bool),
            Ty::Int { width, signed } => Some(Scalar::Int { width, signed }),
            Ty::Float { width } => Some(Scalar::Float { width }),
            _ => None,
        }
    }

    /// The component kind and count of a scalar (count 1) or vector type of scalars.
    pub(crate) fn scalar_or_vector(&self, id: u32) -> Option<(Scalar, u32)> {
        match self.ty(id) {
            Ty::Vector { comp, n } => self.scalar(comp).map(|s| (s, n)),
            _ => self.scalar(id).map(|s| (s, 1)),
        }
    }

    /// Whether `id` is a vector of four 32-bit integers (of the given signedness, if any).
    pub(crate) fn is_ballot_type(&self, id: u32, need_unsigned: bool) -> bool {
        match self.scalar_or_vector(id) {
            Some((Scalar::Int { width: 32, signed }, 4)) => !(need_unsigned && signed),
            _ => false,
        }
    }

    /// Whether the type of `id` is resolvable at all (defined and a type).
    pub(crate) fn type_known(&self, id: u32) -> bool {
        self.ty(id) != Ty::Missing
    }

    /// The value of an `OpConstant` of integer type (low word), if `id` is one.
    pub(crate) fn const_u32(&self, id: u32) -> Option<u32> {
        let i = self.def_inst(id)?;
        if self.opcode(i) != Op::Constant as u32 {
            return None;
        }
        match self.ty(self.word(i, 1)?) {
            Ty::Int { .. } => self.word(i, 3),
            _ => None,
        }
    }

    /// Whether the capability is declared, directly or implied by one that depends on it.
    pub(crate) fn has_cap(&self, cap: spirv::Capability) -> bool {
        use spirv::Capability as C;
        let c = cap as u32;
        self.caps.iter().any(|&(d, _)| {
            d == c
                || (cap == C::GroupNonUniform
                    && [
                        C::GroupNonUniformVote,
                        C::GroupNonUniformArithmetic,
                        C::GroupNonUniformBallot,
                        C::GroupNonUniformShuffle,
                        C::GroupNonUniformShuffleRelative,
                        C::GroupNonUniformClustered,
                        C::GroupNonUniformQuad,
                        C::GroupNonUniformRotateKHR,
                    ]
                    .iter()
                    .any(|x| *x as u32 == d))
        })
    }

    /// Whether the extension is declared.
    pub(crate) fn has_ext(&self, name: &str) -> bool {
        self.exts.iter().any(|(e, _)| e == name)
    }

    /// The result id of the function instruction `i` stands in, 0 outside functions.
    pub(crate) fn func_of(&self, i: usize) -> u32 {
        let k = self
            .funcs
            .partition_point(|&(start, _, _)| start as usize <= i);
        match k.checked_sub(1).and_then(|k| self.funcs.get(k)) {
            Some(&(_, end, id)) if i <= end as usize => id,
            _ => 0,
        }
    }

    /// The location of instruction `i`.
    pub(crate) fn location(&self, i: usize) -> Location {
        Location {
            word_offset: self.insts.get(i).map_or(0, |x| x.offset as usize),
            inst_index: i,
            result_id: self.result_id(i),
            function: Some(self.func_of(i)).filter(|&f| f != 0),
        }
    }

    /// The (major, minor) SPIR-V version from the header.
    pub(crate) fn version_pair(&self) -> (u8, u8) {
        ((self.version >> 16) as u8, (self.version >> 8) as u8)
    }

    /// For an `OpFunctionParameter` instruction: (its function's id, its position).
    pub(crate) fn param_position(&self, i: usize) -> Option<(u32, usize)> {
        let mut k = i;
        while k > 0 && self.opcode(k - 1) == Op::FunctionParameter as u32 {
            k -= 1;
        }
        if k == 0 || self.opcode(k - 1) != Op::Function as u32 {
            return None;
        }
        Some((self.result_id(k - 1)?, i - k))
    }

    /// The id of parameter `n` of function `f`.
    pub(crate) fn param_id(&self, f: u32, n: usize) -> Option<u32> {
        let fi = self.def_inst(f)?;
        let pi = fi + 1 + n;
        if self.opcode(pi) != Op::FunctionParameter as u32 || self.func_of(pi) != f {
            return None;
        }
        self.result_id(pi)
    }

    /// The call instructions of `callee`.
    pub(crate) fn calls_of(&self, callee: u32) -> impl Iterator<Item = usize> + '_ {
        let start = self.calls.partition_point(|c| c.0 < callee);
        self.calls[start..]
            .iter()
            .take_while(move |c| c.0 == callee)
            .map(|c| c.1 as usize)
    }

    /// The stores into `root`.
    pub(crate) fn stores_into(&self, root: u32) -> impl Iterator<Item = StoreKind> + '_ {
        let start = self.stores.partition_point(|s| s.0 < root);
        self.stores[start..]
            .iter()
            .take_while(move |s| s.0 == root)
            .map(|s| s.1)
    }

    /// Where `arg` is passed to a call: (callee, parameter index).
    pub(crate) fn passed_as(&self, arg: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        let start = self.passed.partition_point(|s| s.0 < arg);
        self.passed[start..]
            .iter()
            .take_while(move |s| s.0 == arg)
            .map(|s| (s.1, s.2))
    }
}

/// What every rule sees: the index and the options.
#[derive(Debug)]
pub(crate) struct Cx<'a> {
    pub m: Module<'a>,
    pub target: Option<&'a Target>,
    /// Whether the environment is Vulkan (`--target-env vulkan*`, or the target's env).
    pub vulkan: bool,
    /// The explicit `--target-env` and the highest SPIR-V version (major, minor) it consumes.
    pub env_max_version: Option<(&'a str, (u8, u8))>,
}

/// The highest SPIR-V version an environment consumes, as spirv-val's `--target-env` names them;
/// `None` for environments without a fixed limit (universal, OpenCL, unknown names): the
/// targets' table ([`crate::target::env_spirv_version`]) without the universal environments,
/// whose version the module's own header is checked against by spirv-val's other rules.
pub(crate) fn env_max_spirv_version(env: &str) -> Option<(u8, u8)> {
    crate::target::env_spirv_version(env).filter(|_| !env.starts_with("universal"))
}
