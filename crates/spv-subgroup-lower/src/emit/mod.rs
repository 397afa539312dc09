//! The emitter: fresh ids, interned types and constants, built-in variables, and a block builder
//! ([`Code`]) with the ballot and shuffle helpers every rewrite is made of.
//!
//! Every helper picks its instruction from the [`Target`]: where the target lacks an op
//! (the naga target has no ballot bit ops and no mask built-ins; a 1.0 device has only
//! `SPV_KHR_shader_ballot`), the helper emits an equivalent sequence instead.
//! Ballots ("masks") are a `uint` when at most 32 lanes can exist and a `uvec4` otherwise,
//! so code for subgroups of at most 32 lanes stays scalar.

use std::collections::BTreeSet;
use std::hash::{BuildHasherDefault, Hasher};

use rspirv::dr::{Block, Instruction, Operand};
use spirv::{BuiltIn, Capability, Decoration, Op, StorageClass};

use crate::{FloatPartition, LowerError, PartitionForm, Target};

mod lanes;
mod masks;

/// A result id.
pub(crate) type Id = u32;

/// The multiply-rotate hash of rustc (`FxHasher`): the maps here have small integer keys, for
/// which SipHash was 17% of a lowering run.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

/// A `HashMap` with [`FxHasher`]. Only ever used for lookups: nothing iterates one into output.
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// A scalar type as the rewrites see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Scalar {
    /// `OpTypeBool`.
    Bool,
    /// `OpTypeInt width signedness`.
    Int { width: u8, signed: bool },
    /// `OpTypeFloat width`.
    Float { width: u8 },
}

impl Scalar {
    /// Width in bits (bool counts as 32: it is widened to a uint to cross lanes).
    pub(crate) fn width(self) -> u32 {
        match self {
            Scalar::Bool => 32,
            Scalar::Int { width, .. } | Scalar::Float { width } => u32::from(width),
        }
    }
}

/// A scalar or vector type: `n == 1` is the scalar itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Ty {
    /// Component type.
    pub scalar: Scalar,
    /// Component count, 1 to 4.
    pub n: u8,
}

impl Ty {
    pub(crate) const BOOL: Ty = Ty {
        scalar: Scalar::Bool,
        n: 1,
    };
    pub(crate) const U32: Ty = Ty {
        scalar: Scalar::Int {
            width: 32,
            signed: false,
        },
        n: 1,
    };
    pub(crate) const U16: Ty = Ty {
        scalar: Scalar::Int {
            width: 16,
            signed: false,
        },
        n: 1,
    };
    pub(crate) const UVEC4: Ty = Ty {
        scalar: Scalar::Int {
            width: 32,
            signed: false,
        },
        n: 4,
    };

    /// The same component type with `n` components.
    pub(crate) fn with_n(self, n: u8) -> Ty {
        Ty {
            scalar: self.scalar,
            n,
        }
    }
    /// The component type.
    pub(crate) fn component(self) -> Ty {
        self.with_n(1)
    }
}

/// How reads of the subgroup built-ins are marked volatile in a module with ray-tracing stages:
/// "If the VulkanMemoryModel capability is not declared, the Volatile decoration must be used on
/// any variable declaration that includes one of the [...] SubgroupSize,
/// SubgroupLocalInvocationId, SubgroupEqMask, [...] SubgroupLtMask BuiltIn decorations when used
/// in the ray generation, closest hit, miss, intersection, or callable shaders"
/// (VUID-StandaloneSpirv-VulkanMemoryModel-04678); with the capability, the loads carry the
/// `Volatile` memory operand instead (04679). glslang does the same for its own built-ins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RayVolatile {
    /// No stage of the module needs it.
    No,
    /// New built-in variables are decorated `Volatile`.
    Decoration,
    /// Every load of such a built-in has the `Volatile` memory operand.
    LoadOperand,
}

impl RayVolatile {
    /// What `module` needs, from its entry points and capabilities.
    fn of(module: &rspirv::dr::Module) -> RayVolatile {
        use spirv::ExecutionModel as M;
        let ray = module.entry_points.iter().any(|e| {
            matches!(
                e.operands.first(),
                Some(Operand::ExecutionModel(
                    M::RayGenerationKHR
                        | M::ClosestHitKHR
                        | M::MissKHR
                        | M::IntersectionKHR
                        | M::CallableKHR
                ))
            )
        });
        let vulkan_memory_model = module.capabilities.iter().any(|c| {
            matches!(
                c.operands.first(),
                Some(Operand::Capability(Capability::VulkanMemoryModel))
            )
        });
        match (ray, vulkan_memory_model) {
            (false, _) => RayVolatile::No,
            (true, false) => RayVolatile::Decoration,
            (true, true) => RayVolatile::LoadOperand,
        }
    }

    /// Whether built-in `b` is one the rule names (of those the lowering loads).
    fn applies_to(self, b: BuiltIn) -> bool {
        self != RayVolatile::No
            && matches!(
                b,
                BuiltIn::SubgroupSize
                    | BuiltIn::SubgroupLocalInvocationId
                    | BuiltIn::SubgroupEqMask
                    | BuiltIn::SubgroupGeMask
                    | BuiltIn::SubgroupGtMask
                    | BuiltIn::SubgroupLeMask
                    | BuiltIn::SubgroupLtMask
            )
    }
}

