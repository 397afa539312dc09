//! Translation: the SPIR-V binary, read once into dense tables (result ids to register slots,
//! labels to block indices, constants into one pool) so execution never searches for an id.

use std::collections::BTreeMap;

use crate::error::{malformed, unsupported, Location, Result};
use crate::types::{align_up, Scalar, Shape, TypeInfo, MAX_LEAVES};

/// Largest id bound accepted (tables are indexed by id).
const MAX_BOUND: u32 = 1 << 22;

/// Largest type in bytes (memory objects are allocated whole).
const MAX_BYTES: u64 = 1 << 28;

/// Where an operand's value lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Src {
    /// Not a value.
    None,
    /// Register slots starting at this index (one per leaf, each `lanes` wide).
    Reg(u32),
    /// Constant pool entries starting at this index.
    Const(u32),
    /// `OpUndef`: fresh undefined bits at every use.
    Undef,
}

/// What an id names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdKind {
    /// Nothing (yet).
    None,
    /// A value.
    Value(Src),
    /// A block of a function: (function index, block index).
    Block(u32, u32),
    /// A function index.
    Func(u32),
    /// The GLSL.std.450 instruction set.
    Glsl,
}

/// One instruction of a function body, operands still as words (ids resolve through
/// [`Program::ids`], a dense table).
#[derive(Clone, Debug)]
pub struct Inst {
    /// Opcode number.
    pub op: u32,
    /// The opcode, decoded once here rather than at every step (None: unknown to `spirv`).
    pub decoded: Option<spirv::Op>,
    /// Whether it is a subgroup instruction (`crate::group`), decided once here.
    pub group: bool,
    /// Word offset in the module.
    pub word: u32,
    /// Result id (0 if none).
    pub id: u32,
    /// Result type id (0 if none).
    pub ty: u32,
    /// First register of the result (if it has one).
    pub res: u32,
    /// Operand words after the result type and id.
    pub args: Vec<u32>,
    /// The promoted Function variable this instruction reaches, if any (`crate::promote`).
    pub local: Option<Local>,
    /// For a load of a promoted variable: its uses read the variable's rows, so it copies
    /// nothing (`crate::promote`'s `forward_loads`).
    pub forwarded: bool,
    /// For `OpFunctionCall`: the pointer arguments passed as promoted variables, copied into the
    /// callee's parameter rows at the call and back when it returns (`crate::promote`).
    pub bindings: Vec<Binding>,
    /// An always-defined elementwise operation resolved once (`crate::fast`), if this is one.
    pub row: Option<RowOp>,
    /// The straight-line form the executor tries first (`crate::fast`), if this has one.
    pub fast: Option<Fast>,
    /// For a well-formed `OpBranch` or `OpBranchConditional` on a register row: its operands
    /// resolved once (`crate::fast`), for the executor's straight-on branch.
    pub branch: Option<Branch>,
    /// For an access chain: its steps resolved once (`crate::fast::chain_plan`).
    pub chain: Option<Box<ChainPlan>>,
    /// A subgroup instruction resolved once (`crate::group_row`), if it has that form.
    pub grp: Option<Box<GroupRow>>,
    /// A buffer or Workgroup memory form resolved once (`crate::memrow::prepare`), if any.
    pub mem: Option<Box<MemForm>>,
}

/// What `crate::memrow::prepare` resolved of a memory instruction at translation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemForm {
    /// A one-leaf `OpLoad` through an access chain of its block that nothing else reads: it
    /// works out each lane's address itself (`Machine::load_fused`); the chain's pointers are
    /// made only where it cannot.
    FusedLoad {
        /// The chain's plan.
        plan: ChainPlan,
        /// The chain's result register.
        chain: u32,
        /// The loaded scalar's byte offset and scalar.
        at: (u32, Scalar),
    },
    /// An atomic through an access chain of its block that nothing else reads, as
    /// `FusedLoad` (`Machine::atomic_fused`).
    FusedAtomic {
        /// The chain's plan.
        plan: ChainPlan,
        /// The chain's result register.
        chain: u32,
    },
    /// An access chain whose only use is such a load or atomic: it makes no pointers when it
    /// runs (its straight-line form is `Fast::Nop`).
    FusedChain,
    /// `OpArrayLength` of the struct at register row `ptr`, its runtime array at byte `off`
    /// with elements of `stride` bytes; `uniform`: the pointer is a variable's, the same in
    /// every lane.
    ArrayLength {
        /// The pointer's register row.
        ptr: u32,
        /// The array member's offset.
        off: u32,
        /// Its stride.
        stride: u32,
        /// Whether every lane has the same pointer.
        uniform: bool,
    },
}

/// A branch's operands resolved at translation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Branch {
    /// The condition's register (None for `OpBranch`).
    pub cond: Option<u32>,
    /// The blocks (by index in the function) taken where the condition is true and false (the
    /// same block twice for `OpBranch`).
    pub to: [u32; 2],
}

/// An access chain resolved from the types: struct members and constant indices summed into
/// one offset, the indices held in registers left for each lane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainPlan {
    /// The base pointer and its scalar (for an `OpUndef` base).
    pub base: (Src, Scalar),
    /// The offset every lane adds (struct members, constant indices).
    pub fixed: u64,
    /// A constant index is out of range: every lane's pointer is out of range.
    pub all_out: bool,
    /// Per-lane steps: (stride, element count, index, the index's scalar).
    pub steps: Vec<(u32, u64, Src, Scalar)>,
}

