//! Random valid modules from a grammar of the subgroup operations in scope.
//!
//! A module is one GLCompute entry point whose body is random structured control flow
//! (selections on divergent conditions, loops with uniform or divergent trip counts and
//! conditional breaks) around random subgroup instructions: the KHR and core votes, Elect,
//! ballots and their bit operations, the mask built-ins, broadcasts, shuffles (plain, xor,
//! relative), quad operations, the 16 arithmetic operations as reduce/scan/clustered, the
//! partition instruction and partitioned reduce/scan on its result, over bool, 32-bit int
//! (signed and unsigned), float, 64-bit int and vector operands.
//! Every choice is made within the rules (types, constant operands, dominance, capabilities
//! and extensions declared for what is used), so the module is meant to be one `spirv-val`
//! accepts: the replay test checks that on the corpus, and an input it rejects is no property
//! failure, only a weaker test.

use std::collections::BTreeSet;

use arbitrary::{Result, Unstructured};
use rspirv::dr::{Builder, InsertPoint, Instruction, Operand};
use spirv::{BuiltIn, Capability, Decoration, GroupOperation, Op, StorageClass, Word};

/// The value types the grammar uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Bool,
    U32,
    I32,
    F32,
    U64,
    U32x2,
    F32x3,
    /// A `uvec4` ballot.
    Ballot,
    /// A `uvec4` from a partition instruction: the only ballots partitioned operations take.
    Partition,
}

const VALUE_TYS: &[Ty] = &[
    Ty::Bool,
    Ty::U32,
    Ty::I32,
    Ty::F32,
    Ty::U64,
    Ty::U32x2,
    Ty::F32x3,
    Ty::Ballot,
];

/// Builds a module from the fuzzer's bytes; `None` when the bytes run out before the header is chosen.
pub fn module_from_bytes(data: &[u8]) -> Option<Vec<u32>> {
    let mut u = Unstructured::new(data);
    Gen::build(&mut u).ok()
}

/// A small valid module with a KHR vote, a partition and a partitioned reduce or scan: the
/// grammar's first module from [`seed_bytes`] that has all three, for the target-file target.
pub fn sample_module() -> Vec<u32> {
    static SAMPLE: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    SAMPLE
        .get_or_init(|| {
            (0..10_000)
                .filter_map(|seed| module_from_bytes(&seed_bytes(seed, 256)))
                .find(|w| has_vote_partition_and_partitioned_op(w))
                .unwrap_or_default()
        })
        .clone()
}

/// `n` bytes of a xorshift stream: grammar input without a corpus (tests, the sample module).
pub fn seed_bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Whether `words` hold `OpSubgroup*KHR`, `OpGroupNonUniformPartitionNV` and an arithmetic op
/// with a partitioned group operation.
pub fn has_vote_partition_and_partitioned_op(words: &[u32]) -> bool {
    let (mut vote, mut partition, mut partitioned) = (false, false, false);
    let mut i = 5;
    while i < words.len() {
        let op = words[i] & 0xffff;
        let len = (words[i] >> 16).max(1) as usize;
        vote |= (Op::SubgroupAllKHR as u32..=Op::SubgroupAllEqualKHR as u32).contains(&op);
        partition |= op == Op::GroupNonUniformPartitionNV as u32;
        partitioned |= (Op::GroupNonUniformIAdd as u32..=Op::GroupNonUniformLogicalXor as u32)
            .contains(&op)
            && words.get(i + 4).is_some_and(|g| (6..=8).contains(g));
        i += len;
    }
    vote && partition && partitioned
}

struct Gen<'a, 'b> {
    u: &'a mut Unstructured<'b>,
    b: Builder,
    version: (u8, u8),
    void: Word,
    bool_ty: Word,
    u32_ty: Word,
    i32_ty: Word,
    f32_ty: Word,
    u64_ty: Word,
    u32x2_ty: Word,
    f32x3_ty: Word,
    uvec4_ty: Word,
    ptr_fn_u32: Word,
    ptr_in_u32: Word,
    ptr_in_uvec4: Word,
    scope_subgroup: Word,
    lane: Word,
    /// Values usable here: one frame per open construct (a value defined inside a construct does
    /// not dominate its merge block).
    frames: Vec<Vec<(Ty, Word)>>,
    caps: BTreeSet<u32>,
    exts: BTreeSet<&'static str>,
    interface: Vec<Word>,
    masks: Vec<(BuiltIn, Word)>,
    counters: Vec<Word>,
    /// Instructions still to emit.
    budget: u32,
    /// Whether 64-bit operands are used (and `Int64` declared).
    wide: bool,
}