/// Module-wide state of one lowering run: ids, types, constants, built-ins, requirements.
pub(crate) struct Emitter<'t> {
    pub target: &'t Target,
    /// Largest number of lanes a subgroup may have (the `--subgroup-size` or the target's maximum).
    pub max_lanes: u32,
    next_id: Id,
    /// Type id of every scalar/vector type, existing or new.
    type_ids: HashMap<Ty, Id>,
    /// The reverse of `type_ids`.
    id_types: HashMap<Id, Ty>,
    /// Pointer types: (storage class, pointee) -> id.
    pointer_ids: HashMap<(StorageClass, Id), Id>,
    /// Constants: (type id, bits) -> id; bools use bits 0/1.
    consts: HashMap<(Id, u64), Id>,
    /// 32-bit constants whose value is a scope (0 to 4), by id, duplicates included: the
    /// `Groups` rewrite reads an execution scope (a handful of ids in any module).
    scope_consts: HashMap<Id, u32>,
    /// Composite constants: (type id, components) -> id.
    composites: HashMap<(Id, Vec<Id>), Id>,
    /// `OpUndef` per type id.
    #[allow(dead_code, reason = "part of the helper API the rewrites build on")]
    undefs: HashMap<Id, Id>,
    /// Input variables of built-ins, existing or new.
    builtins: HashMap<BuiltIn, Id>,
    /// New built-in variables, to be added to the entry points' interfaces.
    pub new_builtins: Vec<Id>,
    /// `GLSL.std.450` import, existing or new.
    glsl: Option<Id>,
    /// The input's `SPV_AMD_shader_ballot` import, if any (its instructions are rewritten where
    /// the target lacks `VK_AMD_shader_ballot`: `rewrite/amd_ballot.rs`).
    pub amd_ballot: Option<Id>,
    /// New global instructions (types, constants, variables), in creation order.
    pub new_globals: Vec<Instruction>,
    /// New annotations (built-in decorations).
    pub new_annotations: Vec<Instruction>,
    /// A new `OpExtInstImport`, if one was needed.
    pub new_ext_import: Option<Instruction>,
    /// Capabilities the emitted code needs.
    pub caps: BTreeSet<u32>,
    /// Extensions the emitted code needs.
    pub exts: BTreeSet<&'static str>,
    /// Types of all values (result id -> type id), of the input and of new code.
    value_types: Vec<Id>,
    /// Grammar entries by opcode, filled on first use (rspirv's `Instruction::new` searches its
    /// table linearly: 15% of a run).
    classes: Vec<Option<&'static rspirv::grammar::Instruction<'static>>>,
    /// Every built-in variable the emitted code loads (existing or new), for the interfaces.
    pub used_builtins: BTreeSet<Id>,
    /// How partition keys of float type compare (set by the driver from the options).
    pub float_partition: FloatPartition,
    /// Which partition form to emit (set by the driver from the options).
    pub partition_form: PartitionForm,
    /// Whether the module has a fragment entry point (integer inputs there must be `Flat`).
    fragment: bool,
    /// How reads of subgroup built-ins are volatile (ray-tracing stages).
    ray_volatile: RayVolatile,
    /// Whether 64-bit integer types may be used (the module declares `Int64`, or the target's
    /// consumer cannot bitcast a 64-bit value to a 2-vector: `no_resizing_bitcast`, naga's IR).
    int64_words: bool,
    /// Whether a 16-bit float moves through a 16-bit integer (needs `Int16`) rather than a half
    /// 2-vector (needs nothing more): the target's consumer cannot bitcast a 2-vector to a scalar
    /// (naga's IR keeps a bitcast's vector size; the target's `no_resizing_bitcast`).
    int16_words: bool,
    /// Whether code is being emitted inside a [`Code::by_subgroup_size`] choice (no nesting).
    in_size_choice: bool,
    /// Whether the function being lowered may load the `SubgroupSize` built-in (set by the
    /// driver: false in functions that stages of a naga-like consumer reach where naga refuses it).
    pub size_builtin_ok: bool,
    /// Whether the lane id (`SubgroupLocalInvocationId`) may be loaded: false for a naga-like
    /// consumer (`restrictions.naga_module`) when an entry point's `LocalSize` has more than one
    /// dimension, where naga's validator refuses the built-in (decided for the whole module).
    lane_id_ok: bool,
}

/// Whether an entry point's `LocalSize` has more than one dimension (naga reads the workgroup
/// size from `LocalSize` alone).
fn multi_dimensional_workgroup(module: &rspirv::dr::Module) -> bool {
    module.execution_modes.iter().any(|m| {
        matches!(
            m.operands.as_slice(),
            [_, Operand::ExecutionMode(spirv::ExecutionMode::LocalSize), _, Operand::LiteralBit32(y), Operand::LiteralBit32(z)]
                if *y > 1 || *z > 1
        )
    })
}