/// An elementwise operation over whole rows with its operands resolved at translation
/// (`crate::fast`): no id, type or layout is looked up when it runs.
#[derive(Clone, Copy, Debug)]
pub struct RowOp {
    /// The operation.
    pub op: spirv::Op,
    /// First operand (a register or a constant, never `OpUndef`).
    pub a: Src,
    /// Second operand (the first again for unary operations).
    pub b: Src,
    /// Scalars of the result and of the operands (every leaf the same).
    pub rs: Scalar,
    /// Scalar of the first operand.
    pub sa: Scalar,
    /// Scalar of the second operand.
    pub sb: Scalar,
    /// Whether each operand has a leaf per result leaf (else one, used for every leaf).
    pub wide: [bool; 2],
    /// Result leaves.
    pub leaves: u32,
    /// The compiled loop of this operation and widths, if there is one (`crate::kernels`), and
    /// what its active lanes must satisfy first.
    pub kernel: Option<(crate::kernels::Kernel, crate::kernels::Check)>,
    /// For each constant operand, its first row in [`Program::row_consts`] (one row per leaf).
    pub const_rows: [Option<u32>; 2],
}

/// A row operand resolved for [`Fast`]: a register row, or a constant row of the machine's
/// (`Machine::const_rows`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// The register row with this index.
    Reg(u32),
    /// The constant row with this index.
    Const(u32),
}

/// The most frequent instructions reduced to what they do to rows (`crate::fast`): no type,
/// id or layout is looked up when they run, and a case the form does not cover (an undefined
/// result, a lane never written) goes to the general path, which gives it exactly.
#[derive(Clone, Debug)]
pub enum Fast {
    /// Nothing to do (an access chain into a promoted variable: its uses read the rows).
    Nop,
    /// Rows copied into the result's consecutive rows from `to` on, each part's leaves keeping
    /// the bits of `keep` (`OpCompositeExtract`, `OpCompositeConstruct`, `OpCopyObject`, a
    /// one-leaf `OpBitcast`).
    Copy {
        /// First row of the result.
        to: u32,
        /// (first source row, leaves, bits kept) in order.
        parts: Box<[(Operand, u32, u64)]>,
    },
    /// `OpSelect` of registers and constants.
    Select {
        /// First row of the result.
        dst: u32,
        /// The condition (one row, or one per leaf when `per_leaf`).
        cond: Operand,
        /// Chosen where the condition is true.
        a: Operand,
        /// Chosen where it is false.
        b: Operand,
        /// Result leaves.
        leaves: u32,
        /// Whether the condition has a row per leaf.
        per_leaf: bool,
    },
    /// A promoted `OpVariable` without an initializer: its flags say "never written", naming it.
    VarInit {
        /// First flag row.
        flags: u32,
        /// Leaves.
        leaves: u32,
        /// The flag value (the variable's id shifted left by one).
        unwritten: u64,
    },
    /// A scalar elementwise operation with a compiled kernel.
    Row {
        /// The kernel and what its active lanes must satisfy.
        kernel: (crate::kernels::Kernel, crate::kernels::Check),
        /// The result's row.
        dst: u32,
        /// The operands.
        a: Operand,
        /// The second operand (the first again for unary operations).
        b: Operand,
    },
    /// A load of a promoted variable whose uses read the variable's rows: the written flags of
    /// `leaves` rows from `flags` are checked.
    LoadForwarded {
        /// First flag row.
        flags: u32,
        /// Leaves.
        leaves: u32,
    },
    /// A load of a promoted variable: flags checked, values copied.
    Load {
        /// First value row of the variable.
        from: u32,
        /// First flag row.
        flags: u32,
        /// First row of the result.
        to: u32,
        /// Leaves.
        leaves: u32,
    },
    /// A store of a scalar (not a bool or a pointer) into a promoted variable.
    Store {
        /// The variable's value row.
        value: u32,
        /// Its flag row.
        flags: u32,
        /// What is stored.
        src: Operand,
        /// The bits the variable keeps of it.
        keep: u64,
    },
}

/// A subgroup instruction resolved once (`crate::group_row`): its operands as register rows or
/// constants, its operation and scalar decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupRow {
    /// Reduce, inclusive and exclusive scans, clustered and partitioned arithmetic.
    Arith {
        /// The binary operation (`opclass::arith`).
        bop: spirv::Op,
        /// The operand's scalar (every leaf the same).
        s: Scalar,
        /// The group operation: 0 reduce, 1 inclusive, 2 exclusive, 3 clustered, 6 to 8 partitioned.
        gop: u8,
        /// The cluster size (clustered only), at most 128.
        cluster: u32,
        /// The operand.
        v: Src,
        /// Leaves of the operand and of the result.
        leaves: u32,
        /// Partitioned only: the ballot operand, its leaves and their width.
        ballot: Option<(Src, u32, u32)>,
    },
    /// `OpGroupNonUniformElect`.
    Elect,
    /// All, Any and Ballot of a bool predicate; the result's leaves (a ballot's widths).
    Vote {
        /// 0 All, 1 Any, 2 Ballot.
        kind: u8,
        /// The predicate.
        pred: Src,
        /// The result's leaf widths (a ballot's), and how many.
        widths: [u8; 4],
        /// Result leaves.
        count: u8,
    },
    /// All-equal over the active lanes (floats by value).
    AllEqual {
        /// The value.
        v: Src,
        /// Its leaves.
        leaves: u32,
        /// Their scalar.
        s: Scalar,
    },
    /// Broadcast of the first active lane.
    BroadcastFirst {
        /// The value.
        v: Src,
        /// Its leaves.
        leaves: u32,
    },
    /// A read of another lane: broadcast, read-invocation and the shuffles.
    Shuffle {
        /// The opcode (which lane each reads).
        op: spirv::Op,
        /// The value.
        v: Src,
        /// Its leaves.
        leaves: u32,
        /// The index, delta or mask operand.
        x: Src,
    },
    /// Ballot bit queries: inverse ballot, bit extract, bit count, find LSB and MSB.
    BallotBits {
        /// The opcode.
        op: spirv::Op,
        /// The ballot operand, its leaves and their width.
        b: (Src, u32, u32),
        /// Bit count's group operation; bit extract's index as `x`.
        gop: u8,
        /// Bit extract's index.
        x: Src,
    },
    /// `OpGroupNonUniformPartitionEXT` of a one-leaf value: (value, its scalar, the result's
    /// leaf widths, how many).
    Partition {
        /// The value.
        v: Src,
        /// Its scalar.
        s: Scalar,
        /// The result's leaf widths.
        widths: [u8; 4],
        /// Result leaves.
        count: u8,
    },
}