impl<'a, 'b> Gen<'a, 'b> {
    fn build(u: &'a mut Unstructured<'b>) -> Result<Vec<u32>> {
        let version = *u.choose(&[(1, 3), (1, 3), (1, 3), (1, 4), (1, 5), (1, 6)])?;
        let budget = u.int_in_range(4..=60)?;
        let mut b = Builder::new();
        b.set_version(version.0, version.1);
        let void = b.type_void();
        let bool_ty = b.type_bool();
        let u32_ty = b.type_int(32, 0);
        let i32_ty = b.type_int(32, 1);
        let f32_ty = b.type_float(32, None);
        // 64-bit operands only in some modules: the type needs the Int64 capability.
        let wide = u.arbitrary::<bool>()?;
        let u64_ty = if wide { b.type_int(64, 0) } else { u32_ty };
        let u32x2_ty = b.type_vector(u32_ty, 2);
        let f32x3_ty = b.type_vector(f32_ty, 3);
        let uvec4_ty = b.type_vector(u32_ty, 4);
        let ptr_fn_u32 = b.type_pointer(None, StorageClass::Function, u32_ty);
        let ptr_in_u32 = b.type_pointer(None, StorageClass::Input, u32_ty);
        let ptr_in_uvec4 = b.type_pointer(None, StorageClass::Input, uvec4_ty);
        let scope_subgroup = b.constant_bit32(u32_ty, spirv::Scope::Subgroup as u32);
        let lane = b.variable(ptr_in_u32, None, StorageClass::Input, None);
        b.decorate(
            lane,
            Decoration::BuiltIn,
            [Operand::BuiltIn(BuiltIn::SubgroupLocalInvocationId)],
        );
        let mut g = Gen {
            u,
            b,
            version,
            void,
            bool_ty,
            u32_ty,
            i32_ty,
            f32_ty,
            u64_ty,
            u32x2_ty,
            f32x3_ty,
            uvec4_ty,
            ptr_fn_u32,
            ptr_in_u32,
            ptr_in_uvec4,
            scope_subgroup,
            lane,
            frames: vec![Vec::new()],
            caps: BTreeSet::new(),
            exts: BTreeSet::new(),
            interface: vec![lane],
            masks: Vec::new(),
            counters: Vec::new(),
            budget,
            wide,
        };
        g.cap(Capability::Shader);
        g.cap(Capability::GroupNonUniform);
        if wide {
            g.cap(Capability::Int64);
        }
        g.main();
        Ok(g.finish())
    }

    fn cap(&mut self, c: Capability) {
        self.caps.insert(c as u32);
    }

    fn ty_id(&self, t: Ty) -> Word {
        match t {
            Ty::Bool => self.bool_ty,
            Ty::U32 => self.u32_ty,
            Ty::I32 => self.i32_ty,
            Ty::F32 => self.f32_ty,
            Ty::U64 => self.u64_ty,
            Ty::U32x2 => self.u32x2_ty,
            Ty::F32x3 => self.f32x3_ty,
            Ty::Ballot | Ty::Partition => self.uvec4_ty,
        }
    }

    /// Emits one instruction with a result into the current block.
    fn emit(&mut self, op: Op, t: Ty, operands: Vec<Operand>) -> Word {
        let id = self.b.id();
        let ty = self.ty_id(t);
        self.b
            .insert_into_block(
                InsertPoint::End,
                Instruction::new(op, Some(ty), Some(id), operands),
            )
            .expect("the grammar emits only inside a block");
        id
    }

    fn push(&mut self, t: Ty, id: Word) -> Word {
        if let Some(f) = self.frames.last_mut() {
            f.push((t, id));
        }
        id
    }

    fn available(&self, t: Ty) -> Vec<Word> {
        self.frames
            .iter()
            .flatten()
            .filter(|(vt, _)| *vt == t || (t == Ty::Ballot && *vt == Ty::Partition))
            .map(|(_, id)| *id)
            .collect()
    }

    fn u32_const(&mut self, v: u32) -> Word {
        self.b.constant_bit32(self.u32_ty, v)
    }