/// How many instructions the module has (each defines at most one id).
fn instruction_count(module: &rspirv::dr::Module) -> usize {
    module.types_global_values.len()
        + module
            .functions
            .iter()
            .map(|f| {
                2 + f.parameters.len()
                    + f.blocks
                        .iter()
                        .map(|b| 1 + b.instructions.len())
                        .sum::<usize>()
            })
            .sum::<usize>()
}

impl<'t> Emitter<'t> {
    /// Indexes the module's types, constants, built-ins and value types. `value_types` is the
    /// table to start from when the functions come later (`stream`: it sets their values' types
    /// as they come); by default it is sized by the module's instructions.
    pub(crate) fn new(
        module: &rspirv::dr::Module,
        target: &'t Target,
        max_lanes: u32,
        value_types: Option<Vec<Id>>,
    ) -> Self {
        let bound = module.header.as_ref().map_or(1, |h| h.bound.max(1));
        let mut em = Emitter {
            target,
            max_lanes,
            next_id: bound,
            type_ids: HashMap::default(),
            id_types: HashMap::default(),
            pointer_ids: HashMap::default(),
            consts: HashMap::default(),
            scope_consts: HashMap::default(),
            composites: HashMap::default(),
            undefs: HashMap::default(),
            builtins: HashMap::default(),
            new_builtins: Vec::new(),
            glsl: None,
            amd_ballot: None,
            new_globals: Vec::new(),
            new_annotations: Vec::new(),
            new_ext_import: None,
            caps: BTreeSet::new(),
            exts: BTreeSet::new(),
            // Sized by the module's instructions, not its header's bound (which may lie):
            // `set_value_type` grows it for the ids actually used, all below the bound the
            // driver has capped at `MAX_ID_BOUND`.
            value_types: value_types
                .unwrap_or_else(|| vec![0; (bound as usize).min(instruction_count(module) + 1)]),
            classes: Vec::new(),
            used_builtins: BTreeSet::new(),
            float_partition: FloatPartition::default(),
            partition_form: PartitionForm::default(),
            in_size_choice: false,
            size_builtin_ok: true,
            lane_id_ok: !(target.restrictions.naga_module && multi_dimensional_workgroup(module)),
            int64_words: target.restrictions.no_resizing_bitcast
                || module.capabilities.iter().any(|c| {
                    matches!(
                        c.operands.first(),
                        Some(Operand::Capability(Capability::Int64))
                    )
                }),
            int16_words: target.restrictions.no_resizing_bitcast,
            ray_volatile: RayVolatile::of(module),
            fragment: module.entry_points.iter().any(|e| {
                matches!(
                    e.operands.first(),
                    Some(Operand::ExecutionModel(spirv::ExecutionModel::Fragment))
                )
            }),
        };
        for inst in &module.ext_inst_imports {
            if matches!(inst.operands.first(), Some(Operand::LiteralString(s)) if s == "GLSL.std.450")
            {
                em.glsl = inst.result_id;
            }
            if matches!(inst.operands.first(), Some(Operand::LiteralString(s)) if s == spv_subgroup_validate::fit::AMD_SHADER_BALLOT)
            {
                em.amd_ballot = inst.result_id;
            }
        }
        for inst in &module.types_global_values {
            em.index_global(inst);
        }
        let builtin_of = crate::builtin_uses::decorated(module);
        for inst in &module.types_global_values {
            if inst.class.opcode == Op::Variable {
                if let (Some(id), Some(b)) = (
                    inst.result_id,
                    inst.result_id.and_then(|i| builtin_of.get(&i)),
                ) {
                    if matches!(
                        inst.operands.first(),
                        Some(Operand::StorageClass(StorageClass::Input))
                    ) {
                        em.builtins.insert(*b, id);
                    }
                }
            }
        }
        for f in &module.functions {
            for inst in f
                .parameters
                .iter()
                .chain(f.blocks.iter().flat_map(|b| b.instructions.iter()))
            {
                if let (Some(t), Some(r)) = (inst.result_type, inst.result_id) {
                    em.set_value_type(r, t);
                }
            }
        }
        em
    }

