//! Generator of large, valid SPIR-V modules for the benchmarks.
//!
//! The module is a Vulkan 1.1 (SPIR-V 1.3) module with a compute and a fragment entry point that both
//! call every generated function (through "group" functions of 64 calls each). Every generated function
//! uses `OpSubgroupAllKHR`/`AnyKHR`/`AllEqualKHR`, `OpGroupNonUniformPartitionNV` on int, float, bool and
//! vector keys, and the partitioned reduce/inclusive/exclusive forms of the 16 arithmetic ops, inside
//! divergent structured control flow (if/else with `OpSelectionMerge`, loops with `OpLoopMerge`, `OpPhi`
//! at every merge), mixed with filler: buffer and local loads/stores, integer and float arithmetic,
//! conversions, composites and GLSL.std.450 calls.
//!
//! Words are written directly (the `spirv` crate gives the opcodes); the output is a pure function of
//! the seed and the target size. Functions are added until the module reaches the target size.

use spirv::Op;

/// Small deterministic PRNG (splitmix64): the generator's only source of variation.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// The value types the function bodies compute with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    U,
    I,
    F,
    B,
    V2F,
    V4F,
    V3U,
    V2I,
    /// A partition ballot (uvec4 from `OpGroupNonUniformPartitionNV`), kept apart so every
    /// partitioned op's ballot provably comes from a partition op.
    Bal,
}

const NTY: usize = 9;
const KEY_TYPES: [Ty; 8] = [
    Ty::U,
    Ty::I,
    Ty::F,
    Ty::B,
    Ty::V2F,
    Ty::V4F,
    Ty::V3U,
    Ty::V2I,
];

impl Ty {
    fn idx(self) -> usize {
        self as usize
    }
}

/// Ids of the types.
#[derive(Debug, Default)]
struct Types {
    void: u32,
    bool_: u32,
    uint: u32,
    int: u32,
    float: u32,
    v2f: u32,
    v4f: u32,
    v3u: u32,
    v4u: u32,
    v2i: u32,
    fn_void: u32,
    fn_uint_uint: u32,
    ptr_sb_uint: u32,
    ptr_sb_float: u32,
    ptr_fn_uint: u32,
    ptr_fn_float: u32,
    ptr_fn_v4f: u32,
    ptr_in_uint: u32,
    ptr_in_float: u32,
}

/// One instruction: header word then operands.
fn inst(out: &mut Vec<u32>, op: Op, operands: &[u32]) {
    out.push(((operands.len() as u32 + 1) << 16) | op as u32);
    out.extend_from_slice(operands);
}

