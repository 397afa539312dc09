//! Translation: the SPIR-V binary, read once into dense tables (result ids to register slots,
//! labels to block indices, constants into one pool) so execution never searches for an id.
//!
//! This module holds the tables: the program, its functions, blocks and instructions, and the
//! forms resolved for the executor's fast paths; `build.rs` reads the binary into them.

use crate::error::{malformed, Location, Result};
use crate::types::{Scalar, TypeInfo};

mod build;

pub use build::translate;

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