    fn index_global(&mut self, inst: &Instruction) {
        let Some(id) = inst.result_id else { return };
        let lit = |i: usize| match inst.operands.get(i) {
            Some(Operand::LiteralBit32(v)) => Some(*v),
            _ => None,
        };
        let ty = match inst.class.opcode {
            Op::TypeBool => Some(Ty::BOOL),
            Op::TypeInt => match (lit(0), lit(1)) {
                (Some(w), Some(s)) if matches!(w, 8 | 16 | 32 | 64) => Some(Ty {
                    scalar: Scalar::Int {
                        width: w as u8,
                        signed: s != 0,
                    },
                    n: 1,
                }),
                _ => None,
            },
            // A float with an encoding operand (bfloat16, fp8) is not an IEEE type we can handle.
            Op::TypeFloat if inst.operands.len() == 1 => match lit(0) {
                Some(w) if matches!(w, 16 | 32 | 64) => Some(Ty {
                    scalar: Scalar::Float { width: w as u8 },
                    n: 1,
                }),
                _ => None,
            },
            Op::TypeVector => match (inst.operands.first(), lit(1)) {
                (Some(Operand::IdRef(e)), Some(n)) if (2..=4).contains(&n) => {
                    self.id_types.get(e).map(|t| Ty {
                        scalar: t.scalar,
                        n: n as u8,
                    })
                }
                _ => None,
            },
            Op::TypePointer => {
                if let [Operand::StorageClass(sc), Operand::IdRef(p)] = inst.operands.as_slice() {
                    self.pointer_ids.entry((*sc, *p)).or_insert(id);
                }
                None
            }
            Op::Constant => {
                if let (Some(t), Some(Operand::LiteralBit32(v))) =
                    (inst.result_type, inst.operands.first())
                {
                    self.consts.entry((t, u64::from(*v))).or_insert(id);
                    if *v <= spirv::Scope::Invocation as u32 {
                        self.scope_consts.insert(id, *v);
                    }
                } else if let (Some(t), Some(Operand::LiteralBit64(v))) =
                    (inst.result_type, inst.operands.first())
                {
                    self.consts.entry((t, *v)).or_insert(id);
                }
                None
            }
            Op::ConstantTrue | Op::ConstantFalse => {
                if let Some(t) = inst.result_type {
                    let bit = u64::from(inst.class.opcode == Op::ConstantTrue);
                    self.consts.entry((t, bit)).or_insert(id);
                }
                None
            }
            _ => None,
        };
        if let Some(ty) = ty {
            // Duplicate non-aggregate types are invalid SPIR-V; keep the first if a module has them.
            self.type_ids.entry(ty).or_insert(id);
            self.id_types.entry(id).or_insert(ty);
        }
        if let (Some(t), Some(r)) = (inst.result_type, inst.result_id) {
            self.set_value_type(r, t);
        }
    }