    fn main(&mut self) {
        let fn_ty = self.b.type_function(self.void, vec![]);
        let main = self
            .b
            .begin_function(self.void, None, spirv::FunctionControl::NONE, fn_ty)
            .expect("no function is open");
        self.b.begin_block(None).expect("no block is open");
        // Loop counters must be declared in the entry block.
        for _ in 0..4 {
            let v = self
                .b
                .variable(self.ptr_fn_u32, None, StorageClass::Function, None);
            self.counters.push(v);
        }
        self.body(0, None);
        self.b.ret().expect("a block is open");
        self.b.end_function().expect("the function is open");
        self.b.entry_point(
            spirv::ExecutionModel::GLCompute,
            main,
            "main",
            self.interface.clone(),
        );
        self.b
            .execution_mode(main, spirv::ExecutionMode::LocalSize, [64, 1, 1]);
    }

    /// A sequence of statements in the current block; `in_loop` is the innermost loop's merge
    /// block when the sequence is directly in a loop body (where a conditional break may go).
    fn body(&mut self, depth: u32, in_loop: Option<Word>) {
        let n = self.u.int_in_range(1..=5).unwrap_or(1);
        for _ in 0..n {
            if self.budget == 0 {
                return;
            }
            let choice = self.u.int_in_range(0..=9).unwrap_or(0);
            match choice {
                7 if depth < 3 => self.selection(depth),
                8 if depth < 3 && (depth as usize) < self.counters.len() => self.looped(depth),
                9 => {
                    if let Some(merge) = in_loop {
                        let c = self.value(Ty::Bool, 2);
                        let next = self.b.id();
                        self.b
                            .branch_conditional(c, merge, next, [])
                            .expect("a block is open");
                        self.b.begin_block(Some(next)).expect("no block is open");
                    }
                }
                _ => {
                    let t = self.pick_ty(VALUE_TYS);
                    let v = self.op(t, 3);
                    self.push(t, v);
                }
            }
        }
    }

    fn selection(&mut self, depth: u32) {
        let c = self.value(Ty::Bool, 2);
        let then_l = self.b.id();
        let merge = self.b.id();
        let has_else = self.u.arbitrary::<bool>().unwrap_or(false);
        let else_l = if has_else { self.b.id() } else { merge };
        self.b
            .selection_merge(merge, spirv::SelectionControl::NONE)
            .expect("a block is open");
        self.b
            .branch_conditional(c, then_l, else_l, [])
            .expect("a block is open");
        for (label, present) in [(then_l, true), (else_l, has_else)] {
            if !present {
                continue;
            }
            self.b.begin_block(Some(label)).expect("no block is open");
            self.frames.push(Vec::new());
            self.body(depth + 1, None);
            self.frames.pop();
            self.b.branch(merge).expect("a block is open");
        }
        self.b.begin_block(Some(merge)).expect("no block is open");
    }

    /// `for (i = 0; i < bound; i++) { body }` with a uniform or lane-dependent bound.
    fn looped(&mut self, depth: u32) {
        let counter = self.counters[depth as usize];
        let bound = if self.u.arbitrary::<bool>().unwrap_or(false) {
            let lane = self.lane_id();
            let three = self.u32_const(3);
            self.emit(
                Op::BitwiseAnd,
                Ty::U32,
                vec![Operand::IdRef(lane), Operand::IdRef(three)],
            )
        } else {
            let n = self.u.int_in_range(0..=3).unwrap_or(1);
            self.u32_const(n)
        };
        let zero = self.u32_const(0);
        self.b
            .store(counter, zero, None, [])
            .expect("a block is open");
        let header = self.b.id();
        let cond_l = self.b.id();
        let body_l = self.b.id();
        let cont = self.b.id();
        let merge = self.b.id();
        self.b.branch(header).expect("a block is open");
        self.b.begin_block(Some(header)).expect("no block is open");
        self.b
            .loop_merge(merge, cont, spirv::LoopControl::NONE, [])
            .expect("a block is open");
        self.b.branch(cond_l).expect("a block is open");
        self.b.begin_block(Some(cond_l)).expect("no block is open");
        let i = self.emit(Op::Load, Ty::U32, vec![Operand::IdRef(counter)]);
        let more = self.emit(
            Op::ULessThan,
            Ty::Bool,
            vec![Operand::IdRef(i), Operand::IdRef(bound)],
        );
        self.b
            .branch_conditional(more, body_l, merge, [])
            .expect("a block is open");
        self.b.begin_block(Some(body_l)).expect("no block is open");
        self.frames.push(Vec::new());
        self.body(depth + 1, Some(merge));
        self.frames.pop();
        self.b.branch(cont).expect("a block is open");
        self.b.begin_block(Some(cont)).expect("no block is open");
        let i = self.emit(Op::Load, Ty::U32, vec![Operand::IdRef(counter)]);
        let one = self.u32_const(1);
        let next = self.emit(
            Op::IAdd,
            Ty::U32,
            vec![Operand::IdRef(i), Operand::IdRef(one)],
        );
        self.b
            .store(counter, next, None, [])
            .expect("a block is open");
        self.b.branch(header).expect("a block is open");
        self.b.begin_block(Some(merge)).expect("no block is open");
    }