/// A pointer argument of a call bound to a promoted parameter: (argument index, what the
/// caller passes, the callee parameter's rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    /// Index of the parameter.
    pub param: u32,
    /// The caller's variable (or part of one) passed.
    pub arg: Local,
    /// The callee parameter's rows.
    pub to: Local,
}

/// A leaf's flag once a lane stored it; before, the flag is the variable's id shifted left by
/// one (0 in registers never set), which names the variable in reports. So WRITTEN is the only
/// odd flag (`crate::fast` checks a whole row of flags with one AND per lane).
pub const WRITTEN: u64 = 1;

/// What an instruction reaches of a Function variable kept in registers (`crate::promote`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Local {
    /// The variable's id (for messages).
    pub var: u32,
    /// Register of the first leaf's value; the other leaves follow.
    pub value: u32,
    /// Register of the first leaf's "written" flags (1 where a lane stored it since the
    /// variable's `OpVariable` ran); the other leaves follow.
    pub written: u32,
    /// Leaves reached.
    pub leaves: u32,
}

impl Inst {
    /// This instruction as an error location.
    pub fn location(&self) -> Location {
        Location::at(self.word, self.op, (self.id != 0).then_some(self.id))
    }
}

/// A phi of a block: its result and, per predecessor block index, the incoming value.
#[derive(Clone, Debug)]
pub struct Phi {
    /// First register of the result.
    pub res: u32,
    /// Leaves of the result.
    pub leaves: u32,
    /// (predecessor block index, value).
    pub incoming: Vec<(u32, Src)>,
    /// Location for errors.
    pub word: u32,
}

/// A basic block: a range of its function's instructions (the terminator last) and its phis.
#[derive(Clone, Debug)]
pub struct Block {
    /// Label id.
    pub label: u32,
    /// First instruction index.
    pub start: u32,
    /// One past the terminator.
    pub end: u32,
    /// Phis, evaluated when lanes enter the block.
    pub phis: Vec<Phi>,
}

/// A function.
#[derive(Clone, Debug, Default)]
pub struct Func {
    /// Function id.
    pub id: u32,
    /// Blocks in module order (the first is the entry).
    pub blocks: Vec<Block>,
    /// Instructions of all blocks.
    pub insts: Vec<Inst>,
    /// Parameters: (first register, leaves).
    pub params: Vec<(u32, u32)>,
    /// Parameter ids, in order.
    pub param_ids: Vec<u32>,
}

/// A module-scope variable.
#[derive(Clone, Debug)]
pub struct Global {
    /// Its id.
    pub id: u32,
    /// The register holding its pointer.
    pub reg: u32,
    /// Storage class.
    pub class: u32,
    /// Pointee type id.
    pub pointee: u32,
    /// `BuiltIn` decoration.
    pub builtin: Option<u32>,
    /// (descriptor set, binding).
    pub binding: Option<(u32, u32)>,
    /// Initialiser.
    pub init: Option<Src>,
    /// A built-in `Input` variable kept in register rows (`crate::promote`): its value and
    /// written-flag rows, filled when a subgroup is set up.
    pub promoted: Option<Local>,
}

/// A compute entry point.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Name.
    pub name: String,
    /// Function index.
    pub func: u32,
    /// `LocalSize`/`LocalSizeId` (the `WorkgroupSize` built-in constant overrides it).
    pub local_size: [u32; 3],
}

/// A translated module.
#[derive(Clone, Debug)]
pub struct Program {
    /// Types by id.
    pub types: Vec<Option<TypeInfo>>,
    /// What each id names.
    pub ids: Vec<IdKind>,
    /// Result type of each value id.
    pub id_ty: Vec<u32>,
    /// Constant pool.
    pub consts: Vec<u64>,
    /// The values of the constant rows the row form reads (`RowOp::const_rows`): each machine
    /// fills one register-wide row per value once, instead of every instruction filling one.
    pub row_consts: Vec<u64>,
    /// Register slots per lane.
    pub nregs: u32,
    /// Only the general paths run (no kernels, no straight-line form, no straight-on branch):
    /// for tests that prove those forms give exactly what the general paths give.
    pub general_only: bool,
    /// Functions.
    pub funcs: Vec<Func>,
    /// Compute entry points.
    pub entries: Vec<Entry>,
    /// Module-scope variables.
    pub globals: Vec<Global>,
    /// The `WorkgroupSize` built-in constant, if any.
    pub workgroup_size: Option<[u32; 3]>,
    /// Buffer and Workgroup memory lane by lane only, never in rows (`crate::memrow`): for the
    /// tests that prove the rows give exactly what the per-lane path gives.
    pub memory_lane_by_lane: bool,
    /// Per module-scope variable (as `globals`): no instruction can write through a pointer
    /// into it (`crate::readonly`); empty: not decided, every variable may be written.
    pub never_written: Vec<bool>,
}

impl Program {
    /// Every constant row of the row forms ([`Program::row_consts`]) filled `lanes` wide
    /// (`Machine::const_rows`).
    pub fn const_rows(&self, lanes: u32) -> Vec<u64> {
        let n = lanes as usize;
        let mut rows = Vec::with_capacity(self.row_consts.len() * n);
        for &v in &self.row_consts {
            rows.extend(std::iter::repeat_n(v, n));
        }
        rows
    }

    /// The type of a type id.
    pub fn ty(&self, id: u32) -> Result<&TypeInfo> {
        self.types
            .get(id as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| malformed(format!("%{id} is not a type")))
    }

    /// Where an operand id's value lives, with its type.
    pub fn val(&self, id: u32) -> Result<(Src, &TypeInfo)> {
        match self.ids.get(id as usize) {
            Some(IdKind::Value(s)) => Ok((*s, self.ty(self.id_ty[id as usize])?)),
            _ => Err(malformed(format!("%{id} is not a value"))),
        }
    }