    /// A fresh id.
    pub(crate) fn id(&mut self) -> Id {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// The id bound after everything allocated so far.
    pub(crate) fn bound(&self) -> Id {
        self.next_id
    }

    /// Records the type id of a value.
    pub(crate) fn set_value_type(&mut self, value: Id, ty: Id) {
        let i = value as usize;
        if i >= self.value_types.len() {
            self.value_types.resize(i + 1 + i / 4, 0);
        }
        self.value_types[i] = ty;
    }

    /// Records the type of every value `f`'s parameters and instructions define (a function the
    /// streaming loader handed over, whose values the emitter has not indexed).
    pub(crate) fn index_function_values(&mut self, f: &rspirv::dr::Function) {
        let kept = f
            .parameters
            .iter()
            .chain(f.blocks.iter().flat_map(|b| b.instructions.iter()));
        for inst in kept {
            if let (Some(t), Some(r)) = (inst.result_type, inst.result_id) {
                self.set_value_type(r, t);
            }
        }
    }

    /// An instruction, with its grammar entry from the cache.
    pub(crate) fn inst(
        &mut self,
        op: Op,
        ty: Option<Id>,
        id: Option<Id>,
        operands: Vec<Operand>,
    ) -> Instruction {
        let code = op as usize;
        if code >= self.classes.len() {
            self.classes.resize(code + 1, None);
        }
        let class =
            *self.classes[code].get_or_insert_with(|| rspirv::grammar::INSTRUCTION_TABLE.get(op));
        Instruction {
            class,
            result_type: ty,
            result_id: id,
            operands,
        }
    }

    fn push_global(&mut self, op: Op, ty: Option<Id>, operands: Vec<Operand>) -> Id {
        let id = self.id();
        if let Some(t) = ty {
            self.set_value_type(id, t);
        }
        let inst = self.inst(op, ty, Some(id), operands);
        self.new_globals.push(inst);
        id
    }

    /// The id of a scalar or vector type, declaring it if the module lacks it.
    ///
    /// The emitted code computes with every type it asks for (bitcasts, selects, arithmetic), so
    /// an 8-, 16- or 64-bit one needs its capability (`Int16`, ...) whether the module declared
    /// the type or not: a module may declare a 16-bit type for 16-bit storage only, which allows
    /// loads, stores and width-only conversions and nothing else (SG0504).
    pub(crate) fn ty(&mut self, ty: Ty) -> Id {
        if let Some(&id) = self.type_ids.get(&ty) {
            self.need_width_cap(ty.scalar);
            return id;
        }
        let id = if ty.n > 1 {
            let elem = self.ty(ty.component());
            self.push_global(
                Op::TypeVector,
                None,
                vec![Operand::IdRef(elem), Operand::LiteralBit32(u32::from(ty.n))],
            )
        } else {
            match ty.scalar {
                Scalar::Bool => self.push_global(Op::TypeBool, None, vec![]),
                Scalar::Int { width, signed } => {
                    self.need_width_cap(ty.scalar);
                    self.push_global(
                        Op::TypeInt,
                        None,
                        vec![
                            Operand::LiteralBit32(u32::from(width)),
                            Operand::LiteralBit32(u32::from(signed)),
                        ],
                    )
                }
                Scalar::Float { width } => {
                    self.need_width_cap(ty.scalar);
                    self.push_global(
                        Op::TypeFloat,
                        None,
                        vec![Operand::LiteralBit32(u32::from(width))],
                    )
                }
            }
        };
        self.type_ids.insert(ty, id);
        self.id_types.insert(id, ty);
        id
    }

    fn need_width_cap(&mut self, s: Scalar) {
        let cap = match s {
            Scalar::Int { width: 8, .. } => Capability::Int8,
            Scalar::Int { width: 16, .. } => Capability::Int16,
            Scalar::Int { width: 64, .. } => Capability::Int64,
            Scalar::Float { width: 16 } => Capability::Float16,
            Scalar::Float { width: 64 } => Capability::Float64,
            _ => return,
        };
        self.caps.insert(cap as u32);
    }

    /// The type a type id stands for, if it is a scalar or vector type.
    pub(crate) fn ty_of_id(&self, type_id: Id) -> Option<Ty> {
        self.id_types.get(&type_id).copied()
    }

    /// The type of a value (an operand id), if it is a scalar or vector.
    pub(crate) fn ty_of_value(&self, value: Id) -> Option<Ty> {
        self.type_id_of_value(value).and_then(|t| self.ty_of_id(t))
    }

    /// The type id of a value.
    #[allow(dead_code, reason = "part of the helper API the rewrites build on")]
    pub(crate) fn type_id_of_value(&self, value: Id) -> Option<Id> {
        self.value_types
            .get(value as usize)
            .copied()
            .filter(|&t| t != 0)
    }

    /// A scalar constant of `ty` with the given bits (low `width` bits used; bool: 0 or 1).
    pub(crate) fn constant(&mut self, ty: Ty, bits: u64) -> Id {
        debug_assert_eq!(ty.n, 1);
        let t = self.ty(ty);
        let width = ty.scalar.width();
        let bits = if ty.scalar == Scalar::Bool {
            u64::from(bits != 0)
        } else if width < 64 {
            bits & ((1u64 << width) - 1)
        } else {
            bits
        };
        if let Some(&id) = self.consts.get(&(t, bits)) {
            return id;
        }
        let id = match ty.scalar {
            Scalar::Bool if bits != 0 => self.push_global(Op::ConstantTrue, Some(t), vec![]),
            Scalar::Bool => self.push_global(Op::ConstantFalse, Some(t), vec![]),
            _ if width == 64 => {
                self.push_global(Op::Constant, Some(t), vec![Operand::LiteralBit64(bits)])
            }
            Scalar::Int { signed: true, .. } if width < 32 => {
                // Narrow signed literals are sign-extended into the word, as the spec requires.
                let shift = 64 - width;
                let word = (((bits << shift) as i64) >> shift) as u32;
                self.push_global(Op::Constant, Some(t), vec![Operand::LiteralBit32(word)])
            }
            _ => self.push_global(
                Op::Constant,
                Some(t),
                vec![Operand::LiteralBit32(bits as u32)],
            ),
        };
        self.consts.insert((t, bits), id);
        id
    }

    /// A constant of `ty` with every component equal to the scalar `bits`.
    pub(crate) fn splat(&mut self, ty: Ty, bits: u64) -> Id {
        self.vector(ty, &vec![bits; usize::from(ty.n)])
    }

    /// A constant of `ty` whose components are `bits` (one per component, `ty.n` of them).
    pub(crate) fn vector(&mut self, ty: Ty, bits: &[u64]) -> Id {
        debug_assert_eq!(bits.len(), usize::from(ty.n));
        let comps: Vec<Id> = bits
            .iter()
            .map(|&b| self.constant(ty.component(), b))
            .collect();
        if ty.n == 1 {
            return comps[0];
        }
        let t = self.ty(ty);
        if let Some(&id) = self.composites.get(&(t, comps.clone())) {
            return id;
        }
        let id = self.push_global(
            Op::ConstantComposite,
            Some(t),
            comps.iter().map(|&c| Operand::IdRef(c)).collect(),
        );
        self.composites.insert((t, comps), id);
        id
    }

    /// The 32-bit unsigned constant `v`.
    pub(crate) fn u32(&mut self, v: u32) -> Id {
        self.constant(Ty::U32, u64::from(v))
    }

    /// `OpUndef` of a type id.
    #[allow(dead_code, reason = "part of the helper API the rewrites build on")]
    pub(crate) fn undef(&mut self, type_id: Id) -> Id {
        if let Some(&id) = self.undefs.get(&type_id) {
            return id;
        }
        let id = self.push_global(Op::Undef, Some(type_id), vec![]);
        self.undefs.insert(type_id, id);
        id
    }

    /// The execution scope operand `Subgroup`.
    /// The value of a constant used as a scope (see `scope_consts`), if `id` is one.
    pub(crate) fn scope_value(&self, id: Id) -> Option<u32> {
        self.scope_consts.get(&id).copied()
    }

    pub(crate) fn subgroup_scope(&mut self) -> Id {
        self.u32(spirv::Scope::Subgroup as u32)
    }

    /// The `GLSL.std.450` import id.
    pub(crate) fn glsl(&mut self) -> Id {
        if let Some(id) = self.glsl {
            return id;
        }
        let id = self.id();
        self.new_ext_import = Some(Instruction::new(
            Op::ExtInstImport,
            None,
            Some(id),
            vec![Operand::LiteralString("GLSL.std.450".into())],
        ));
        self.glsl = Some(id);
        id
    }

    /// Adds `OpDecorate target decoration [operand]` to the new annotations.
    fn decorate(&mut self, target: Id, decoration: Decoration, operand: Option<Operand>) {
        let mut operands = vec![Operand::IdRef(target), Operand::Decoration(decoration)];
        operands.extend(operand);
        self.new_annotations
            .push(Instruction::new(Op::Decorate, None, None, operands));
    }

    /// The Input variable of a built-in of type `ty`, declaring and decorating it if needed.
    pub(crate) fn builtin(&mut self, b: BuiltIn, ty: Ty) -> Id {
        if let Some(&v) = self.builtins.get(&b) {
            self.used_builtins.insert(v);
            return v;
        }
        let pointee = self.ty(ty);
        let ptr = match self.pointer_ids.get(&(StorageClass::Input, pointee)) {
            Some(&p) => p,
            None => {
                let p = self.push_global(
                    Op::TypePointer,
                    None,
                    vec![
                        Operand::StorageClass(StorageClass::Input),
                        Operand::IdRef(pointee),
                    ],
                );
                self.pointer_ids.insert((StorageClass::Input, pointee), p);
                p
            }
        };
        let var = self.push_global(
            Op::Variable,
            Some(ptr),
            vec![Operand::StorageClass(StorageClass::Input)],
        );
        self.decorate(var, Decoration::BuiltIn, Some(Operand::BuiltIn(b)));
        if self.ray_volatile == RayVolatile::Decoration && self.ray_volatile.applies_to(b) {
            self.decorate(var, Decoration::Volatile, None);
        }
        if self.fragment && ty.scalar != Scalar::Bool {
            // Vulkan: integer Input variables of a fragment shader are Flat (built-ins too).
            self.decorate(var, Decoration::Flat, None);
        }
        self.builtins.insert(b, var);
        self.new_builtins.push(var);
        self.used_builtins.insert(var);
        var
    }

    /// Records that emitted code needs a capability.
    /// Every core `GroupNonUniform*` capability also records `GroupNonUniform` itself.
    pub(crate) fn need(&mut self, cap: Capability) {
        let n = cap as u32;
        if (62..=68).contains(&n) {
            self.caps.insert(Capability::GroupNonUniform as u32);
        }
        self.caps.insert(n);
    }

    /// Whether masks are a single `uint` (every subgroup has at most 32 lanes).
    pub(crate) fn single_word(&self) -> bool {
        self.max_lanes <= 32
    }

    /// How many 32-bit words of a ballot can hold set bits (1 to 4).
    pub(crate) fn mask_words(&self) -> u32 {
        self.max_lanes.div_ceil(32).clamp(1, 4)
    }

    /// The type of a mask: `uint` or `uvec4`.
    pub(crate) fn mask_ty(&self) -> Ty {
        if self.single_word() {
            Ty::U32
        } else {
            Ty::UVEC4
        }
    }

    /// log2 of the largest subgroup size: the number of pointer-jumping steps.
    pub(crate) fn log2_lanes(&self) -> u32 {
        self.max_lanes.max(1).next_power_of_two().trailing_zeros()
    }

    /// Whether the target runs `OpGroupNonUniformShuffle` (core code, SPIR-V 1.3).
    pub(crate) fn has_shuffle(&self) -> bool {
        spv_subgroup_validate::fit::target_has(self.target, Capability::GroupNonUniformShuffle)
            && self.target.spirv_version >= (1, 3)
    }

    /// Whether the target runs core `OpGroupNonUniform*` code (else only `SPV_KHR_shader_ballot`).
    pub(crate) fn has_core_ballot(&self) -> bool {
        self.target.ops.ballot && self.target.spirv_version >= (1, 3)
    }

    /// The mask built-in (`SubgroupEqMask`..`SubgroupLtMask`) whose Input variable is `var`.
    pub(crate) fn mask_builtin(&self, var: Id) -> Option<BuiltIn> {
        [
            BuiltIn::SubgroupEqMask,
            BuiltIn::SubgroupGeMask,
            BuiltIn::SubgroupGtMask,
            BuiltIn::SubgroupLeMask,
            BuiltIn::SubgroupLtMask,
        ]
        .into_iter()
        .find(|b| self.builtins.get(b) == Some(&var))
    }
}

/// A block builder over one function: the finished blocks and the block being filled.
pub(crate) struct Code<'e, 't> {
    pub em: &'e mut Emitter<'t>,
    /// Blocks finished while rewriting (loops split the current block).
    pub done: Vec<Block>,
    /// The block instructions are appended to.
    pub cur: Block,
}

impl<'e, 't> Code<'e, 't> {
    /// Appends an instruction with a fresh result id of type `ty`; returns the id.
    pub(crate) fn emit(&mut self, op: Op, ty: Id, operands: Vec<Operand>) -> Id {
        let id = self.em.id();
        self.em.set_value_type(id, ty);
        let inst = self.em.inst(op, Some(ty), Some(id), operands);
        self.cur.instructions.push(inst);
        id
    }