    fn lane_id(&mut self) -> Word {
        self.emit(Op::Load, Ty::U32, vec![Operand::IdRef(self.lane)])
    }

    /// A value of type `t`: one already defined here, a constant, one derived from the lane id,
    /// or (while `depth` lasts) the result of a subgroup instruction.
    fn value(&mut self, t: Ty, depth: u32) -> Word {
        let have = self.available(t);
        let pick = self.u.int_in_range(0..=3).unwrap_or(0);
        if pick == 0 && !have.is_empty() {
            return *self.u.choose(&have).unwrap_or(&have[0]);
        }
        if pick == 1 || depth == 0 || self.budget == 0 {
            return self.leaf(t);
        }
        self.op(t, depth - 1)
    }

    /// A constant or a lane-dependent value of type `t`, without subgroup instructions.
    fn leaf(&mut self, t: Ty) -> Word {
        let divergent = self.u.arbitrary::<bool>().unwrap_or(false);
        match t {
            Ty::Bool => {
                if divergent {
                    let lane = self.lane_id();
                    let k = self.u.int_in_range(0..=8).unwrap_or(1);
                    let k = self.u32_const(k);
                    self.emit(
                        Op::ULessThan,
                        Ty::Bool,
                        vec![Operand::IdRef(lane), Operand::IdRef(k)],
                    )
                } else if self.u.arbitrary::<bool>().unwrap_or(true) {
                    self.b.constant_true(self.bool_ty)
                } else {
                    self.b.constant_false(self.bool_ty)
                }
            }
            Ty::U32 | Ty::I32 | Ty::F32 => {
                if divergent {
                    let lane = self.lane_id();
                    let k = self.u.int_in_range(1..=4).unwrap_or(1);
                    let k = self.u32_const(k);
                    let v = self.emit(
                        Op::UDiv,
                        Ty::U32,
                        vec![Operand::IdRef(lane), Operand::IdRef(k)],
                    );
                    match t {
                        Ty::U32 => v,
                        Ty::I32 => self.emit(Op::Bitcast, Ty::I32, vec![Operand::IdRef(v)]),
                        _ => self.emit(Op::ConvertUToF, Ty::F32, vec![Operand::IdRef(v)]),
                    }
                } else {
                    let bits = if t == Ty::F32 {
                        *self
                            .u
                            .choose(&[
                                0u32,
                                0x8000_0000,
                                0x3f80_0000,
                                0x7fc0_0000,
                                0xbf80_0000,
                                0x7f80_0000,
                            ])
                            .unwrap_or(&0)
                    } else {
                        self.u.arbitrary::<u8>().unwrap_or(0) as u32
                    };
                    let ty = self.ty_id(t);
                    self.b.constant_bit32(ty, bits)
                }
            }
            Ty::U64 => {
                if divergent {
                    let lane = self.lane_id();
                    self.emit(Op::UConvert, Ty::U64, vec![Operand::IdRef(lane)])
                } else {
                    let v = self.u.arbitrary::<u64>().unwrap_or(0) & 0xff_0000_00ff;
                    self.b.constant_bit64(self.u64_ty, v)
                }
            }
            Ty::U32x2 | Ty::F32x3 => {
                let (elem, n) = if t == Ty::U32x2 {
                    (Ty::U32, 2)
                } else {
                    (Ty::F32, 3)
                };
                let parts: Vec<Operand> = (0..n).map(|_| Operand::IdRef(self.leaf(elem))).collect();
                self.emit(Op::CompositeConstruct, t, parts)
            }
            Ty::Ballot | Ty::Partition => {
                if self.masks.is_empty() || self.u.arbitrary::<bool>().unwrap_or(false) {
                    let b = *self
                        .u
                        .choose(&[
                            BuiltIn::SubgroupEqMask,
                            BuiltIn::SubgroupGeMask,
                            BuiltIn::SubgroupGtMask,
                            BuiltIn::SubgroupLeMask,
                            BuiltIn::SubgroupLtMask,
                        ])
                        .unwrap_or(&BuiltIn::SubgroupEqMask);
                    let var = self.mask_var(b);
                    self.cap(Capability::GroupNonUniformBallot);
                    self.emit(Op::Load, Ty::Ballot, vec![Operand::IdRef(var)])
                } else {
                    let zero = self.u32_const(0);
                    let parts = vec![Operand::IdRef(zero); 4];
                    self.emit(Op::CompositeConstruct, Ty::Ballot, parts)
                }
            }
        }
    }