    /// A constant scalar operand (scopes, cluster sizes, struct member indices).
    pub fn constant(&self, id: u32) -> Result<u64> {
        match self.ids.get(id as usize) {
            Some(IdKind::Value(Src::Const(k))) => self
                .consts
                .get(*k as usize)
                .copied()
                .ok_or_else(|| malformed(format!("%{id} has no value"))),
            _ => Err(malformed(format!("%{id} must be a constant"))),
        }
    }
}

#[derive(Default)]
struct Decor {
    builtin: Option<u32>,
    spec_id: Option<u32>,
    array_stride: Option<u32>,
    set: Option<u32>,
    binding: Option<u32>,
    member_offset: BTreeMap<u32, u32>,
    member_matrix_stride: BTreeMap<u32, u32>,
}

/// Decodes a nul-terminated UTF-8 literal string from words; returns it and the words it used.
fn string(words: &[u32]) -> (String, usize) {
    let mut bytes = Vec::new();
    for (i, w) in words.iter().enumerate() {
        for b in w.to_le_bytes() {
            if b == 0 {
                return (String::from_utf8_lossy(&bytes).into_owned(), i + 1);
            }
            bytes.push(b);
        }
    }
    (String::from_utf8_lossy(&bytes).into_owned(), words.len())
}

struct Builder<'a> {
    p: Program,
    decor: Vec<Decor>,
    spec: &'a BTreeMap<u32, u64>,
}

/// Translates a module, with specialization constants overridden by `SpecId`.
pub fn translate(words: &[u32], spec: &BTreeMap<u32, u64>) -> Result<Program> {
    if words.len() < 5 {
        return Err(malformed("shorter than the 5-word header"));
    }
    if words[0] != 0x0723_0203 {
        return Err(malformed(format!(
            "bad magic number {:#010x} (big-endian modules are not read)",
            words[0]
        )));
    }
    let bound = words[3];
    if bound > MAX_BOUND {
        return Err(unsupported(format!("id bound {bound} above {MAX_BOUND}")));
    }
    // Split into instructions.
    let mut insts: Vec<(u32, u32, &[u32])> = Vec::new();
    let mut at = 5usize;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let op = words[at] & 0xffff;
        if count == 0 || at + count > words.len() {
            return Err(malformed(format!(
                "instruction at word {at} has a bad word count {count}"
            ))
            .at(&Location::at(at as u32, op, None)));
        }
        insts.push((at as u32, op, &words[at + 1..at + count]));
        at += count;
    }
    let n = bound as usize;
    let mut b = Builder {
        p: Program {
            types: vec![None; n],
            ids: vec![IdKind::None; n],
            id_ty: vec![0; n],
            consts: Vec::new(),
            row_consts: Vec::new(),
            nregs: 0,
            general_only: false,
            funcs: Vec::new(),
            entries: Vec::new(),
            globals: Vec::new(),
            workgroup_size: None,
            memory_lane_by_lane: false,
            never_written: Vec::new(),
        },
        decor: (0..n).map(|_| Decor::default()).collect(),
        spec,
    };
    // Decorations first (they precede types in a valid module, but be order-independent).
    for &(word, op, ops) in &insts {
        b.decorate(op, ops)
            .map_err(|e| e.at(&Location::at(word, op, None)))?;
    }
    let mut entry_raw = Vec::new();
    let mut modes: Vec<(u32, u32, Vec<u32>)> = Vec::new();
    let mut i = 0;
    while i < insts.len() {
        let (word, op, ops) = insts[i];
        let loc = Location::at(word, op, None);
        match spirv::Op::from_u32(op) {
            Some(spirv::Op::EntryPoint) => {
                if ops.len() < 3 {
                    return Err(malformed("short OpEntryPoint").at(&loc));
                }
                if ops[0] == spirv::ExecutionModel::GLCompute as u32 {
                    entry_raw.push((ops[1], string(&ops[2..]).0));
                }
            }
            Some(spirv::Op::ExecutionMode) | Some(spirv::Op::ExecutionModeId) if ops.len() >= 2 => {
                modes.push((ops[0], ops[1], ops[2..].to_vec()));
            }
            Some(spirv::Op::ExtInstImport) => {
                let id = b.id(ops, 0)?;
                if string(&ops[1..]).0 == "GLSL.std.450" {
                    b.p.ids[id as usize] = IdKind::Glsl;
                }
            }
            Some(spirv::Op::Function) => {
                let end = insts[i..]
                    .iter()
                    .position(|x| x.1 == spirv::Op::FunctionEnd as u32)
                    .ok_or_else(|| malformed("OpFunction without OpFunctionEnd").at(&loc))?;
                let index = b.p.funcs.len() as u32;
                let fid = b.id(ops, 1)?;
                b.p.ids[fid as usize] = IdKind::Func(index);
                b.p.funcs.push(Func {
                    id: fid,
                    ..Func::default()
                });
                i += end + 1;
                continue;
            }
            _ => b.global(word, op, ops).map_err(|e| e.at(&loc))?,
        }
        i += 1;
    }
    // Functions: first every result gets registers and every label a block, then bodies.
    let funcs: Vec<&[(u32, u32, &[u32])]> = {
        let mut v = Vec::new();
        let mut i = 0;
        while i < insts.len() {
            if insts[i].1 == spirv::Op::Function as u32 {
                let len = insts[i..]
                    .iter()
                    .position(|x| x.1 == spirv::Op::FunctionEnd as u32)
                    .unwrap_or(0);
                v.push(&insts[i..i + len]);
                i += len;
            }
            i += 1;
        }
        v
    };
    for (fi, body) in funcs.iter().enumerate() {
        b.allocate(fi as u32, body)?;
    }
    for (fi, body) in funcs.iter().enumerate() {
        b.body(fi as u32, body)?;
    }
    for (fid, name) in entry_raw {
        let func = match b.p.ids.get(fid as usize) {
            Some(IdKind::Func(f)) => *f,
            _ => {
                return Err(malformed(format!(
                    "entry point `{name}` names %{fid}, not a function"
                )))
            }
        };
        let mut local_size = [1, 1, 1];
        for (target, mode, lits) in &modes {
            if *target != fid || lits.len() < 3 {
                continue;
            }
            if *mode == spirv::ExecutionMode::LocalSize as u32 {
                local_size = [lits[0], lits[1], lits[2]];
            } else if *mode == spirv::ExecutionMode::LocalSizeId as u32 {
                for (k, id) in lits.iter().take(3).enumerate() {
                    local_size[k] = b.const_u32(*id)?;
                }
            }
        }
        b.p.entries.push(Entry {
            name,
            func,
            local_size,
        });
    }
    Ok(b.p)
}