    /// Appends an instruction whose operands are all ids.
    pub(crate) fn op(&mut self, op: Op, ty: Ty, args: &[Id]) -> Id {
        let t = self.em.ty(ty);
        self.emit(op, t, args.iter().map(|&a| Operand::IdRef(a)).collect())
    }

    /// Appends an instruction without a result (branches, merges).
    pub(crate) fn emit_void(&mut self, op: Op, operands: Vec<Operand>) {
        let inst = self.em.inst(op, None, None, operands);
        self.cur.instructions.push(inst);
    }

    /// Ends the current block and starts a new one with label `label`.
    pub(crate) fn start_block(&mut self, label: Id) {
        let next = Block {
            label: Some(self.em.inst(Op::Label, None, Some(label), vec![])),
            instructions: vec![],
        };
        let done = std::mem::replace(&mut self.cur, next);
        self.done.push(done);
    }

    /// The label of the current block.
    pub(crate) fn cur_label(&self) -> Id {
        self.cur
            .label
            .as_ref()
            .and_then(|l| l.result_id)
            .unwrap_or(0)
    }

    /// Emits a structured `do { body } while (cond)` loop and leaves the builder in its merge block.
    ///
    /// `carried` are the loop-carried values as (type, initial value); `body` receives their phis
    /// and returns their next values and the condition to go round again. The condition must be
    /// subgroup-uniform (derived from ballots): the loop is uniform, never a divergent break,
    /// which lavapipe miscompiles and NVIDIA has hung on. Returns the final carried values.
    ///
    /// Shape: `pre -> header (phis, OpLoopMerge, OpBranch) -> body ... -> OpBranchConditional
    /// again header merge`. The body's (last) block is the loop's continue target and back-edge
    /// block, so every value it computes is used in the block that defines it: naga's MSL
    /// writer emits a `continuing` block before the body and cannot name subgroup results the
    /// body defined, so nothing may cross from a body into a separate continue block.
    pub(crate) fn do_while(
        &mut self,
        carried: &[(Ty, Id)],
        body: impl FnOnce(&mut Code, &[Id]) -> Result<(Vec<Id>, Id), LowerError>,
    ) -> Result<Vec<Id>, LowerError> {
        let pre = self.cur_label();
        let (header, cont, merge) = (self.em.id(), self.em.id(), self.em.id());
        self.emit_void(Op::Branch, vec![Operand::IdRef(header)]);
        self.start_block(header);
        let phis: Vec<Id> = carried.iter().map(|_| self.em.id()).collect();
        for ((ty, _), &phi) in carried.iter().zip(&phis) {
            let t = self.em.ty(*ty);
            self.em.set_value_type(phi, t);
        }
        self.emit_void(
            Op::LoopMerge,
            vec![
                Operand::IdRef(merge),
                Operand::IdRef(cont),
                Operand::LoopControl(spirv::LoopControl::NONE),
            ],
        );
        self.emit_void(Op::Branch, vec![Operand::IdRef(cont)]);
        self.start_block(cont);
        let header_index = self.done.len() - 1;
        let (next, again) = body(self, &phis)?;
        let back = self.cur_label();
        self.emit_void(
            Op::BranchConditional,
            vec![
                Operand::IdRef(again),
                Operand::IdRef(header),
                Operand::IdRef(merge),
            ],
        );
        self.start_block(merge);
        let mut phi_insts = Vec::with_capacity(phis.len());
        for (((ty, init), &phi), &nx) in carried.iter().zip(&phis).zip(&next) {
            let t = self.em.ty(*ty);
            phi_insts.push(Instruction::new(
                Op::Phi,
                Some(t),
                Some(phi),
                vec![
                    Operand::IdRef(*init),
                    Operand::IdRef(pre),
                    Operand::IdRef(nx),
                    Operand::IdRef(back),
                ],
            ));
        }
        let header_block = &mut self.done[header_index];
        header_block.instructions.splice(0..0, phi_insts);
        Ok(next)
    }