    /// The input variable of a mask built-in, declared on first use.
    fn mask_var(&mut self, b: BuiltIn) -> Word {
        if let Some((_, v)) = self.masks.iter().find(|(m, _)| *m == b) {
            return *v;
        }
        let id = self.b.id();
        self.b
            .module_mut()
            .types_global_values
            .push(Instruction::new(
                Op::Variable,
                Some(self.ptr_in_uvec4),
                Some(id),
                vec![Operand::StorageClass(StorageClass::Input)],
            ));
        self.b
            .decorate(id, Decoration::BuiltIn, [Operand::BuiltIn(b)]);
        self.interface.push(id);
        self.masks.push((b, id));
        id
    }

    /// A subgroup instruction with a result of type `t` (operands from [`Self::value`]).
    fn op(&mut self, t: Ty, depth: u32) -> Word {
        self.budget = self.budget.saturating_sub(1);
        let scope = Operand::IdRef(self.scope_subgroup);
        let kind = self.u.int_in_range(0..=5).unwrap_or(0);
        match (t, kind) {
            (Ty::Bool, 0) => {
                let p = self.value(Ty::Bool, depth);
                let op = *self
                    .u
                    .choose(&[
                        Op::SubgroupAllKHR,
                        Op::SubgroupAnyKHR,
                        Op::SubgroupAllEqualKHR,
                    ])
                    .unwrap_or(&Op::SubgroupAnyKHR);
                self.cap(Capability::SubgroupVoteKHR);
                self.exts.insert("SPV_KHR_subgroup_vote");
                self.emit(op, Ty::Bool, vec![Operand::IdRef(p)])
            }
            (Ty::Bool, 1) => {
                let p = self.value(Ty::Bool, depth);
                let op = *self
                    .u
                    .choose(&[Op::GroupNonUniformAll, Op::GroupNonUniformAny])
                    .unwrap_or(&Op::GroupNonUniformAll);
                self.cap(Capability::GroupNonUniformVote);
                self.emit(op, Ty::Bool, vec![scope, Operand::IdRef(p)])
            }
            (Ty::Bool, 2) => {
                let vt = self.pick_ty(VALUE_TYS);
                let v = self.value(vt, depth);
                self.cap(Capability::GroupNonUniformVote);
                self.emit(
                    Op::GroupNonUniformAllEqual,
                    Ty::Bool,
                    vec![scope, Operand::IdRef(v)],
                )
            }
            (Ty::Bool, 3) => {
                let ballot = self.value(Ty::Ballot, depth);
                self.cap(Capability::GroupNonUniformBallot);
                if self.u.arbitrary::<bool>().unwrap_or(false) {
                    self.emit(
                        Op::GroupNonUniformInverseBallot,
                        Ty::Bool,
                        vec![scope, Operand::IdRef(ballot)],
                    )
                } else {
                    let i = self.value(Ty::U32, 0);
                    self.emit(
                        Op::GroupNonUniformBallotBitExtract,
                        Ty::Bool,
                        vec![scope, Operand::IdRef(ballot), Operand::IdRef(i)],
                    )
                }
            }
            (Ty::Bool, 4) => self.emit(Op::GroupNonUniformElect, Ty::Bool, vec![scope]),
            (Ty::U32, 0) => {
                let ballot = self.value(Ty::Ballot, depth);
                self.cap(Capability::GroupNonUniformBallot);
                match self.u.int_in_range(0..=2).unwrap_or(0) {
                    0 => {
                        let g = self.group_op();
                        self.emit(
                            Op::GroupNonUniformBallotBitCount,
                            Ty::U32,
                            vec![scope, Operand::GroupOperation(g), Operand::IdRef(ballot)],
                        )
                    }
                    1 => self.emit(
                        Op::GroupNonUniformBallotFindLSB,
                        Ty::U32,
                        vec![scope, Operand::IdRef(ballot)],
                    ),
                    _ => self.emit(
                        Op::GroupNonUniformBallotFindMSB,
                        Ty::U32,
                        vec![scope, Operand::IdRef(ballot)],
                    ),
                }
            }
            (Ty::Ballot, 0 | 1) => {
                let p = self.value(Ty::Bool, depth);
                self.cap(Capability::GroupNonUniformBallot);
                self.emit(
                    Op::GroupNonUniformBallot,
                    Ty::Ballot,
                    vec![scope, Operand::IdRef(p)],
                )
            }
            (Ty::Ballot, 2 | 3) => self.partition(depth),
            (_, 1..=3) if t != Ty::Ballot => self.arith(t, depth),
            _ => self.movement(t, depth),
        }
    }