impl Builder<'_> {
    fn id(&self, ops: &[u32], k: usize) -> Result<u32> {
        let id = *ops.get(k).ok_or_else(|| malformed("missing operand"))?;
        if id == 0 || id as usize >= self.p.ids.len() {
            return Err(malformed(format!("id %{id} outside the bound")));
        }
        Ok(id)
    }

    fn ty(&self, id: u32) -> Result<&TypeInfo> {
        self.p
            .types
            .get(id as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| malformed(format!("%{id} is not a type")))
    }

    fn decorate(&mut self, op: u32, ops: &[u32]) -> Result<()> {
        let (target, member, rest) = if op == spirv::Op::Decorate as u32 && ops.len() >= 2 {
            (ops[0], None, &ops[1..])
        } else if op == spirv::Op::MemberDecorate as u32 && ops.len() >= 3 {
            (ops[0], Some(ops[1]), &ops[2..])
        } else {
            return Ok(());
        };
        let d = self
            .decor
            .get_mut(target as usize)
            .ok_or_else(|| malformed(format!("decoration of %{target} outside the bound")))?;
        let lit = rest.get(1).copied();
        use spirv::Decoration as D;
        match (D::from_u32(rest[0]), member, lit) {
            (Some(D::BuiltIn), None, Some(v)) => d.builtin = Some(v),
            (Some(D::SpecId), None, Some(v)) => d.spec_id = Some(v),
            (Some(D::ArrayStride), None, Some(v)) => d.array_stride = Some(v),
            (Some(D::DescriptorSet), None, Some(v)) => d.set = Some(v),
            (Some(D::Binding), None, Some(v)) => d.binding = Some(v),
            (Some(D::Offset), Some(m), Some(v)) => {
                d.member_offset.insert(m, v);
            }
            (Some(D::MatrixStride), Some(m), Some(v)) => {
                d.member_matrix_stride.insert(m, v);
            }
            (Some(D::RowMajor), Some(_), _) => {
                return Err(unsupported("RowMajor matrices"));
            }
            _ => {}
        }
        Ok(())
    }

    fn set_type(&mut self, id: u32, t: TypeInfo) {
        self.p.types[id as usize] = Some(t);
    }

    fn add_const(&mut self, id: u32, ty: u32, leaves: Vec<u64>) -> Result<()> {
        let base = self.p.consts.len() as u32;
        self.p.consts.extend(leaves);
        self.p.ids[id as usize] = IdKind::Value(Src::Const(base));
        self.p.id_ty[id as usize] = ty;
        if self.decor[id as usize].builtin == Some(spirv::BuiltIn::WorkgroupSize as u32) {
            let v = self.const_leaves(id)?;
            if v.len() == 3 {
                self.p.workgroup_size = Some([v[0] as u32, v[1] as u32, v[2] as u32]);
            }
        }
        Ok(())
    }

    fn const_leaves(&self, id: u32) -> Result<Vec<u64>> {
        match self.p.ids.get(id as usize) {
            Some(IdKind::Value(Src::Const(base))) => {
                let n = self.ty(self.p.id_ty[id as usize])?.leaves as usize;
                let b = *base as usize;
                self.p
                    .consts
                    .get(b..b + n)
                    .map(<[u64]>::to_vec)
                    .ok_or_else(|| malformed(format!("constant %{id} does not fit its type")))
            }
            _ => Err(malformed(format!("%{id} is not a constant"))),
        }
    }

    fn const_u32(&self, id: u32) -> Result<u32> {
        self.const_leaves(id)?
            .first()
            .map(|v| *v as u32)
            .ok_or_else(|| malformed(format!("%{id} is not a scalar constant")))
    }

    fn scalar_type(&mut self, id: u32, s: Scalar) {
        self.set_type(id, TypeInfo::scalar(s));
    }

    /// A type, constant or variable at module scope.
    fn global(&mut self, _word: u32, op: u32, ops: &[u32]) -> Result<()> {
        use spirv::Op as O;
        let Some(o) = O::from_u32(op) else {
            return Err(unsupported("unknown opcode at module scope"));
        };
        match o {
            O::TypeVoid
            | O::TypeFunction
            | O::TypeSampler
            | O::TypeImage
            | O::TypeSampledImage
            | O::TypeAccelerationStructureKHR => {
                let id = self.id(ops, 0)?;
                self.set_type(id, TypeInfo::void());
            }
            O::TypeBool => {
                let id = self.id(ops, 0)?;
                self.scalar_type(id, Scalar::Bool);
            }
            O::TypeInt => {
                let id = self.id(ops, 0)?;
                let width = *ops.get(1).ok_or_else(|| malformed("short OpTypeInt"))?;
                if ![8, 16, 32, 64].contains(&width) {
                    return Err(unsupported(format!("{width}-bit integers")));
                }
                let signed = ops.get(2).copied().unwrap_or(0) != 0;
                self.scalar_type(id, Scalar::Int { width, signed });
            }
            O::TypeFloat => {
                let id = self.id(ops, 0)?;
                let width = *ops.get(1).ok_or_else(|| malformed("short OpTypeFloat"))?;
                if ![16, 32, 64].contains(&width) || ops.len() > 2 {
                    return Err(unsupported(format!(
                        "{width}-bit floats of encoding {:?}",
                        ops.get(2)
                    )));
                }
                self.scalar_type(id, Scalar::Float { width });
            }
            O::TypeVector | O::TypeMatrix => {
                let id = self.id(ops, 0)?;
                let elem = self.id(ops, 1)?;
                let n = *ops.get(2).ok_or_else(|| malformed("short vector type"))?;
                let e = self.ty(elem)?.clone();
                let (shape, stride) = if o == O::TypeVector {
                    (Shape::Vector { elem, n }, e.size)
                } else {
                    let stride = align_up(e.size, e.align);
                    (
                        Shape::Array {
                            elem,
                            n,
                            stride,
                            runtime: false,
                        },
                        stride,
                    )
                };
                self.set_type(id, repeat(shape, &e, n, stride)?);
            }
            O::TypeArray | O::TypeRuntimeArray => {
                let id = self.id(ops, 0)?;
                let elem = self.id(ops, 1)?;
                let e = self.ty(elem)?.clone();
                let runtime = o == O::TypeRuntimeArray;
                let n = if runtime {
                    0
                } else {
                    self.const_u32(self.id(ops, 2)?)?
                };
                let stride = self.decor[id as usize]
                    .array_stride
                    .unwrap_or(align_up(e.size, e.align));
                let mut t = repeat(
                    Shape::Array {
                        elem,
                        n,
                        stride,
                        runtime,
                    },
                    &e,
                    n,
                    stride,
                )?;
                if runtime {
                    t.size = 0;
                }
                self.set_type(id, t);
            }
            O::TypeStruct => {
                let id = self.id(ops, 0)?;
                let members = ops[1..].to_vec();
                let mut offsets = Vec::new();
                let mut layout = Vec::new();
                let (mut size, mut align, mut leaves) = (0u32, 1u32, 0u32);
                let mut unbounded = false;
                for (k, m) in members.iter().enumerate() {
                    let t = self.ty(*m)?.clone();
                    if let (Some(ms), Shape::Array { stride, .. }) = (
                        self.decor[id as usize]
                            .member_matrix_stride
                            .get(&(k as u32)),
                        &t.shape,
                    ) {
                        if ms != stride {
                            // Matrices are laid out packed; a decorated stride that differs is not modelled.
                            return Err(unsupported(format!(
                                "MatrixStride {ms} (packed column stride is {stride})"
                            )));
                        }
                    }
                    let off = match self.decor[id as usize].member_offset.get(&(k as u32)) {
                        Some(o) => *o,
                        None => align_up(size, t.align),
                    };
                    offsets.push(off);
                    if u64::from(off) + u64::from(t.size) > MAX_BYTES {
                        return Err(unsupported(format!("a struct member at offset {off}")));
                    }
                    layout.extend(t.layout.iter().map(|(o, s)| (o + off, *s)));
                    size = size.max(off + t.size);
                    align = align.max(t.align);
                    leaves += t.leaves;
                    unbounded |= matches!(t.shape, Shape::Array { runtime: true, .. })
                        || (t.size == 0 && t.leaves == 0 && !matches!(t.shape, Shape::Void));
                }
                if leaves > MAX_LEAVES {
                    return Err(unsupported(format!("a struct of {leaves} scalars")));
                }
                let size = if unbounded { 0 } else { align_up(size, align) };
                self.set_type(
                    id,
                    TypeInfo {
                        shape: Shape::Struct { members, offsets },
                        leaves,
                        size,
                        align,
                        layout,
                    },
                );
            }
            O::TypePointer | O::TypeForwardPointer if ops.len() >= 3 => {
                let id = self.id(ops, 0)?;
                self.set_type(
                    id,
                    TypeInfo {
                        shape: Shape::Pointer { pointee: ops[2] },
                        ..TypeInfo::scalar(Scalar::Ptr)
                    },
                );
            }
            O::ConstantTrue | O::ConstantFalse | O::SpecConstantTrue | O::SpecConstantFalse => {
                let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                let mut v = u64::from(matches!(o, O::ConstantTrue | O::SpecConstantTrue));
                if let Some(s) = self.decor[id as usize]
                    .spec_id
                    .and_then(|s| self.spec.get(&s))
                {
                    v = u64::from(*s != 0);
                }
                self.add_const(id, ty, vec![v])?;
            }
            O::Constant | O::SpecConstant => {
                let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                let s = self
                    .ty(ty)?
                    .scalar_of()
                    .ok_or_else(|| malformed("constant of a non-scalar type"))?;
                let lo = u64::from(
                    *ops.get(2)
                        .ok_or_else(|| malformed("constant without a value"))?,
                );
                let hi = u64::from(ops.get(3).copied().unwrap_or(0));
                let mut v = (lo | (hi << 32)) & crate::num::mask(s.width());
                if let Some(x) = self.decor[id as usize]
                    .spec_id
                    .and_then(|s| self.spec.get(&s))
                {
                    v = x & crate::num::mask(s.width());
                }
                self.add_const(id, ty, vec![v])?;
            }
            O::ConstantComposite | O::SpecConstantComposite => {
                let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                let mut v = Vec::new();
                for c in &ops[2..] {
                    v.extend(self.const_leaves(*c)?);
                }
                if v.len() != self.ty(ty)?.leaves as usize {
                    return Err(malformed("composite constant of the wrong size"));
                }
                self.add_const(id, ty, v)?;
            }
            O::ConstantNull => {
                let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                let n = self.ty(ty)?.leaves as usize;
                self.add_const(id, ty, vec![0; n])?;
            }
            O::SpecConstantOp => {
                let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                let v = self.spec_op(ty, &ops[2..])?;
                self.add_const(id, ty, v)?;
            }
            O::Undef => {
                let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                self.p.ids[id as usize] = IdKind::Value(Src::Undef);
                self.p.id_ty[id as usize] = ty;
            }
            O::Variable => {
                let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                let class = *ops.get(2).ok_or_else(|| malformed("short OpVariable"))?;
                let pointee = match self.ty(ty)?.shape {
                    Shape::Pointer { pointee, .. } => pointee,
                    _ => return Err(malformed("variable of a non-pointer type")),
                };
                self.ty(pointee)?;
                let init = match ops.get(3) {
                    Some(c) => Some(match self.p.ids.get(*c as usize) {
                        Some(IdKind::Value(s)) => *s,
                        _ => return Err(malformed("variable initialiser is not a constant")),
                    }),
                    None => None,
                };
                let reg = self.p.nregs;
                self.p.nregs += 1;
                self.p.ids[id as usize] = IdKind::Value(Src::Reg(reg));
                self.p.id_ty[id as usize] = ty;
                let d = &self.decor[id as usize];
                let binding = match (d.set, d.binding) {
                    (None, None) => None,
                    (s, b) => Some((s.unwrap_or(0), b.unwrap_or(0))),
                };
                self.p.globals.push(Global {
                    id,
                    reg,
                    class,
                    pointee,
                    builtin: d.builtin,
                    binding,
                    init,
                    promoted: None,
                });
            }
            O::Line
            | O::NoLine
            | O::Name
            | O::MemberName
            | O::String
            | O::Source
            | O::SourceContinued
            | O::SourceExtension
            | O::ModuleProcessed
            | O::Capability
            | O::Extension
            | O::MemoryModel
            | O::Decorate
            | O::MemberDecorate
            | O::DecorationGroup
            | O::GroupDecorate
            | O::GroupMemberDecorate
            | O::DecorateId
            | O::DecorateString
            | O::MemberDecorateString
            | O::ExecutionMode
            | O::ExecutionModeId
            | O::ExtInstImport
            | O::Nop => {}
            O::ExtInst => {
                return Err(unsupported(
                    "extended instructions at module scope (debug info)",
                ))
            }
            _ => return Err(unsupported("this instruction at module scope")),
        }
        Ok(())
    }

    /// `OpSpecConstantOp` over scalar integer constants (what workgroup-size arithmetic needs).
    fn spec_op(&self, ty: u32, ops: &[u32]) -> Result<Vec<u64>> {
        let op = *ops
            .first()
            .ok_or_else(|| malformed("short OpSpecConstantOp"))?;
        let w = self.ty(ty)?.scalar_of().map_or(32, Scalar::width);
        let a = |k: usize| -> Result<u64> {
            self.const_leaves(
                *ops.get(k)
                    .ok_or_else(|| malformed("short OpSpecConstantOp"))?,
            )?
            .first()
            .copied()
            .ok_or_else(|| malformed("vector spec op"))
        };
        use spirv::Op as O;
        let m = crate::num::mask(w);
        let v = match O::from_u32(op) {
            Some(O::IAdd) => a(1)?.wrapping_add(a(2)?),
            Some(O::ISub) => a(1)?.wrapping_sub(a(2)?),
            Some(O::IMul) => a(1)?.wrapping_mul(a(2)?),
            Some(O::UDiv) => a(1)?.checked_div(a(2)?).unwrap_or(0),
            Some(O::UMod) => a(1)?.checked_rem(a(2)?).unwrap_or(0),
            Some(O::ShiftLeftLogical) => a(1)?.checked_shl(a(2)? as u32).unwrap_or(0),
            Some(O::ShiftRightLogical) => a(1)?.checked_shr(a(2)? as u32).unwrap_or(0),
            Some(O::BitwiseAnd) => a(1)? & a(2)?,
            Some(O::BitwiseOr) => a(1)? | a(2)?,
            Some(O::BitwiseXor) => a(1)? ^ a(2)?,
            Some(O::IEqual) => u64::from(a(1)? == a(2)?),
            Some(O::INotEqual) => u64::from(a(1)? != a(2)?),
            Some(O::ULessThan) => u64::from(a(1)? < a(2)?),
            Some(O::Select) => {
                if a(1)? != 0 {
                    a(2)?
                } else {
                    a(3)?
                }
            }
            Some(O::UConvert) | Some(O::SConvert) => a(1)?,
            Some(O::CompositeExtract) => {
                let c = self.const_leaves(*ops.get(1).ok_or_else(|| malformed("short"))?)?;
                *c.get(*ops.get(2).unwrap_or(&0) as usize)
                    .ok_or_else(|| malformed("index"))?
            }
            _ => {
                return Err(unsupported(format!(
                    "OpSpecConstantOp with {}",
                    crate::error::op_name(op)
                )))
            }
        };
        Ok(vec![v & m])
    }

    /// Registers for every result and parameter, blocks for every label.
    fn allocate(&mut self, fi: u32, body: &[(u32, u32, &[u32])]) -> Result<()> {
        let mut nblock = 0u32;
        for &(word, op, ops) in body.iter().skip(1) {
            let loc = Location::at(word, op, None);
            if op == spirv::Op::Label as u32 {
                let id = self.id(ops, 0).map_err(|e| e.at(&loc))?;
                self.p.ids[id as usize] = IdKind::Block(fi, nblock);
                nblock += 1;
                continue;
            }
            let (has_ty, has_res) = result_shape(op);
            if has_res && has_ty {
                let ty = self.id(ops, 0).map_err(|e| e.at(&loc))?;
                let id = self.id(ops, 1).map_err(|e| e.at(&loc))?;
                if self.p.ids[id as usize] != IdKind::None {
                    return Err(malformed(format!("%{id} defined twice")).at(&loc));
                }
                let leaves = self.ty(ty).map_err(|e| e.at(&loc))?.leaves;
                if op == spirv::Op::Undef as u32 {
                    self.p.ids[id as usize] = IdKind::Value(Src::Undef);
                } else {
                    self.p.ids[id as usize] = IdKind::Value(Src::Reg(self.p.nregs));
                    self.p.nregs = self
                        .p
                        .nregs
                        .checked_add(leaves)
                        .ok_or_else(|| unsupported("too many registers"))?;
                }
                self.p.id_ty[id as usize] = ty;
            }
        }
        Ok(())
    }

    fn src(&self, id: u32) -> Result<Src> {
        match self.p.ids.get(id as usize) {
            Some(IdKind::Value(s)) => Ok(*s),
            _ => Err(malformed(format!("%{id} is not a value"))),
        }
    }

    fn block_of(&self, fi: u32, id: u32) -> Result<u32> {
        match self.p.ids.get(id as usize) {
            Some(IdKind::Block(f, b)) if *f == fi => Ok(*b),
            _ => Err(malformed(format!("%{id} is not a block of this function"))),
        }
    }

    fn body(&mut self, fi: u32, body: &[(u32, u32, &[u32])]) -> Result<()> {
        let mut f = Func {
            id: self.p.funcs[fi as usize].id,
            ..Func::default()
        };
        for &(word, op, ops) in body.iter().skip(1) {
            let loc = Location::at(word, op, None);
            let r: Result<()> = (|| {
                match spirv::Op::from_u32(op) {
                    Some(spirv::Op::FunctionParameter) => {
                        let id = self.id(ops, 1)?;
                        let leaves = self.ty(self.p.id_ty[id as usize])?.leaves;
                        if let Src::Reg(r) = self.src(id)? {
                            f.params.push((r, leaves));
                            f.param_ids.push(id);
                        }
                    }
                    Some(spirv::Op::Label) => {
                        let label = self.id(ops, 0)?;
                        let start = f.insts.len() as u32;
                        f.blocks.push(Block {
                            label,
                            start,
                            end: start,
                            phis: Vec::new(),
                        });
                    }
                    Some(spirv::Op::Phi) => {
                        let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                        let leaves = self.ty(ty)?.leaves;
                        let res = match self.src(id)? {
                            Src::Reg(r) => r,
                            _ => return Err(malformed("phi result")),
                        };
                        let mut incoming = Vec::new();
                        for pair in ops[2..].chunks(2) {
                            if pair.len() != 2 {
                                return Err(malformed("odd OpPhi operands"));
                            }
                            incoming.push((self.block_of(fi, pair[1])?, self.src(pair[0])?));
                        }
                        let blk = f
                            .blocks
                            .last_mut()
                            .ok_or_else(|| malformed("phi outside a block"))?;
                        blk.phis.push(Phi {
                            res,
                            leaves,
                            incoming,
                            word,
                        });
                    }
                    Some(
                        spirv::Op::Line
                        | spirv::Op::NoLine
                        | spirv::Op::LoopMerge
                        | spirv::Op::SelectionMerge
                        | spirv::Op::Nop,
                    ) => {}
                    _ => {
                        let (has_ty, has_res) = result_shape(op);
                        let (ty, id, args) = match (has_ty, has_res) {
                            (true, true) => (self.id(ops, 0)?, self.id(ops, 1)?, &ops[2..]),
                            _ => (0, 0, ops),
                        };
                        let res = match (id, self.p.ids.get(id as usize)) {
                            (0, _) => u32::MAX,
                            (_, Some(IdKind::Value(Src::Reg(r)))) => *r,
                            _ => u32::MAX,
                        };
                        let blk = f
                            .blocks
                            .last_mut()
                            .ok_or_else(|| malformed("instruction outside a block"))?;
                        f.insts.push(Inst {
                            op,
                            decoded: spirv::Op::from_u32(op),
                            group: spirv::Op::from_u32(op).is_some_and(crate::opclass::is_group),
                            word,
                            id,
                            ty,
                            res,
                            args: args.to_vec(),
                            local: None,
                            forwarded: false,
                            bindings: Vec::new(),
                            row: None,
                            fast: None,
                            branch: None,
                            chain: None,
                            grp: None,
                            mem: None,
                        });
                        blk.end = f.insts.len() as u32;
                    }
                }
                Ok(())
            })();
            r.map_err(|e| e.at(&loc))?;
        }
        if f.blocks.is_empty() {
            return Err(malformed("a function without blocks"));
        }
        self.p.funcs[fi as usize] = f;
        Ok(())
    }
}