    /// Emits `cond ? then_value() : else_value()` as a structured `if`, for a `cond` that is
    /// the same on every active lane (computed from ballots), so each side runs only when needed
    /// and its subgroup operations see all active lanes. Returns the phi of the two values, in a
    /// merge block that holds only that phi: the driver may move what follows the rewrite into a
    /// block of its own, and a phi must stay where its predecessors branch to.
    pub(crate) fn uniform_if(
        &mut self,
        cond: Id,
        ty: Ty,
        then_value: impl FnOnce(&mut Code) -> Result<Id, LowerError>,
        else_value: impl FnOnce(&mut Code) -> Result<Id, LowerError>,
    ) -> Result<Id, LowerError> {
        let (then_label, else_label, merge) = (self.em.id(), self.em.id(), self.em.id());
        self.emit_void(
            Op::SelectionMerge,
            vec![
                Operand::IdRef(merge),
                Operand::SelectionControl(spirv::SelectionControl::NONE),
            ],
        );
        self.emit_void(
            Op::BranchConditional,
            vec![
                Operand::IdRef(cond),
                Operand::IdRef(then_label),
                Operand::IdRef(else_label),
            ],
        );
        self.start_block(then_label);
        let a = then_value(self)?;
        let a_end = self.cur_label();
        self.emit_void(Op::Branch, vec![Operand::IdRef(merge)]);
        self.start_block(else_label);
        let b = else_value(self)?;
        let b_end = self.cur_label();
        self.emit_void(Op::Branch, vec![Operand::IdRef(merge)]);
        self.start_block(merge);
        let t = self.em.ty(ty);
        let result = self.emit(
            Op::Phi,
            t,
            vec![
                Operand::IdRef(a),
                Operand::IdRef(a_end),
                Operand::IdRef(b),
                Operand::IdRef(b_end),
            ],
        );
        let after = self.em.id();
        self.emit_void(Op::Branch, vec![Operand::IdRef(after)]);
        self.start_block(after);
        Ok(result)
    }