    /// One of `tys`, with 64-bit operands replaced by 32-bit ones when the module has no `Int64`.
    fn pick_ty(&mut self, tys: &[Ty]) -> Ty {
        match *self.u.choose(tys).unwrap_or(&Ty::U32) {
            Ty::U64 if !self.wide => Ty::U32,
            t => t,
        }
    }

    fn group_op(&mut self) -> GroupOperation {
        *self
            .u
            .choose(&[
                GroupOperation::Reduce,
                GroupOperation::InclusiveScan,
                GroupOperation::ExclusiveScan,
            ])
            .unwrap_or(&GroupOperation::Reduce)
    }

    fn partition(&mut self, depth: u32) -> Word {
        let kt = self.pick_ty(&[
            Ty::Bool,
            Ty::U32,
            Ty::I32,
            Ty::F32,
            Ty::U64,
            Ty::U32x2,
            Ty::F32x3,
        ]);
        let key = self.value(kt, depth);
        self.cap(Capability::GroupNonUniformPartitionedNV);
        self.exts.insert("SPV_NV_shader_subgroup_partitioned");
        let p = self.emit(
            Op::GroupNonUniformPartitionNV,
            Ty::Partition,
            vec![Operand::IdRef(key)],
        );
        self.push(Ty::Partition, p)
    }

    /// One of the 16 arithmetic operations that fits `t`, as reduce/scan, clustered or partitioned.
    fn arith(&mut self, t: Ty, depth: u32) -> Word {
        let ops: &[Op] = match t {
            Ty::Bool => &[
                Op::GroupNonUniformLogicalAnd,
                Op::GroupNonUniformLogicalOr,
                Op::GroupNonUniformLogicalXor,
            ],
            Ty::U32 | Ty::U64 | Ty::U32x2 => &[
                Op::GroupNonUniformIAdd,
                Op::GroupNonUniformIMul,
                Op::GroupNonUniformUMin,
                Op::GroupNonUniformUMax,
                Op::GroupNonUniformBitwiseAnd,
                Op::GroupNonUniformBitwiseOr,
                Op::GroupNonUniformBitwiseXor,
            ],
            Ty::I32 => &[
                Op::GroupNonUniformIAdd,
                Op::GroupNonUniformSMin,
                Op::GroupNonUniformSMax,
                Op::GroupNonUniformBitwiseXor,
            ],
            Ty::F32 | Ty::F32x3 => &[
                Op::GroupNonUniformFAdd,
                Op::GroupNonUniformFMul,
                Op::GroupNonUniformFMin,
                Op::GroupNonUniformFMax,
            ],
            Ty::Ballot | Ty::Partition => return self.movement(Ty::Ballot, depth),
        };
        let op = *self.u.choose(ops).unwrap_or(&ops[0]);
        let v = self.value(t, depth);
        let scope = Operand::IdRef(self.scope_subgroup);
        match self.u.int_in_range(0..=3).unwrap_or(0) {
            0 | 1 => {
                let g = self.group_op();
                self.cap(Capability::GroupNonUniformArithmetic);
                self.emit(
                    op,
                    t,
                    vec![scope, Operand::GroupOperation(g), Operand::IdRef(v)],
                )
            }
            2 => {
                let size = 1u32 << self.u.int_in_range(0..=5).unwrap_or(0);
                let size = self.u32_const(size);
                self.cap(Capability::GroupNonUniformClustered);
                self.emit(
                    op,
                    t,
                    vec![
                        scope,
                        Operand::GroupOperation(GroupOperation::ClusteredReduce),
                        Operand::IdRef(v),
                        Operand::IdRef(size),
                    ],
                )
            }
            _ => {
                let have = self.available(Ty::Partition);
                let ballot = match self.u.choose(&have) {
                    Ok(b) if self.u.arbitrary::<bool>().unwrap_or(false) => *b,
                    _ => self.partition(depth),
                };
                let g = *self
                    .u
                    .choose(&[
                        GroupOperation::PartitionedReduceNV,
                        GroupOperation::PartitionedInclusiveScanNV,
                        GroupOperation::PartitionedExclusiveScanNV,
                    ])
                    .unwrap_or(&GroupOperation::PartitionedReduceNV);
                self.emit(
                    op,
                    t,
                    vec![
                        scope,
                        Operand::GroupOperation(g),
                        Operand::IdRef(v),
                        Operand::IdRef(ballot),
                    ],
                )
            }
        }
    }