/// A vector, matrix or array of `n` elements of `e` at `stride`.
fn repeat(shape: Shape, e: &TypeInfo, n: u32, stride: u32) -> Result<TypeInfo> {
    let leaves = e
        .leaves
        .checked_mul(n)
        .filter(|l| *l <= MAX_LEAVES)
        .ok_or_else(|| {
            unsupported(format!(
                "a composite of {n} elements of {} scalars",
                e.leaves
            ))
        })?;
    let mut layout = Vec::with_capacity(leaves as usize);
    let size = u64::from(stride) * u64::from(n);
    if size > MAX_BYTES {
        return Err(unsupported(format!("a composite of {size} bytes")));
    }
    for k in 0..n {
        layout.extend(e.layout.iter().map(|(o, s)| (o + k * stride, *s)));
    }
    Ok(TypeInfo {
        shape,
        leaves,
        size: size as u32,
        align: e.align,
        layout,
    })
}

/// Whether an opcode has a result type and a result id (SPIR-V's grammar, for the opcodes that matter).
pub fn result_shape(op: u32) -> (bool, bool) {
    use spirv::Op as O;
    match O::from_u32(op) {
        Some(
            O::Store
            | O::CopyMemory
            | O::Branch
            | O::BranchConditional
            | O::Switch
            | O::Return
            | O::ReturnValue
            | O::Kill
            | O::Unreachable
            | O::ControlBarrier
            | O::MemoryBarrier
            | O::AtomicStore
            | O::LoopMerge
            | O::SelectionMerge
            | O::Line
            | O::NoLine
            | O::Nop
            | O::Label
            | O::FunctionEnd
            | O::TerminateInvocation
            | O::LifetimeStart
            | O::LifetimeStop
            | O::EmitVertex
            | O::EndPrimitive
            | O::ImageWrite,
        ) => (false, false),
        _ => (true, true),
    }
}