    /// Emits `body` under a uniform choice on the `SubgroupSize` built-in when the subgroup size
    /// is not known to be at most 32: `SubgroupSize <= 32 ? body at 32 lanes : body at max_lanes`.
    /// The first side has single-word masks and `log2(32)` pointer-jumping steps, what
    /// `--subgroup-size 32` gives, so a device with subgroups of at most 32 lanes (NVIDIA, most
    /// others) runs that code without the user naming its size; a driver that knows its size folds
    /// the branch away. `SubgroupSize` is one value for the whole dispatch, so the branch is
    /// uniform. `body` must return a value of type `ty`, the same on both sides.
    pub(crate) fn by_subgroup_size(
        &mut self,
        ty: Ty,
        body: impl Fn(&mut Code) -> Result<Id, LowerError>,
    ) -> Result<Id, LowerError> {
        let max = self.em.max_lanes;
        if max <= 32 || self.em.in_size_choice {
            return body(self);
        }
        // Where the built-in cannot be loaded (no core non-uniform built-ins, or a function a
        // naga-like consumer's vertex stage reaches: see `subgroup_size`) the general sequence
        // alone is emitted.
        let Ok(size) = self.subgroup_size() else {
            return body(self);
        };
        let c32 = self.em.u32(32);
        let small = self.op(Op::ULessThanEqual, Ty::BOOL, &[size, c32]);
        self.em.in_size_choice = true;
        let out = self.uniform_if(
            small,
            ty,
            |code| {
                code.em.max_lanes = 32;
                let r = body(code);
                code.em.max_lanes = max;
                r
            },
            |code| body(code),
        );
        self.em.in_size_choice = false;
        out
    }

    /// A `GLSL.std.450` extended instruction.
    pub(crate) fn glsl(&mut self, inst: u32, ty: Ty, args: &[Id]) -> Id {
        let set = self.em.glsl();
        let t = self.em.ty(ty);
        let mut ops = vec![Operand::IdRef(set), Operand::LiteralExtInstInteger(inst)];
        ops.extend(args.iter().map(|&a| Operand::IdRef(a)));
        self.emit(Op::ExtInst, t, ops)
    }

    /// Loads a built-in input.
    pub(crate) fn load_builtin(&mut self, b: BuiltIn, ty: Ty) -> Id {
        let var = self.em.builtin(b, ty);
        if self.em.ray_volatile == RayVolatile::LoadOperand && self.em.ray_volatile.applies_to(b) {
            let t = self.em.ty(ty);
            return self.emit(
                Op::Load,
                t,
                vec![
                    Operand::IdRef(var),
                    Operand::MemoryAccess(spirv::MemoryAccess::VOLATILE),
                ],
            );
        }
        self.op(Op::Load, ty, &[var])
    }

    /// `OpCompositeExtract` of one component.
    pub(crate) fn extract(&mut self, ty: Ty, v: Id, index: u32) -> Id {
        let t = self.em.ty(ty);
        self.emit(
            Op::CompositeExtract,
            t,
            vec![Operand::IdRef(v), Operand::LiteralBit32(index)],
        )
    }

    /// `OpSelect`.
    ///
    /// A scalar condition with a vector result is splatted into a bool vector first: SPIR-V
    /// before 1.4 requires the condition to have the result's component count.
    pub(crate) fn select(&mut self, ty: Ty, cond: Id, a: Id, b: Id) -> Id {
        let cond = if ty.n > 1 && self.em.ty_of_value(cond).is_some_and(|t| t.n == 1) {
            self.op(
                Op::CompositeConstruct,
                Ty::BOOL.with_n(ty.n),
                &vec![cond; usize::from(ty.n)],
            )
        } else {
            cond
        };
        self.op(Op::Select, ty, &[cond, a, b])
    }

    /// `OpLogicalNot`.
    pub(crate) fn not(&mut self, a: Id) -> Id {
        self.op(Op::LogicalNot, Ty::BOOL, &[a])
    }

    /// `OpLogicalAnd`.
    pub(crate) fn and(&mut self, a: Id, b: Id) -> Id {
        self.op(Op::LogicalAnd, Ty::BOOL, &[a, b])
    }

    /// `OpLogicalOr`.
    pub(crate) fn or(&mut self, a: Id, b: Id) -> Id {
        self.op(Op::LogicalOr, Ty::BOOL, &[a, b])
    }

    /// An "unsupported by target" error for the instruction being rewritten (the driver fills
    /// in the result id and opcode).
    pub(crate) fn missing(&self, what: &str) -> LowerError {
        LowerError::Unsupported {
            result_id: 0,
            opcode: String::new(),
            word_offset: 0,
            target: self.em.target.name.clone(),
            missing: what.to_owned(),
        }
    }
}