/// A literal string, nul-terminated and padded to whole words.
fn string_words(s: &str) -> Vec<u32> {
    let mut bytes = s.as_bytes().to_vec();
    bytes.push(0);
    bytes.resize(bytes.len().div_ceil(4) * 4, 0);
    bytes
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn inst_str(out: &mut Vec<u32>, op: Op, before: &[u32], s: &str) {
    let mut ops = before.to_vec();
    ops.extend(string_words(s));
    inst(out, op, &ops);
}

/// The generator's state: module sections, ids, and the per-function value pools.
#[derive(Debug)]
struct Gen {
    rng: Rng,
    next_id: u32,
    names: Vec<u32>,
    annotations: Vec<u32>,
    globals: Vec<u32>,
    funcs: Vec<u32>,
    t: Types,
    glsl: u32,
    /// uint constants 0..=31 (index = value), also the scope constant (3 = Subgroup).
    cu: Vec<u32>,
    /// int constants -8..=7 (index = value + 8).
    ci: Vec<u32>,
    /// float constants.
    cf: Vec<u32>,
    c_true: u32,
    c_false: u32,
    buf: u32,
    fbuf: u32,
    gid: u32,
    frag_coord: u32,
    color: u32,
    // Per function:
    pool: [Vec<u32>; NTY],
    cur_block: u32,
    local_u: u32,
    local_f: u32,
    local_v4: u32,
    idx: u32,
    /// Mean number of top-level random statements per function.
    body: usize,
}

impl Gen {
    fn id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn name(&mut self, id: u32, name: &str) {
        inst_str(&mut self.names, Op::Name, &[id], name);
    }

    fn decorate(&mut self, ops: &[u32]) {
        inst(&mut self.annotations, Op::Decorate, ops);
    }

    fn global(&mut self, op: Op, ops: &[u32]) {
        inst(&mut self.globals, op, ops);
    }

    fn ty(&self, ty: Ty) -> u32 {
        match ty {
            Ty::U => self.t.uint,
            Ty::I => self.t.int,
            Ty::F => self.t.float,
            Ty::B => self.t.bool_,
            Ty::V2F => self.t.v2f,
            Ty::V4F => self.t.v4f,
            Ty::V3U => self.t.v3u,
            Ty::V2I => self.t.v2i,
            Ty::Bal => self.t.v4u,
        }
    }

    fn new(seed: u64) -> Self {
        let mut g = Gen {
            rng: Rng(seed),
            next_id: 1,
            names: Vec::new(),
            annotations: Vec::new(),
            globals: Vec::new(),
            funcs: Vec::new(),
            t: Types::default(),
            glsl: 0,
            cu: Vec::new(),
            ci: Vec::new(),
            cf: Vec::new(),
            c_true: 0,
            c_false: 0,
            buf: 0,
            fbuf: 0,
            gid: 0,
            frag_coord: 0,
            color: 0,
            pool: Default::default(),
            cur_block: 0,
            local_u: 0,
            local_f: 0,
            local_v4: 0,
            idx: 0,
            body: DEFAULT_BODY,
        };
        g.declare();
        g
    }

    /// Types, constants, interface and resource variables, and their decorations.
    fn declare(&mut self) {
        self.glsl = self.id();
        let t = &mut Types::default();
        t.void = self.id();
        self.global(Op::TypeVoid, &[t.void]);
        t.bool_ = self.id();
        self.global(Op::TypeBool, &[t.bool_]);
        t.uint = self.id();
        self.global(Op::TypeInt, &[t.uint, 32, 0]);
        t.int = self.id();
        self.global(Op::TypeInt, &[t.int, 32, 1]);
        t.float = self.id();
        self.global(Op::TypeFloat, &[t.float, 32]);
        t.v2f = self.id();
        self.global(Op::TypeVector, &[t.v2f, t.float, 2]);
        t.v4f = self.id();
        self.global(Op::TypeVector, &[t.v4f, t.float, 4]);
        t.v3u = self.id();
        self.global(Op::TypeVector, &[t.v3u, t.uint, 3]);
        t.v4u = self.id();
        self.global(Op::TypeVector, &[t.v4u, t.uint, 4]);
        t.v2i = self.id();
        self.global(Op::TypeVector, &[t.v2i, t.int, 2]);
        t.fn_void = self.id();
        self.global(Op::TypeFunction, &[t.fn_void, t.void]);
        t.fn_uint_uint = self.id();
        self.global(Op::TypeFunction, &[t.fn_uint_uint, t.uint, t.uint]);

        // Storage buffers: struct { uint data[]; } and struct { float data[]; }.
        let sb = |g: &mut Gen, elem: u32, binding: u32, name: &str| -> (u32, u32) {
            let arr = g.id();
            g.global(Op::TypeRuntimeArray, &[arr, elem]);
            g.decorate(&[arr, spirv::Decoration::ArrayStride as u32, 4]);
            let st = g.id();
            g.global(Op::TypeStruct, &[st, arr]);
            g.decorate(&[st, spirv::Decoration::Block as u32]);
            inst(
                &mut g.annotations,
                Op::MemberDecorate,
                &[st, 0, spirv::Decoration::Offset as u32, 0],
            );
            let ptr = g.id();
            g.global(
                Op::TypePointer,
                &[ptr, spirv::StorageClass::StorageBuffer as u32, st],
            );
            let elem_ptr = g.id();
            g.global(
                Op::TypePointer,
                &[elem_ptr, spirv::StorageClass::StorageBuffer as u32, elem],
            );
            let var = g.id();
            g.global(
                Op::Variable,
                &[ptr, var, spirv::StorageClass::StorageBuffer as u32],
            );
            g.decorate(&[var, spirv::Decoration::DescriptorSet as u32, 0]);
            g.decorate(&[var, spirv::Decoration::Binding as u32, binding]);
            g.name(st, &format!("{name}_block"));
            g.name(var, name);
            (elem_ptr, var)
        };
        let (p, v) = sb(self, t.uint, 0, "data");
        t.ptr_sb_uint = p;
        self.buf = v;
        let (p, v) = sb(self, t.float, 1, "fdata");
        t.ptr_sb_float = p;
        self.fbuf = v;

        let fc = spirv::StorageClass::Function as u32;
        let input = spirv::StorageClass::Input as u32;
        let output = spirv::StorageClass::Output as u32;
        t.ptr_fn_uint = self.id();
        self.global(Op::TypePointer, &[t.ptr_fn_uint, fc, t.uint]);
        t.ptr_fn_float = self.id();
        self.global(Op::TypePointer, &[t.ptr_fn_float, fc, t.float]);
        t.ptr_fn_v4f = self.id();
        self.global(Op::TypePointer, &[t.ptr_fn_v4f, fc, t.v4f]);
        t.ptr_in_uint = self.id();
        self.global(Op::TypePointer, &[t.ptr_in_uint, input, t.uint]);
        t.ptr_in_float = self.id();
        self.global(Op::TypePointer, &[t.ptr_in_float, input, t.float]);
        let ptr_in_v3u = self.id();
        self.global(Op::TypePointer, &[ptr_in_v3u, input, t.v3u]);
        let ptr_in_v4f = self.id();
        self.global(Op::TypePointer, &[ptr_in_v4f, input, t.v4f]);
        let ptr_out_v4f = self.id();
        self.global(Op::TypePointer, &[ptr_out_v4f, output, t.v4f]);

        self.gid = self.id();
        self.global(Op::Variable, &[ptr_in_v3u, self.gid, input]);
        self.decorate(&[
            self.gid,
            spirv::Decoration::BuiltIn as u32,
            spirv::BuiltIn::GlobalInvocationId as u32,
        ]);
        self.name(self.gid, "gl_GlobalInvocationID");
        self.frag_coord = self.id();
        self.global(Op::Variable, &[ptr_in_v4f, self.frag_coord, input]);
        self.decorate(&[
            self.frag_coord,
            spirv::Decoration::BuiltIn as u32,
            spirv::BuiltIn::FragCoord as u32,
        ]);
        self.name(self.frag_coord, "gl_FragCoord");
        self.color = self.id();
        self.global(Op::Variable, &[ptr_out_v4f, self.color, output]);
        self.decorate(&[self.color, spirv::Decoration::Location as u32, 0]);
        self.name(self.color, "out_color");

        for v in 0..32u32 {
            let id = self.id();
            self.global(Op::Constant, &[t.uint, id, v]);
            self.cu.push(id);
        }
        for v in -8i32..8 {
            let id = self.id();
            self.global(Op::Constant, &[t.int, id, v as u32]);
            self.ci.push(id);
        }
        for v in [0.0f32, 1.0, -1.0, 0.5, 2.0, -0.0, 3.25, 100.0] {
            let id = self.id();
            self.global(Op::Constant, &[t.float, id, v.to_bits()]);
            self.cf.push(id);
        }
        self.c_true = self.id();
        self.global(Op::ConstantTrue, &[t.bool_, self.c_true]);
        self.c_false = self.id();
        self.global(Op::ConstantFalse, &[t.bool_, self.c_false]);
        self.t = std::mem::take(t);
    }

    // ---- function bodies ----

    fn emit(&mut self, op: Op, ops: &[u32]) {
        inst(&mut self.funcs, op, ops);
    }

    /// Emits `result = op ty operands...` and returns the result id.
    fn val(&mut self, op: Op, ty: Ty, operands: &[u32]) -> u32 {
        let id = self.id();
        let mut ops = vec![self.ty(ty), id];
        ops.extend_from_slice(operands);
        self.emit(op, &ops);
        id
    }

    fn push(&mut self, ty: Ty, id: u32) {
        self.pool[ty.idx()].push(id);
    }

    fn label(&mut self, id: u32) {
        self.emit(Op::Label, &[id]);
        self.cur_block = id;
    }

    fn mark(&self) -> [usize; NTY] {
        let mut m = [0; NTY];
        for (i, p) in self.pool.iter().enumerate() {
            m[i] = p.len();
        }
        m
    }

    fn restore(&mut self, m: [usize; NTY]) {
        for (i, p) in self.pool.iter_mut().enumerate() {
            p.truncate(m[i]);
        }
    }

    /// A value of `ty` that dominates the current point (prefers recent values).
    fn get(&mut self, ty: Ty) -> u32 {
        if ty == Ty::Bal && self.pool[ty.idx()].is_empty() {
            let key = self.rng.pick(&KEY_TYPES);
            return self.partition(key);
        }
        let n = self.pool[ty.idx()].len();
        let window = n.min(12);
        let i = n - 1 - self.rng.below(window);
        self.pool[ty.idx()][i]
    }

    fn cu(&self, v: usize) -> u32 {
        self.cu[v]
    }

    fn ext(&mut self, ty: Ty, inst_no: u32, args: &[u32]) -> u32 {
        let mut ops = vec![self.glsl, inst_no];
        ops.extend_from_slice(args);
        self.val(Op::ExtInst, ty, &ops)
    }

    /// One filler value of a random type.
    fn filler(&mut self) {
        let ty = self.rng.pick(&[
            Ty::U,
            Ty::U,
            Ty::U,
            Ty::I,
            Ty::F,
            Ty::F,
            Ty::B,
            Ty::V2F,
            Ty::V4F,
            Ty::V3U,
            Ty::V2I,
        ]);
        let id = match ty {
            Ty::U => match self.rng.below(9) {
                0 => self.bin(Op::IAdd, Ty::U),
                1 => self.bin(Op::ISub, Ty::U),
                2 => self.bin(Op::IMul, Ty::U),
                3 => self.bin(Op::BitwiseAnd, Ty::U),
                4 => self.bin(Op::BitwiseXor, Ty::U),
                5 => {
                    let a = self.get(Ty::U);
                    let k = 1 + self.rng.below(7);
                    let s = self.cu(k);
                    self.val(Op::ShiftRightLogical, Ty::U, &[a, s])
                }
                6 => {
                    let a = self.get(Ty::I);
                    self.val(Op::Bitcast, Ty::U, &[a])
                }
                7 => {
                    let (c, a, b) = (self.get(Ty::B), self.get(Ty::U), self.get(Ty::U));
                    self.val(Op::Select, Ty::U, &[c, a, b])
                }
                _ => {
                    let v = self.get(Ty::V3U);
                    let k = self.rng.below(3) as u32;
                    self.val(Op::CompositeExtract, Ty::U, &[v, k])
                }
            },
            Ty::I => match self.rng.below(4) {
                0 => {
                    let a = self.get(Ty::U);
                    self.val(Op::Bitcast, Ty::I, &[a])
                }
                1 => self.bin(Op::ISub, Ty::I),
                2 => {
                    let a = self.get(Ty::I);
                    self.val(Op::SNegate, Ty::I, &[a])
                }
                _ => {
                    let a = self.get(Ty::I);
                    let c = self.ci[self.rng.below(16)];
                    self.val(Op::IMul, Ty::I, &[a, c])
                }
            },
            Ty::F => match self.rng.below(7) {
                0 => self.bin(Op::FAdd, Ty::F),
                1 => self.bin(Op::FMul, Ty::F),
                2 => {
                    let a = self.get(Ty::U);
                    self.val(Op::ConvertUToF, Ty::F, &[a])
                }
                3 => {
                    let a = self.get(Ty::F);
                    self.ext(Ty::F, 4, &[a]) // FAbs
                }
                4 => {
                    let (a, b) = (self.get(Ty::F), self.get(Ty::F));
                    self.ext(Ty::F, 37, &[a, b]) // FMin
                }
                5 => {
                    let (a, b, c) = (self.get(Ty::F), self.get(Ty::F), self.get(Ty::F));
                    self.ext(Ty::F, 50, &[a, b, c]) // Fma
                }
                _ => {
                    let v = self.get(Ty::V4F);
                    let k = self.rng.below(4) as u32;
                    self.val(Op::CompositeExtract, Ty::F, &[v, k])
                }
            },
            Ty::B => match self.rng.below(6) {
                0 => self.bin_to(Op::ULessThan, Ty::U, Ty::B),
                1 => self.bin_to(Op::IEqual, Ty::U, Ty::B),
                2 => self.bin_to(Op::FOrdLessThan, Ty::F, Ty::B),
                3 => self.bin_to(Op::SLessThan, Ty::I, Ty::B),
                4 => {
                    let a = self.get(Ty::B);
                    self.val(Op::LogicalNot, Ty::B, &[a])
                }
                _ => self.bin(Op::LogicalAnd, Ty::B),
            },
            Ty::V2F => match self.rng.below(3) {
                0 => {
                    let (a, b) = (self.get(Ty::F), self.get(Ty::F));
                    self.val(Op::CompositeConstruct, Ty::V2F, &[a, b])
                }
                1 => {
                    let (a, s) = (self.get(Ty::V2F), self.get(Ty::F));
                    self.val(Op::VectorTimesScalar, Ty::V2F, &[a, s])
                }
                _ => self.bin(Op::FAdd, Ty::V2F),
            },
            Ty::V4F => match self.rng.below(3) {
                0 => {
                    let (a, b, c, d) = (
                        self.get(Ty::F),
                        self.get(Ty::F),
                        self.get(Ty::F),
                        self.get(Ty::F),
                    );
                    self.val(Op::CompositeConstruct, Ty::V4F, &[a, b, c, d])
                }
                1 => {
                    let (a, b) = (self.get(Ty::V2F), self.get(Ty::V2F));
                    self.val(Op::CompositeConstruct, Ty::V4F, &[a, b])
                }
                _ => self.bin(Op::FMul, Ty::V4F),
            },
            Ty::V3U => match self.rng.below(2) {
                0 => {
                    let (a, b, c) = (self.get(Ty::U), self.get(Ty::U), self.get(Ty::U));
                    self.val(Op::CompositeConstruct, Ty::V3U, &[a, b, c])
                }
                _ => self.bin(Op::IAdd, Ty::V3U),
            },
            _ => match self.rng.below(2) {
                0 => {
                    let (a, b) = (self.get(Ty::I), self.get(Ty::I));
                    self.val(Op::CompositeConstruct, Ty::V2I, &[a, b])
                }
                _ => self.bin(Op::IAdd, Ty::V2I),
            },
        };
        self.push(ty, id);
    }

    fn bin(&mut self, op: Op, ty: Ty) -> u32 {
        self.bin_to(op, ty, ty)
    }

    fn bin_to(&mut self, op: Op, arg: Ty, res: Ty) -> u32 {
        let (a, b) = (self.get(arg), self.get(arg));
        self.val(op, res, &[a, b])
    }

    fn vote(&mut self) {
        let op = self.rng.pick(&[
            Op::SubgroupAllKHR,
            Op::SubgroupAnyKHR,
            Op::SubgroupAllEqualKHR,
        ]);
        let p = self.get(Ty::B);
        let r = self.val(op, Ty::B, &[p]);
        self.push(Ty::B, r);
    }

    fn partition(&mut self, key: Ty) -> u32 {
        let k = self.get(key);
        let r = self.val(Op::GroupNonUniformPartitionNV, Ty::Bal, &[k]);
        self.push(Ty::Bal, r);
        r
    }

    fn partitioned_arith(&mut self) {
        let (ty, op) = match self.rng.below(8) {
            0 | 1 => (
                Ty::U,
                self.rng.pick(&[
                    Op::GroupNonUniformIAdd,
                    Op::GroupNonUniformIMul,
                    Op::GroupNonUniformUMin,
                    Op::GroupNonUniformUMax,
                    Op::GroupNonUniformBitwiseAnd,
                    Op::GroupNonUniformBitwiseOr,
                    Op::GroupNonUniformBitwiseXor,
                ]),
            ),
            2 => (
                Ty::I,
                self.rng.pick(&[
                    Op::GroupNonUniformIAdd,
                    Op::GroupNonUniformSMin,
                    Op::GroupNonUniformSMax,
                    Op::GroupNonUniformBitwiseXor,
                ]),
            ),
            3 | 4 => (
                self.rng.pick(&[Ty::F, Ty::F, Ty::V2F, Ty::V4F]),
                self.rng.pick(&[
                    Op::GroupNonUniformFAdd,
                    Op::GroupNonUniformFMul,
                    Op::GroupNonUniformFMin,
                    Op::GroupNonUniformFMax,
                ]),
            ),
            5 => (
                Ty::V3U,
                self.rng.pick(&[
                    Op::GroupNonUniformIAdd,
                    Op::GroupNonUniformBitwiseOr,
                    Op::GroupNonUniformUMin,
                ]),
            ),
            6 => (
                Ty::V2I,
                self.rng
                    .pick(&[Op::GroupNonUniformIAdd, Op::GroupNonUniformSMax]),
            ),
            _ => (
                Ty::B,
                self.rng.pick(&[
                    Op::GroupNonUniformLogicalAnd,
                    Op::GroupNonUniformLogicalOr,
                    Op::GroupNonUniformLogicalXor,
                ]),
            ),
        };
        let group_op = 6 + self.rng.below(3) as u32; // PartitionedReduce/InclusiveScan/ExclusiveScan NV
        let v = self.get(ty);
        let ballot = self.get(Ty::Bal);
        let scope = self.cu(spirv::Scope::Subgroup as usize);
        let r = self.val(op, ty, &[scope, group_op, v, ballot]);
        self.push(ty, r);
    }

    fn locals(&mut self) {
        match self.rng.below(3) {
            0 => {
                let v = self.get(Ty::U);
                self.emit(Op::Store, &[self.local_u, v]);
                let r = self.val(Op::Load, Ty::U, &[self.local_u]);
                self.push(Ty::U, r);
            }
            1 => {
                let v = self.get(Ty::F);
                self.emit(Op::Store, &[self.local_f, v]);
                let r = self.val(Op::Load, Ty::F, &[self.local_f]);
                self.push(Ty::F, r);
            }
            _ => {
                let v = self.get(Ty::V4F);
                self.emit(Op::Store, &[self.local_v4, v]);
                let r = self.val(Op::Load, Ty::V4F, &[self.local_v4]);
                self.push(Ty::V4F, r);
            }
        }
    }

    fn buffer_access(&mut self) {
        let k = self.rng.below(32);
        let off = self.cu(k);
        let at = self.val(Op::IAdd, Ty::U, &[self.idx, off]);
        let (ptr_ty, var, ty) = if self.rng.chance(50) {
            (self.t.ptr_sb_uint, self.buf, Ty::U)
        } else {
            (self.t.ptr_sb_float, self.fbuf, Ty::F)
        };
        let p = self.id();
        let c0 = self.cu(0);
        self.emit(Op::AccessChain, &[ptr_ty, p, var, c0, at]);
        if self.rng.chance(50) {
            let v = self.get(ty);
            self.emit(Op::Store, &[p, v]);
        } else {
            let r = self.val(Op::Load, ty, &[p]);
            self.push(ty, r);
        }
    }

    /// One statement: filler, a subgroup op or (below the depth limit) a nested construct.
    fn stmt(&mut self, depth: u32) {
        let r = self.rng.below(100);
        match r {
            0..=57 => self.filler(),
            58..=65 => self.locals(),
            66..=71 => self.buffer_access(),
            72..=76 => self.vote(),
            77..=81 => {
                let key = self.rng.pick(&KEY_TYPES);
                self.partition(key);
            }
            82..=91 => self.partitioned_arith(),
            92..=96 if depth < 3 => self.if_else(depth + 1),
            97..=99 if depth < 2 => self.loop_(depth + 1),
            _ => self.filler(),
        }
    }

    fn stmts(&mut self, depth: u32, n: usize) {
        for _ in 0..n {
            self.stmt(depth);
        }
    }

    /// A structured if (with or without else) on a divergent condition, `OpPhi`s at the merge.
    fn if_else(&mut self, depth: u32) {
        let c = self.get(Ty::B);
        let (t, e, m) = (self.id(), self.id(), self.id());
        let has_else = self.rng.chance(70);
        self.emit(Op::SelectionMerge, &[m, 0]);
        self.emit(Op::BranchConditional, &[c, t, if has_else { e } else { m }]);
        let header = self.cur_block;
        let mark = self.mark();

        self.label(t);
        let n = 2 + self.rng.below(6);
        self.vote();
        self.stmts(depth, n);
        self.partitioned_arith();
        let (u1, f1) = (self.get(Ty::U), self.get(Ty::F));
        let end_t = self.cur_block;
        self.emit(Op::Branch, &[m]);
        self.restore(mark);

        let (u2, f2, end_e) = if has_else {
            self.label(e);
            let n = 1 + self.rng.below(5);
            self.stmts(depth, n);
            self.partitioned_arith();
            let r = (self.get(Ty::U), self.get(Ty::F), self.cur_block);
            self.emit(Op::Branch, &[m]);
            self.restore(mark);
            r
        } else {
            (self.get(Ty::U), self.get(Ty::F), header)
        };

        self.label(m);
        let pu = self.val(Op::Phi, Ty::U, &[u1, end_t, u2, end_e]);
        let pf = self.val(Op::Phi, Ty::F, &[f1, end_t, f2, end_e]);
        self.push(Ty::U, pu);
        self.push(Ty::F, pf);
    }

    /// A structured loop with a divergent trip count (condition in the header, no breaks).
    fn loop_(&mut self, depth: u32) {
        let init = self.get(Ty::U);
        let x = self.get(Ty::U);
        let mask = self.cu(7);
        let bound = self.val(Op::BitwiseAnd, Ty::U, &[x, mask]);
        let pre = self.cur_block;
        let (h, cb, body, cont, m) = (self.id(), self.id(), self.id(), self.id(), self.id());
        let (i_next, acc_next) = (self.id(), self.id());
        self.emit(Op::Branch, &[h]);

        self.label(h);
        let c0 = self.cu(0);
        let i = self.val(Op::Phi, Ty::U, &[c0, pre, i_next, cont]);
        let acc = self.val(Op::Phi, Ty::U, &[init, pre, acc_next, cont]);
        self.emit(Op::LoopMerge, &[m, cont, 0]);
        self.emit(Op::Branch, &[cb]);

        self.label(cb);
        let cc = self.val(Op::ULessThan, Ty::B, &[i, bound]);
        self.emit(Op::BranchConditional, &[cc, body, m]);

        let mark = self.mark();
        self.label(body);
        self.push(Ty::U, i);
        self.push(Ty::U, acc);
        let n = 2 + self.rng.below(6);
        self.stmts(depth, n);
        self.partitioned_arith();
        let (u, t_u) = (self.get(Ty::U), self.t.uint);
        self.emit(Op::IAdd, &[t_u, acc_next, acc, u]);
        self.emit(Op::Branch, &[cont]);
        self.restore(mark);

        self.label(cont);
        let c1 = self.cu(1);
        self.emit(Op::IAdd, &[t_u, i_next, i, c1]);
        self.emit(Op::Branch, &[h]);

        self.label(m);
        self.push(Ty::U, acc);
        self.push(Ty::U, i);
    }

    /// One generated function `uint f_N(uint idx)`.
    fn function(&mut self, n: usize) -> u32 {
        for p in &mut self.pool {
            p.clear();
        }
        let f = self.id();
        self.name(f, &format!("f_{n}"));
        let (t_uint, fn_ty) = (self.t.uint, self.t.fn_uint_uint);
        self.emit(Op::Function, &[t_uint, f, 0, fn_ty]);
        self.idx = self.id();
        self.emit(Op::FunctionParameter, &[t_uint, self.idx]);
        self.name(self.idx, "idx");
        let entry = self.id();
        self.label(entry);
        let fc = spirv::StorageClass::Function as u32;
        self.local_u = self.id();
        self.local_f = self.id();
        self.local_v4 = self.id();
        let (pu, pf, pv) = (self.t.ptr_fn_uint, self.t.ptr_fn_float, self.t.ptr_fn_v4f);
        self.emit(Op::Variable, &[pu, self.local_u, fc]);
        self.emit(Op::Variable, &[pf, self.local_f, fc]);
        self.emit(Op::Variable, &[pv, self.local_v4, fc]);

        // Prologue: per-invocation (divergent) data and one value of every type.
        let c0 = self.cu(0);
        let p = self.id();
        let (psu, psf) = (self.t.ptr_sb_uint, self.t.ptr_sb_float);
        self.emit(Op::AccessChain, &[psu, p, self.buf, c0, self.idx]);
        let v = self.val(Op::Load, Ty::U, &[p]);
        self.push(Ty::U, v);
        self.push(Ty::U, self.idx);
        let p = self.id();
        self.emit(Op::AccessChain, &[psf, p, self.fbuf, c0, self.idx]);
        let fv = self.val(Op::Load, Ty::F, &[p]);
        self.push(Ty::F, fv);
        let iv = self.val(Op::Bitcast, Ty::I, &[v]);
        self.push(Ty::I, iv);
        let c7 = self.cu(7);
        let low = self.val(Op::BitwiseAnd, Ty::U, &[v, c7]);
        self.push(Ty::U, low);
        let c3 = self.cu(3);
        let b = self.val(Op::ULessThan, Ty::B, &[low, c3]);
        self.push(Ty::B, b);
        let f2 = self.val(Op::ConvertUToF, Ty::F, &[low]);
        self.push(Ty::F, f2);
        let v2f = self.val(Op::CompositeConstruct, Ty::V2F, &[fv, f2]);
        self.push(Ty::V2F, v2f);
        let v4f = self.val(Op::CompositeConstruct, Ty::V4F, &[fv, f2, fv, f2]);
        self.push(Ty::V4F, v4f);
        let v3u = self.val(Op::CompositeConstruct, Ty::V3U, &[v, low, self.idx]);
        self.push(Ty::V3U, v3u);
        let v2i = self.val(Op::CompositeConstruct, Ty::V2I, &[iv, iv]);
        self.push(Ty::V2I, v2i);
        let c1 = self.cu(1);
        self.emit(Op::Store, &[self.local_u, c1]);

        // Every function: a partition on an int, a float and a vector key, a vote,
        // then divergent if/else and loop, then random statements.
        for key in [Ty::U, Ty::F, Ty::V4F] {
            self.partition(key);
        }
        self.vote();
        self.stmts(0, 3);
        self.if_else(1);
        self.stmts(0, 2);
        self.loop_(1);
        let n = self.body / 2 + self.rng.below(self.body.max(1));
        self.stmts(0, n);

        // Result: fold a few values, store once, return.
        let (a, b) = (self.get(Ty::U), self.get(Ty::U));
        let r = self.val(Op::BitwiseXor, Ty::U, &[a, b]);
        let p = self.id();
        self.emit(Op::AccessChain, &[psu, p, self.buf, c0, self.idx]);
        self.emit(Op::Store, &[p, r]);
        self.emit(Op::ReturnValue, &[r]);
        self.emit(Op::FunctionEnd, &[]);
        f
    }

    /// `uint group_N(uint idx)`: calls each of `fns` and sums the results.
    fn group(&mut self, n: usize, fns: &[u32]) -> u32 {
        let f = self.id();
        self.name(f, &format!("group_{n}"));
        let (t_uint, fn_ty) = (self.t.uint, self.t.fn_uint_uint);
        self.emit(Op::Function, &[t_uint, f, 0, fn_ty]);
        let idx = self.id();
        self.emit(Op::FunctionParameter, &[t_uint, idx]);
        let l = self.id();
        self.label(l);
        let mut acc = self.cu(0);
        for &callee in fns {
            let r = self.id();
            self.emit(Op::FunctionCall, &[t_uint, r, callee, idx]);
            let s = self.id();
            self.emit(Op::IAdd, &[t_uint, s, acc, r]);
            acc = s;
        }
        self.emit(Op::ReturnValue, &[acc]);
        self.emit(Op::FunctionEnd, &[]);
        f
    }

    /// Calls every group with `x`; returns the sum.
    fn call_groups(&mut self, groups: &[u32], x: u32) -> u32 {
        let t_uint = self.t.uint;
        let mut acc = self.cu(0);
        for &g in groups {
            let r = self.id();
            self.emit(Op::FunctionCall, &[t_uint, r, g, x]);
            let s = self.id();
            self.emit(Op::IAdd, &[t_uint, s, acc, r]);
            acc = s;
        }
        acc
    }

    fn entry_points(&mut self, groups: &[u32]) -> (u32, u32) {
        let (t_void, fn_void, t_uint) = (self.t.void, self.t.fn_void, self.t.uint);
        let c0 = self.cu(0);

        let main = self.id();
        self.name(main, "main");
        self.emit(Op::Function, &[t_void, main, 0, fn_void]);
        let l = self.id();
        self.label(l);
        let p = self.id();
        self.emit(Op::AccessChain, &[self.t.ptr_in_uint, p, self.gid, c0]);
        let x = self.id();
        self.emit(Op::Load, &[t_uint, x, p]);
        let sum = self.call_groups(groups, x);
        let p = self.id();
        self.emit(Op::AccessChain, &[self.t.ptr_sb_uint, p, self.buf, c0, x]);
        self.emit(Op::Store, &[p, sum]);
        self.emit(Op::Return, &[]);
        self.emit(Op::FunctionEnd, &[]);

        let frag = self.id();
        self.name(frag, "frag_main");
        self.emit(Op::Function, &[t_void, frag, 0, fn_void]);
        let l = self.id();
        self.label(l);
        let p = self.id();
        self.emit(
            Op::AccessChain,
            &[self.t.ptr_in_float, p, self.frag_coord, c0],
        );
        let fx = self.id();
        self.emit(Op::Load, &[self.t.float, fx, p]);
        let x = self.id();
        self.emit(Op::ConvertFToU, &[t_uint, x, fx]);
        let sum = self.call_groups(groups, x);
        let f = self.id();
        self.emit(Op::ConvertUToF, &[self.t.float, f, sum]);
        let v = self.id();
        self.emit(Op::CompositeConstruct, &[self.t.v4f, v, f, f, f, f]);
        self.emit(Op::Store, &[self.color, v]);
        self.emit(Op::Return, &[]);
        self.emit(Op::FunctionEnd, &[]);
        (main, frag)
    }

    fn finish(mut self, main: u32, frag: u32) -> Vec<u32> {
        let mut out = vec![0x0723_0203, 0x0001_0300, 0, 0, 0];
        for cap in [
            spirv::Capability::Shader,
            spirv::Capability::SubgroupVoteKHR,
            spirv::Capability::GroupNonUniformPartitionedNV,
        ] {
            inst(&mut out, Op::Capability, &[cap as u32]);
        }
        inst_str(&mut out, Op::Extension, &[], "SPV_KHR_subgroup_vote");
        inst_str(
            &mut out,
            Op::Extension,
            &[],
            "SPV_NV_shader_subgroup_partitioned",
        );
        inst_str(&mut out, Op::ExtInstImport, &[self.glsl], "GLSL.std.450");
        inst(&mut out, Op::MemoryModel, &[0, 1]); // Logical GLSL450
        let mut ep = vec![spirv::ExecutionModel::GLCompute as u32, main];
        ep.extend(string_words("main"));
        ep.push(self.gid);
        inst(&mut out, Op::EntryPoint, &ep);
        let mut ep = vec![spirv::ExecutionModel::Fragment as u32, frag];
        ep.extend(string_words("frag_main"));
        ep.extend([self.frag_coord, self.color]);
        inst(&mut out, Op::EntryPoint, &ep);
        inst(
            &mut out,
            Op::ExecutionMode,
            &[main, spirv::ExecutionMode::LocalSize as u32, 64, 1, 1],
        );
        inst(
            &mut out,
            Op::ExecutionMode,
            &[frag, spirv::ExecutionMode::OriginUpperLeft as u32],
        );
        inst(
            &mut out,
            Op::Source,
            &[spirv::SourceLanguage::GLSL as u32, 450],
        );
        out.append(&mut self.names);
        out.append(&mut self.annotations);
        out.append(&mut self.globals);
        out.append(&mut self.funcs);
        out[3] = self.next_id;
        out
    }
}

/// Default mean number of random top-level statements per function (besides the fixed if/else and loop).
pub const DEFAULT_BODY: usize = 16;

/// Generates a module of about `target_bytes` bytes (at least one function), deterministic in `seed`;
/// `body` is the mean number of random top-level statements per function (function size).
pub fn generate(target_bytes: usize, seed: u64, body: usize) -> Vec<u32> {
    generate_reaching(target_bytes, seed, body, usize::MAX)
}

/// [`generate`], with the entry points calling only the first `groups_called` groups of 64
/// functions: the rest is in the module (every tool that reads or lowers it sees all of it) but
/// unreachable from the entry points, so a driver that drops what the entry point does not call
/// compiles only that much (`bench layer`: lavapipe takes minutes and gigabytes to inline the
/// whole 10 MB module into one compute pipeline).
pub fn generate_reaching(
    target_bytes: usize,
    seed: u64,
    body: usize,
    groups_called: usize,
) -> Vec<u32> {
    let mut g = Gen::new(seed);
    g.body = body;
    let target_words = target_bytes / 4;
    let mut fns = Vec::new();
    // Fixed overhead of the header sections and the entry points is small; stop at the target size.
    while fns.is_empty()
        || g.funcs.len() + g.globals.len() + g.names.len() + 4 * fns.len() / 64 < target_words
    {
        let f = g.function(fns.len());
        fns.push(f);
    }
    let groups: Vec<u32> = fns
        .chunks(64)
        .enumerate()
        .map(|(i, chunk)| g.group(i, chunk))
        .collect();
    let (main, frag) = g.entry_points(&groups[..groups.len().min(groups_called)]);
    g.finish(main, frag)
}

/// Little-endian bytes of a word stream.
pub fn to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_sized() {
        let a = generate(64 * 1024, 7, DEFAULT_BODY);
        let b = generate(64 * 1024, 7, DEFAULT_BODY);
        assert_eq!(a, b);
        assert_ne!(a, generate(64 * 1024, 8, DEFAULT_BODY));
        let bytes = a.len() * 4;
        assert!((64 * 1024..80 * 1024).contains(&bytes), "{bytes} bytes");
        assert_eq!(a[0], 0x0723_0203);
        assert!(a[3] > 1000, "id bound {}", a[3]);
    }

    /// Every generated module must pass `spirv-val --target-env vulkan1.1` (several seeds and shapes).
    #[test]
    fn spirv_val_accepts_generated_modules() {
        let dir = std::env::temp_dir().join(format!("bench-gen-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        for (seed, body) in [(1, DEFAULT_BODY), (2, 2), (3, 200), (4, DEFAULT_BODY)] {
            let words = generate(48 * 1024, seed, body);
            let path = dir.join(format!("m{seed}.spv"));
            std::fs::write(&path, to_bytes(&words)).expect("write");
            let out = std::process::Command::new("spirv-val")
                .args(["--target-env", "vulkan1.1"])
                .arg(&path)
                .output()
                .expect("spirv-val not found: install spirv-tools (cargo xtask install-deps)");
            assert!(
                out.status.success(),
                "seed {seed}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