    /// A broadcast, shuffle or quad operation moving a value of type `t` between lanes.
    fn movement(&mut self, t: Ty, depth: u32) -> Word {
        let t = if t == Ty::Partition { Ty::Ballot } else { t };
        let v = self.value(t, depth);
        let scope = Operand::IdRef(self.scope_subgroup);
        let kind = self.u.int_in_range(0..=7).unwrap_or(0);
        let (op, cap, extra) = match kind {
            0 => (
                Op::GroupNonUniformBroadcastFirst,
                Capability::GroupNonUniformBallot,
                None,
            ),
            1 => {
                let k = self.u.int_in_range(0..=63).unwrap_or(0);
                (
                    Op::GroupNonUniformBroadcast,
                    Capability::GroupNonUniformBallot,
                    Some(self.u32_const(k)),
                )
            }
            2 => {
                let i = self.value(Ty::U32, 0);
                (
                    Op::GroupNonUniformShuffle,
                    Capability::GroupNonUniformShuffle,
                    Some(i),
                )
            }
            3 => {
                let i = self.value(Ty::U32, 0);
                (
                    Op::GroupNonUniformShuffleXor,
                    Capability::GroupNonUniformShuffle,
                    Some(i),
                )
            }
            4 => {
                let i = self.value(Ty::U32, 0);
                (
                    Op::GroupNonUniformShuffleUp,
                    Capability::GroupNonUniformShuffleRelative,
                    Some(i),
                )
            }
            5 => {
                let i = self.value(Ty::U32, 0);
                (
                    Op::GroupNonUniformShuffleDown,
                    Capability::GroupNonUniformShuffleRelative,
                    Some(i),
                )
            }
            6 => {
                let k = self.u.int_in_range(0..=3).unwrap_or(0);
                (
                    Op::GroupNonUniformQuadBroadcast,
                    Capability::GroupNonUniformQuad,
                    Some(self.u32_const(k)),
                )
            }
            _ => {
                let k = self.u.int_in_range(0..=2).unwrap_or(0);
                (
                    Op::GroupNonUniformQuadSwap,
                    Capability::GroupNonUniformQuad,
                    Some(self.u32_const(k)),
                )
            }
        };
        self.cap(cap);
        let mut operands = vec![scope, Operand::IdRef(v)];
        operands.extend(extra.map(Operand::IdRef));
        self.emit(op, t, operands)
    }

    fn finish(mut self) -> Vec<u32> {
        let _ = (self.version, self.ptr_in_u32);
        for c in std::mem::take(&mut self.caps) {
            if let Some(cap) = Capability::from_u32(c) {
                self.b.capability(cap);
            }
        }
        for e in std::mem::take(&mut self.exts) {
            self.b.extension(e);
        }
        self.b
            .memory_model(spirv::AddressingModel::Logical, spirv::MemoryModel::GLSL450);
        let module = self.b.module();
        rspirv::binary::Assemble::assemble(&module)
    }
}
