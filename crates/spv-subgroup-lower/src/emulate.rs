//! Virtual subgroups: `LowerOptions::emulate_subgroup_size` (`lower --emulate-subgroup-size N`).
//!
//! A pass that runs before the ordinary lowering (DESIGN.md section 9): each hardware subgroup of
//! H lanes (H a multiple of N) is split into H/N virtual subgroups of N consecutive lanes, and
//! everything that observes the subgroup size is rewritten into core operations over the virtual
//! subgroup: the size built-ins, the mask built-ins, ballots and every op that reads or returns a
//! ballot, votes, `Elect`, broadcasts and shuffles, reductions and scans, partitioned ops and the
//! KHR ballot and vote instructions. The result is then lowered for the target as usual, so the
//! core, clustered and partitioned operations emitted here become whatever the device runs.
//!
//! Notation (per invocation): `lane` is the hardware `SubgroupLocalInvocationId`, `vl = lane % N`
//! the lane in the virtual subgroup, `base = lane - vl` its first lane. A *virtual* ballot holds
//! the virtual subgroup's lanes at bits 0 to N-1; a *hardware* ballot holds them at bits `base`
//! to `base + N - 1`. For N <= 32 those bits lie in word `base / 32` at bit `base % 32`; for
//! N = 64 in words `base / 32` and `base / 32 + 1`.
//!
//! What is not rewritten yet is refused with the instruction's name (docs/lowering.md, "What
//! cannot be emulated (yet)").
//!
//! In three steps, so that `lower_words` can emulate one function at a time
//! (`emulate_stream.rs`) and `lower` a held module ([`emulate`]): [`Virtual::of`] checks the
//! options and reads the globals, [`emulate_function`] rewrites one function, [`finish`] adds
//! the new globals and requirements.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rspirv::dr::{Block, Function, Instruction, Module, Operand};
use spirv::{BuiltIn, Capability, Decoration, ExecutionMode, ExecutionModel, GroupOperation, Op};

use crate::builtin_uses::{self, Reads, Refusal};
use crate::emit::{Code, Emitter, Id, Scalar, Ty};
use crate::{loader, pipeline, stages, LowerError, LowerOptions, LowerReport, Target};

/// The largest size that can be emulated: a virtual ballot fits in two words.
pub(crate) const MAX_EMULATED: u32 = 64;

/// The start of the `OpModuleProcessed` text an emulated module carries: emulating it again
/// would read the virtual lane id where the first pass reads the hardware's, so it is refused.
const PROCESSED: &str = "spv-subgroup --emulate-subgroup-size";

/// `lower_words` with `opts.emulate_subgroup_size == Some(n)` for an input of 2^31 words or
/// more (`emulate_stream` streams smaller ones; placeholders hold 31-bit offsets): the module is
/// loaded whole, emulated, assembled and lowered as usual for the target.
pub(crate) fn lower_words_emulated_whole(
    words: &[u32],
    opts: &LowerOptions,
    n: u32,
) -> Result<(Vec<u32>, LowerReport), LowerError> {
    check_input(words, opts)?;
    let loader::Loaded {
        mut module,
        between_functions,
    } = loader::load(words)?;
    let sites = emulate(&mut module, n, opts)?;
    let inner = opts.clone().with_emulated_subgroup_size(None);
    if sites == 0 {
        // Nothing observes the size: the module is lowered as it is.
        return crate::lower_words(words, &inner);
    }
    let mut emulated = loader::assemble(module, &between_functions);
    if let (Some(o), Some(&g)) = (emulated.get_mut(2), words.get(2)) {
        *o = g;
    }
    let (out, report) = crate::lower_words(&emulated, &inner)?;
    Ok((out, with_emulation(report, n, sites)))
}

/// `lower` with `opts.emulate_subgroup_size == Some(n)`.
pub(crate) fn lower_emulated(
    module: &mut Module,
    opts: &LowerOptions,
    n: u32,
) -> Result<LowerReport, LowerError> {
    check_input(&rspirv::binary::Assemble::assemble(&*module), opts)?;
    let sites = emulate(module, n, opts)?;
    let inner = opts.clone().with_emulated_subgroup_size(None);
    let report = crate::lower(module, &inner)?;
    Ok(with_emulation(report, n, sites))
}

/// The lowering's report with the emulation's sites (none: the report as it is).
pub(crate) fn with_emulation(mut report: LowerReport, n: u32, sites: usize) -> LowerReport {
    if sites == 0 {
        return report;
    }
    report.changed = true;
    report
        .rewrites
        .push((format!("emulated at subgroup size {n}"), sites));
    report.rewrites.sort();
    report
}

/// The checks plain lowering makes of an input, made before the emulation rewrites anything (a
/// rewrite could hide what is wrong with the input, as ALU code our validator does not check):
/// the id bound, the target's environment and execution modes (`pipeline::Pass::start` asks
/// the same), and our validator's verdict on the input alone, which is how verification blames
/// an input (`verify::verify_lowered`). An input with an error is refused with its first
/// finding, the one plain `lower` names.
pub(crate) fn check_input(words: &[u32], opts: &LowerOptions) -> Result<(), LowerError> {
    if let Some(&bound) = words.get(3) {
        pipeline::check_input_bound(bound, &opts.target)?;
    }
    let vopts = spv_subgroup_validate::ValidateOptions::default()
        .with_target_env(opts.target.target_env.clone());
    // An unreadable input is left to the loader, which reports it with its position.
    let Ok(report) = spv_subgroup_validate::validate(words, &vopts) else {
        return Ok(());
    };
    let errors: Vec<_> = report
        .diagnostics
        .iter()
        .filter(|d| d.severity == spv_subgroup_validate::Severity::Error)
        .collect();
    let Some(first) = errors
        .iter()
        .find(|d| d.rule.kind() != spv_subgroup_validate::Kind::Unsupported)
        .or(errors.first())
    else {
        return Ok(());
    };
    let more = match errors.len() {
        1 => String::new(),
        2 => " (and 1 more error)".to_owned(),
        k => format!(" (and {} more errors)", k - 1),
    };
    Err(LowerError::Invalid {
        result_id: first.location.result_id.unwrap_or(0),
        message: format!("{}{more}", crate::verify::describe(first)),
    })
}

/// A refusal of the whole module (no instruction to name).
fn refuse(target: &Target, what: &str, missing: String) -> LowerError {
    pipeline::refuse(target, what, 0, missing)
}

/// A refusal of one instruction.
fn refuse_inst(target: &Target, inst: &Instruction, n: u32, why: &str) -> LowerError {
    LowerError::Unsupported {
        result_id: inst.result_id.unwrap_or(0),
        opcode: format!("Op{:?}", inst.class.opcode),
        word_offset: 0,
        target: target.name.clone(),
        missing: format!("emulating subgroup size {n}: {why}"),
    }
}

/// A use of a built-in the emulation cannot rewrite ([`builtin_uses::Reads::normalize`]), in
/// function `function`.
fn refuse_use(target: &Target, r: Refusal, n: u32, function: Option<Id>) -> LowerError {
    let text = rspirv::binary::Disassemble::disassemble(&r.inst);
    let place = function.map_or(String::new(), |f| format!(" in function %{f}"));
    LowerError::Unsupported {
        result_id: r.inst.result_id.unwrap_or(0),
        opcode: format!("Op{:?}", r.inst.class.opcode),
        word_offset: 0,
        target: target.name.clone(),
        missing: format!(
            "emulating subgroup size {n}: {} (`{}`{place})",
            r.why,
            text.trim()
        ),
    }
}

/// Checks the size and the target: N a power of two from 1 to 64, hardware subgroups a multiple.
fn check_size(n: u32, opts: &LowerOptions) -> Result<(), LowerError> {
    let t = &opts.target;
    if !n.is_power_of_two() || n > MAX_EMULATED {
        return Err(refuse(
            t,
            "the options",
            format!("an emulated subgroup size of {n}: it must be a power of two from 1 to 64"),
        ));
    }
    if t.max_subgroup_size < n {
        return Err(refuse(
            t,
            "the options",
            format!(
                "emulating subgroup size {n} needs subgroups of at least {n} lanes; the target's \
                 have at most {}",
                t.max_subgroup_size
            ),
        ));
    }
    if let Some(h) = opts.subgroup_size {
        if h % n != 0 {
            return Err(refuse(
                t,
                "the options",
                format!("emulating subgroup size {n} on subgroups of {h} lanes (not a multiple)"),
            ));
        }
    }
    if t.spirv_version < (1, 3) || !t.ops.ballot || !t.ops.basic {
        return Err(refuse(
            t,
            "the options",
            format!(
                "emulating subgroup size {n} needs core ballots (GroupNonUniformBallot, SPIR-V \
                 1.3); target `{}` has none",
                t.name
            ),
        ));
    }
    Ok(())
}

/// Where the workgroup size of the module's compute entry points comes from.
#[derive(Clone, Copy)]
enum WorkgroupSize {
    /// `LocalSize` literals (every entry point the same): the invocation count.
    Literal(u32),
    /// The constant (or specialization constant) decorated `BuiltIn WorkgroupSize`, a `uvec3`.
    Composite(Id),
    /// `LocalSizeId`'s three constant ids (every entry point the same).
    Ids([Id; 3]),
    /// Entry points with different sizes: `NumSubgroups` is refused.
    Unknown,
}

/// Checks the entry points and execution modes; returns the workgroup size.
fn check_module(module: &Module, n: u32, target: &Target) -> Result<WorkgroupSize, LowerError> {
    for p in &module.debug_module_processed {
        if let Some(Operand::LiteralString(text)) = p.operands.first() {
            if text.starts_with(PROCESSED) {
                return Err(refuse(
                    target,
                    "OpModuleProcessed",
                    format!(
                        "emulating subgroup size {n} in a module already emulated (`{text}`): \
                         its code reads the hardware's lane id, which a second emulation would \
                         replace; emulate the original module"
                    ),
                ));
            }
        }
    }
    // The hardware built-ins the emulation loads are integer inputs, `Flat` in a module with a
    // fragment shader (as the ordinary lowering's are, `stages.rs`); an entry point that must not
    // list a `Flat` input beside it would need the ordinary lowering's copies of the shared
    // functions, which this pass does not make.
    let fragment = module.entry_points.iter().any(|ep| {
        matches!(
            ep.operands.first(),
            Some(Operand::ExecutionModel(ExecutionModel::Fragment))
        )
    });
    if fragment {
        let twins = stages::twin_entry_points(module);
        if let Some((ep, _)) = module.entry_points.iter().zip(&twins).find(|(_, &t)| t) {
            let m = match ep.operands.first() {
                Some(Operand::ExecutionModel(m)) => format!("{m:?}"),
                _ => "another".to_owned(),
            };
            return Err(refuse(
                target,
                "OpEntryPoint",
                format!(
                    "emulating subgroup size {n}: a {m} entry point beside a fragment one in the \
                     same module (the fragment stage needs the hardware lane id `Flat`, which a \
                     {m} stage must not list; emulate each stage's module on its own)"
                ),
            ));
        }
    }
    let mut literal: BTreeSet<u32> = BTreeSet::new();
    let mut ids: BTreeSet<[Id; 3]> = BTreeSet::new();
    for m in &module.execution_modes {
        match m.operands.get(1) {
            Some(Operand::ExecutionMode(
                mode @ (ExecutionMode::SubgroupsPerWorkgroup
                | ExecutionMode::SubgroupsPerWorkgroupId
                | ExecutionMode::SubgroupSize),
            )) => {
                return Err(refuse(
                    target,
                    "OpExecutionMode",
                    format!(
                        "emulating subgroup size {n}: execution mode {mode:?} fixes the \
                         hardware's subgroups"
                    ),
                ))
            }
            Some(Operand::ExecutionMode(ExecutionMode::LocalSize)) => {
                let count = m.operands[2..]
                    .iter()
                    .map(|o| match o {
                        Operand::LiteralBit32(v) => *v,
                        _ => 1,
                    })
                    .fold(1u32, u32::saturating_mul);
                literal.insert(count);
            }
            Some(Operand::ExecutionMode(ExecutionMode::LocalSizeId)) => {
                if let [_, _, Operand::IdRef(x), Operand::IdRef(y), Operand::IdRef(z)] =
                    m.operands.as_slice()
                {
                    ids.insert([*x, *y, *z]);
                }
            }
            _ => {}
        }
    }
    // The WorkgroupSize built-in overrides the execution modes (and holds the specialized size).
    let composite = module.annotations.iter().find_map(|a| match a.operands.as_slice() {
        [Operand::IdRef(t), Operand::Decoration(Decoration::BuiltIn), Operand::BuiltIn(BuiltIn::WorkgroupSize)]
            if a.class.opcode == Op::Decorate =>
        {
            Some(*t)
        }
        _ => None,
    });
    Ok(match composite {
        Some(c) => WorkgroupSize::Composite(c),
        None if literal.len() == 1 && ids.is_empty() => {
            WorkgroupSize::Literal(*literal.iter().next().unwrap_or(&1))
        }
        None if ids.len() == 1 && literal.is_empty() => {
            WorkgroupSize::Ids(*ids.iter().next().unwrap_or(&[0; 3]))
        }
        None => WorkgroupSize::Unknown,
    })
}

/// Rewrites `module` for virtual subgroups of `n` lanes; returns how many instructions changed.
pub(crate) fn emulate(
    module: &mut Module,
    n: u32,
    opts: &LowerOptions,
) -> Result<usize, LowerError> {
    let v = Virtual::of(module, n, opts)?;
    let full = emitting_target(&opts.target);
    let mut em = Emitter::new(module, &full, 128, None);
    let mut sites = 0usize;
    let mut dropped = BTreeSet::new();
    for function in &mut module.functions {
        sites += emulate_function(&v, &mut em, function, &mut dropped)?;
    }
    if sites == 0 {
        return Ok(0);
    }
    let all: BTreeSet<Id> = module
        .functions
        .iter()
        .filter_map(|f| f.def.as_ref().and_then(|d| d.result_id))
        .collect();
    finish(module, &mut em, n, &all, &dropped, &opts.target)?;
    Ok(sites)
}

/// The target the emulation's emitter writes for: the code emitted here uses core operations
/// the target may lack, so it is written for a target with every subgroup feature, and the
/// ordinary lowering rewrites what is missing.
pub(crate) fn emitting_target(target: &Target) -> Target {
    let mut full = target.clone();
    full.ops.basic = true;
    full.ops.vote = true;
    full.ops.ballot = true;
    full.ops.shuffle = true;
    full.ops.shuffle_relative = true;
    full.ops.clustered = true;
    full.ops.arithmetic = true;
    full.ops.partitioned = true;
    full.extended_types = true;
    full.restrictions = Default::default();
    full.spirv_version = full.spirv_version.max((1, 3));
    full.max_subgroup_size = 128;
    full
}

/// Rewrites one function for `v`'s virtual subgroups with `em`; returns how many instructions
/// changed. Every read of a built-in that observes the size first becomes a whole load of its
/// variable (`builtin_uses`; the pointers it drops are added to `dropped`, whose names and
/// decorations [`finish`] removes). The emitted code is straight-line, so no block is split (a
/// streamed function's phis keep their parents).
pub(crate) fn emulate_function(
    v: &Virtual,
    em: &mut Emitter,
    function: &mut Function,
    dropped: &mut BTreeSet<Id>,
) -> Result<usize, LowerError> {
    let fid = function.def.as_ref().and_then(|d| d.result_id);
    let normalized = v
        .reads
        .normalize(function, &mut || em.id(), dropped)
        .map_err(|r| refuse_use(v.target, r, v.n, fid))?;
    if normalized {
        em.index_function_values(function);
    }
    let mut sites = 0usize;
    for block in &mut function.blocks {
        let old = std::mem::take(&mut block.instructions);
        let mut new = Vec::with_capacity(old.len());
        for inst in old {
            let mut code = Code {
                em: &mut *em,
                done: Vec::new(),
                cur: Block {
                    label: None,
                    instructions: Vec::new(),
                },
            };
            let Some(value) = v.rewrite(&mut code, &inst)? else {
                new.push(inst);
                continue;
            };
            sites += 1;
            let mut emitted = std::mem::take(&mut code.cur.instructions);
            debug_assert!(code.done.is_empty(), "emulation emits straight-line code");
            take_over(&mut emitted, &inst, value);
            new.append(&mut emitted);
        }
        block.instructions = new;
    }
    Ok(sites)
}

/// Makes the emitted code define the original result id (uses elsewhere keep pointing at it).
fn take_over(emitted: &mut Vec<Instruction>, inst: &Instruction, value: Id) {
    let (Some(orig), Some(ty)) = (inst.result_id, inst.result_type) else {
        return;
    };
    if emitted.iter().any(|i| i.result_id == Some(value)) {
        for i in emitted.iter_mut() {
            if i.result_id == Some(value) {
                i.result_id = Some(orig);
            }
            for o in &mut i.operands {
                if *o == Operand::IdRef(value) {
                    *o = Operand::IdRef(orig);
                }
            }
        }
    } else {
        emitted.push(Instruction::new(
            Op::CopyObject,
            Some(ty),
            Some(orig),
            vec![Operand::IdRef(value)],
        ));
    }
}

/// New globals, capabilities, extensions, the version and the entry points' interfaces.
/// `functions` holds every function of the module: each counts as rewritten, so every entry
/// point whose function is defined lists the built-ins the new code loads (an entry point
/// reaches its own function: no call graph is needed, and a streamed module has none).
pub(crate) fn finish(
    module: &mut Module,
    em: &mut Emitter,
    n: u32,
    functions: &BTreeSet<Id>,
    dropped: &BTreeSet<Id>,
    target: &Target,
) -> Result<(), LowerError> {
    // The version the target consumes, as plain lowering asks it once something changes.
    pipeline::check_version(module, target)?;
    builtin_uses::drop_debug_of(module, dropped);
    let twin_entry = vec![false; module.entry_points.len()];
    let no_calls = HashMap::new();
    pipeline::add_new_globals(
        module,
        em,
        &twin_entry,
        &BTreeMap::new(),
        &no_calls,
        functions,
    );
    let present: BTreeSet<u32> = module
        .capabilities
        .iter()
        .filter_map(|c| match c.operands.first() {
            Some(Operand::Capability(c)) => Some(*c as u32),
            _ => None,
        })
        .collect();
    for &c in &em.caps {
        if present.contains(&c) {
            continue;
        }
        let Some(cap) = Capability::from_u32(c) else {
            continue;
        };
        module.capabilities.push(Instruction::new(
            Op::Capability,
            None,
            None,
            vec![Operand::Capability(cap)],
        ));
    }
    for &ext in &em.exts {
        let has = module
            .extensions
            .iter()
            .any(|e| matches!(e.operands.first(), Some(Operand::LiteralString(s)) if s == ext));
        if !has {
            module.extensions.push(Instruction::new(
                Op::Extension,
                None,
                None,
                vec![Operand::LiteralString(ext.to_owned())],
            ));
        }
    }
    module.debug_module_processed.push(Instruction::new(
        Op::ModuleProcessed,
        None,
        None,
        vec![Operand::LiteralString(format!("{PROCESSED} {n}"))],
    ));
    if let Some(h) = module.header.as_mut() {
        if h.version() < (1, 3) {
            h.set_version(1, 3);
        }
        h.bound = em.bound();
    }
    Ok(())
}

/// The emulation of one size over one module.
pub(crate) struct Virtual<'a> {
    n: u32,
    /// The reads of the built-ins the emulation rewrites (or refuses).
    reads: Reads,
    log2: u32,
    /// Built-in of every decorated id.
    builtin_of: HashMap<Id, BuiltIn>,
    workgroup: WorkgroupSize,
    target: &'a Target,
    /// The value of every 32-bit `OpConstant` (cluster sizes).
    constants: HashMap<Id, u32>,
}

impl<'a> Virtual<'a> {
    /// Checks the size, the target and the module's globals (the functions are not read), and
    /// reads what the rewrites need of the globals.
    pub(crate) fn of(module: &Module, n: u32, opts: &'a LowerOptions) -> Result<Self, LowerError> {
        check_size(n, opts)?;
        let target = &opts.target;
        // Plain lowering's checks of the globals, before anything is rewritten.
        pipeline::check_environment(module, target)?;
        pipeline::check_execution_modes(module, target)?;
        let workgroup = check_module(module, n, target)?;
        let builtin_of = builtin_uses::decorated(module);
        if let Some((s, b)) = builtin_uses::member_decorated(module)
            .into_iter()
            .find(|&(_, b)| observes(b) || refused_builtin(b))
        {
            return Err(refuse(
                target,
                "OpMemberDecorate",
                format!(
                    "emulating subgroup size {n}: the {b:?} built-in as a member of the \
                     structure %{s} (only a variable decorated with it is emulated)"
                ),
            ));
        }
        let reads = Reads::new(module, |b| observes(b) || refused_builtin(b));
        let constants: HashMap<Id, u32> = module
            .types_global_values
            .iter()
            .filter(|i| i.class.opcode == Op::Constant)
            .filter_map(|i| match (i.result_id, i.operands.as_slice()) {
                (Some(id), [Operand::LiteralBit32(v)]) => Some((id, *v)),
                _ => None,
            })
            .collect();
        Ok(Virtual {
            n,
            reads,
            log2: n.trailing_zeros(),
            builtin_of,
            workgroup,
            target,
            constants,
        })
    }

    /// The low N bits of word `w` of a virtual ballot.
    fn low_word(&self, w: u32) -> u32 {
        let bits = self.n.saturating_sub(32 * w).min(32);
        if bits == 32 {
            u32::MAX
        } else {
            (1u32 << bits) - 1
        }
    }

    /// How many words of a virtual ballot can hold set bits.
    fn words(&self) -> u32 {
        self.n.div_ceil(32)
    }

    /// The hardware lane id.
    fn lane(&self, code: &mut Code) -> Id {
        code.em.need(Capability::GroupNonUniform);
        code.load_builtin(BuiltIn::SubgroupLocalInvocationId, Ty::U32)
    }

    /// `lane % N`.
    fn vl(&self, code: &mut Code, lane: Id) -> Id {
        let m = code.em.u32(self.n - 1);
        code.op(Op::BitwiseAnd, Ty::U32, &[lane, m])
    }

    /// `lane - lane % N`: the virtual subgroup's first hardware lane.
    fn base(&self, code: &mut Code, lane: Id) -> Id {
        let m = code.em.u32(!(self.n - 1));
        code.op(Op::BitwiseAnd, Ty::U32, &[lane, m])
    }

    /// (word index, bit offset) of the virtual subgroup's first bit in a hardware ballot.
    fn word_and_shift(&self, code: &mut Code, lane: Id) -> (Id, Id) {
        let base = self.base(code, lane);
        let five = code.em.u32(5);
        let w = code.op(Op::ShiftRightLogical, Ty::U32, &[base, five]);
        let m = code.em.u32(31);
        let s = code.op(Op::BitwiseAnd, Ty::U32, &[base, m]);
        (w, s)
    }

    /// A hardware ballot as the virtual ballot (bits 0 to N-1, the rest zero).
    fn down(&self, code: &mut Code, hw: Id, lane: Id) -> Id {
        let (w, s) = self.word_and_shift(code, lane);
        let zero = code.em.u32(0);
        let a = code.op(Op::VectorExtractDynamic, Ty::U32, &[hw, w]);
        if self.n == 64 {
            let one = code.em.u32(1);
            let w1 = code.op(Op::IAdd, Ty::U32, &[w, one]);
            let b = code.op(Op::VectorExtractDynamic, Ty::U32, &[hw, w1]);
            return code.op(Op::CompositeConstruct, Ty::UVEC4, &[a, b, zero, zero]);
        }
        let shifted = code.op(Op::ShiftRightLogical, Ty::U32, &[a, s]);
        let low = code.em.u32(self.low_word(0));
        let x = code.op(Op::BitwiseAnd, Ty::U32, &[shifted, low]);
        code.op(Op::CompositeConstruct, Ty::UVEC4, &[x, zero, zero, zero])
    }

    /// A virtual ballot as a hardware ballot (bits outside 0 to N-1 dropped).
    fn up(&self, code: &mut Code, virt: Id, lane: Id) -> Id {
        let (w, s) = self.word_and_shift(code, lane);
        let zero = code.em.u32(0);
        let a = code.extract(Ty::U32, virt, 0);
        let mut words = Vec::with_capacity(4);
        if self.n == 64 {
            let b = code.extract(Ty::U32, virt, 1);
            let one = code.em.u32(1);
            let w1 = code.op(Op::IAdd, Ty::U32, &[w, one]);
            for i in 0..4 {
                let k = code.em.u32(i);
                let at_a = code.op(Op::IEqual, Ty::BOOL, &[w, k]);
                let at_b = code.op(Op::IEqual, Ty::BOOL, &[w1, k]);
                let lo = code.select(Ty::U32, at_b, b, zero);
                words.push(code.select(Ty::U32, at_a, a, lo));
            }
        } else {
            let low = code.em.u32(self.low_word(0));
            let x = code.op(Op::BitwiseAnd, Ty::U32, &[a, low]);
            let y = code.op(Op::ShiftLeftLogical, Ty::U32, &[x, s]);
            for i in 0..4 {
                let k = code.em.u32(i);
                let at = code.op(Op::IEqual, Ty::BOOL, &[w, k]);
                words.push(code.select(Ty::U32, at, y, zero));
            }
        }
        code.op(Op::CompositeConstruct, Ty::UVEC4, &words)
    }

    /// The virtual ballot with every lane of the virtual subgroup: bits 0 to N-1.
    fn full_virtual(&self, code: &mut Code) -> Id {
        let bits: Vec<u64> = (0..4).map(|w| u64::from(self.low_word(w))).collect();
        code.em.vector(Ty::UVEC4, &bits)
    }

    /// The hardware ballot of `pred`.
    fn hw_ballot(&self, code: &mut Code, pred: Id) -> Id {
        code.em.need(Capability::GroupNonUniformBallot);
        let scope = code.em.subgroup_scope();
        code.op(Op::GroupNonUniformBallot, Ty::UVEC4, &[scope, pred])
    }

    /// The virtual ballot of `pred`.
    fn ballot(&self, code: &mut Code, pred: Id, lane: Id) -> Id {
        let hw = self.hw_ballot(code, pred);
        self.down(code, hw, lane)
    }

    fn is_zero(&self, code: &mut Code, m: Id) -> Id {
        let z = code.em.splat(Ty::UVEC4, 0);
        let eq = code.op(Op::IEqual, Ty::BOOL.with_n(4), &[m, z]);
        code.op(Op::All, Ty::BOOL, &[eq])
    }

    /// Whether `pred` holds in every active lane of the virtual subgroup.
    fn all(&self, code: &mut Code, pred: Id, lane: Id) -> Id {
        let not = code.not(pred);
        let b = self.ballot(code, not, lane);
        self.is_zero(code, b)
    }

    /// The hardware lane of the virtual subgroup's lowest active lane.
    fn first_lane(&self, code: &mut Code, lane: Id) -> Id {
        let t = code.em.constant(Ty::BOOL, 1);
        let act = self.ballot(code, t, lane);
        let scope = code.em.subgroup_scope();
        let lsb = code.op(Op::GroupNonUniformBallotFindLSB, Ty::U32, &[scope, act]);
        let base = self.base(code, lane);
        code.op(Op::IAdd, Ty::U32, &[base, lsb])
    }

    /// Word `w` of the virtual ballot of the lanes below `count`.
    fn below(&self, code: &mut Code, count: Id, w: u32) -> Result<Id, LowerError> {
        code.low_bits_word(count, w)
    }

    /// A virtual mask built-in.
    fn mask(&self, code: &mut Code, b: BuiltIn) -> Result<Id, LowerError> {
        let lane = self.lane(code);
        let vl = self.vl(code, lane);
        let one = code.em.u32(1);
        let vl1 = code.op(Op::IAdd, Ty::U32, &[vl, one]);
        let zero = code.em.u32(0);
        let mut words = vec![zero; 4];
        for (w, slot) in words.iter_mut().enumerate().take(self.words() as usize) {
            let w = w as u32;
            let lt = self.below(code, vl, w)?;
            let le = self.below(code, vl1, w)?;
            let full = code.em.u32(self.low_word(w));
            *slot = match b {
                BuiltIn::SubgroupEqMask => code.op(Op::BitwiseXor, Ty::U32, &[le, lt]),
                BuiltIn::SubgroupLtMask => lt,
                BuiltIn::SubgroupLeMask => le,
                BuiltIn::SubgroupGeMask => code.op(Op::BitwiseXor, Ty::U32, &[full, lt]),
                _ => code.op(Op::BitwiseXor, Ty::U32, &[full, le]),
            };
        }
        Ok(code.op(Op::CompositeConstruct, Ty::UVEC4, &words))
    }

    /// The workgroup's invocation count, as a value.
    fn invocations(&self, code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
        let product = |code: &mut Code, xs: [Id; 3]| {
            let xy = code.op(Op::IMul, Ty::U32, &[xs[0], xs[1]]);
            code.op(Op::IMul, Ty::U32, &[xy, xs[2]])
        };
        Ok(match self.workgroup {
            WorkgroupSize::Literal(c) => code.em.u32(c),
            WorkgroupSize::Ids(ids) => product(code, ids),
            WorkgroupSize::Composite(c) => {
                let xs = [0, 1, 2].map(|i| code.extract(Ty::U32, c, i));
                product(code, xs)
            }
            WorkgroupSize::Unknown => {
                return Err(refuse_inst(
                    self.target,
                    inst,
                    self.n,
                    "NumSubgroups in a module whose entry points have different workgroup sizes",
                ))
            }
        })
    }

    /// The replacement of a load of a built-in that observes the subgroup size.
    fn load(
        &self,
        code: &mut Code,
        inst: &Instruction,
        b: BuiltIn,
    ) -> Result<Option<Id>, LowerError> {
        let ty = inst.result_type.and_then(|t| code.em.ty_of_id(t));
        let want = match b {
            BuiltIn::SubgroupEqMask
            | BuiltIn::SubgroupGeMask
            | BuiltIn::SubgroupGtMask
            | BuiltIn::SubgroupLeMask
            | BuiltIn::SubgroupLtMask => Ty::UVEC4,
            _ => Ty::U32,
        };
        if ty != Some(want) {
            return Err(refuse_inst(
                self.target,
                inst,
                self.n,
                &format!("a load of {b:?} whose type is not the one Vulkan gives it"),
            ));
        }
        let n = self.n;
        Ok(Some(match b {
            BuiltIn::SubgroupSize => code.em.u32(n),
            BuiltIn::SubgroupLocalInvocationId => {
                let lane = self.lane(code);
                self.vl(code, lane)
            }
            BuiltIn::SubgroupId => {
                let hw_id = code.load_builtin(BuiltIn::SubgroupId, Ty::U32);
                let h = code.load_builtin(BuiltIn::SubgroupSize, Ty::U32);
                let log2 = code.em.u32(self.log2);
                let per = code.op(Op::ShiftRightLogical, Ty::U32, &[h, log2]);
                let first = code.op(Op::IMul, Ty::U32, &[hw_id, per]);
                let lane = self.lane(code);
                let v = code.op(Op::ShiftRightLogical, Ty::U32, &[lane, log2]);
                code.op(Op::IAdd, Ty::U32, &[first, v])
            }
            BuiltIn::NumSubgroups => {
                let w = self.invocations(code, inst)?;
                let round = code.em.u32(n - 1);
                let up = code.op(Op::IAdd, Ty::U32, &[w, round]);
                let log2 = code.em.u32(self.log2);
                code.op(Op::ShiftRightLogical, Ty::U32, &[up, log2])
            }
            _ => self.mask(code, b)?,
        }))
    }

    /// The value type of operand `k`, or a refusal.
    fn value_ty(&self, code: &Code, inst: &Instruction, k: usize) -> Result<(Id, Ty), LowerError> {
        let id = match inst.operands.get(k) {
            Some(Operand::IdRef(id)) => *id,
            _ => return Err(refuse_inst(self.target, inst, self.n, "a missing operand")),
        };
        match code.em.ty_of_value(id) {
            Some(t) => Ok((id, t)),
            None => Err(refuse_inst(
                self.target,
                inst,
                self.n,
                "a value that is not a scalar or vector",
            )),
        }
    }

    /// The id operand `k` (an integer lane index or delta), as a 32-bit integer.
    fn index(&self, code: &Code, inst: &Instruction, k: usize) -> Result<Id, LowerError> {
        let (id, ty) = self.value_ty(code, inst, k)?;
        match ty.scalar {
            Scalar::Int { width: 32, .. } if ty.n == 1 => Ok(id),
            _ => Err(refuse_inst(
                self.target,
                inst,
                self.n,
                "a lane index that is not a 32-bit integer",
            )),
        }
    }

    /// `x` read from the hardware lane `from`.
    fn read(
        &self,
        code: &mut Code,
        inst: &Instruction,
        k: usize,
        from: Id,
    ) -> Result<Id, LowerError> {
        let (x, ty) = self.value_ty(code, inst, k)?;
        let v = code.shuffle(ty, x, from)?;
        // The result keeps the instruction's own type id (it may be a duplicate declaration).
        Ok(v)
    }

    /// Whether `x` equals the first active virtual lane's `x`, component by component.
    fn all_equal(&self, code: &mut Code, inst: &Instruction, k: usize) -> Result<Id, LowerError> {
        let lane = self.lane(code);
        let first = self.first_lane(code, lane);
        let (x, ty) = self.value_ty(code, inst, k)?;
        let f = code.shuffle(ty, x, first)?;
        let cmp = match ty.scalar {
            Scalar::Bool => Op::LogicalEqual,
            Scalar::Int { .. } => Op::IEqual,
            Scalar::Float { .. } => Op::FOrdEqual,
        };
        let eq = code.op(cmp, Ty::BOOL.with_n(ty.n), &[x, f]);
        let same = if ty.n == 1 {
            eq
        } else {
            code.op(Op::All, Ty::BOOL, &[eq])
        };
        Ok(self.all(code, same, lane))
    }

    /// The replacement of `inst`, or `None` when it does not observe the subgroup size.
    fn rewrite(&self, code: &mut Code, inst: &Instruction) -> Result<Option<Id>, LowerError> {
        let op = inst.class.opcode;
        let rtype = inst.result_type.unwrap_or(0);
        let refuse = |why: &str| Err(refuse_inst(self.target, inst, self.n, why));
        let id_at = |k: usize| match inst.operands.get(k) {
            Some(Operand::IdRef(id)) => Ok(*id),
            _ => Err(refuse_inst(self.target, inst, self.n, "a missing operand")),
        };
        match op {
            Op::Load | Op::AccessChain | Op::InBoundsAccessChain | Op::PtrAccessChain => {
                let Some(Operand::IdRef(ptr)) = inst.operands.first() else {
                    return Ok(None);
                };
                let Some(&b) = self.builtin_of.get(ptr) else {
                    return Ok(None);
                };
                if refused_builtin(b) {
                    return refuse(&format!("the {b:?} built-in"));
                }
                if !observes(b) {
                    return Ok(None);
                }
                // `builtin_uses` made every read a whole load; a chain left is a bug of ours.
                if op != Op::Load {
                    return refuse(&format!(
                        "an access chain into the {b:?} built-in (only whole loads are emulated)"
                    ));
                }
                self.load(code, inst, b)
            }
            Op::GroupNonUniformElect => {
                let lane = self.lane(code);
                let first = self.first_lane(code, lane);
                Ok(Some(code.op(Op::IEqual, Ty::BOOL, &[first, lane])))
            }
            Op::GroupNonUniformAll | Op::SubgroupAllKHR => {
                let p = id_at(usize::from(op == Op::GroupNonUniformAll))?;
                let lane = self.lane(code);
                Ok(Some(self.all(code, p, lane)))
            }
            Op::GroupNonUniformAny | Op::SubgroupAnyKHR => {
                let p = id_at(usize::from(op == Op::GroupNonUniformAny))?;
                let lane = self.lane(code);
                let b = self.ballot(code, p, lane);
                let zero = self.is_zero(code, b);
                Ok(Some(code.not(zero)))
            }
            Op::GroupNonUniformAllEqual => Ok(Some(self.all_equal(code, inst, 1)?)),
            Op::SubgroupAllEqualKHR => Ok(Some(self.all_equal(code, inst, 0)?)),
            Op::GroupNonUniformBallot | Op::SubgroupBallotKHR => {
                let p = id_at(usize::from(op == Op::GroupNonUniformBallot))?;
                let lane = self.lane(code);
                Ok(Some(self.ballot(code, p, lane)))
            }
            Op::GroupNonUniformInverseBallot => {
                let v = id_at(1)?;
                let lane = self.lane(code);
                let vl = self.vl(code, lane);
                code.em.need(Capability::GroupNonUniformBallot);
                let scope = code.em.subgroup_scope();
                Ok(Some(code.op(
                    Op::GroupNonUniformBallotBitExtract,
                    Ty::BOOL,
                    &[scope, v, vl],
                )))
            }
            // They read virtual bit positions already; bits at N and above are dropped, as a
            // device of N lanes ignores them.
            Op::GroupNonUniformBallotFindLSB | Op::GroupNonUniformBallotFindMSB => {
                let v = id_at(1)?;
                let full = self.full_virtual(code);
                let m = code.op(Op::BitwiseAnd, Ty::UVEC4, &[v, full]);
                let scope = code.em.subgroup_scope();
                Ok(Some(code.emit(
                    op,
                    rtype,
                    vec![Operand::IdRef(scope), Operand::IdRef(m)],
                )))
            }
            Op::GroupNonUniformBallotBitCount => {
                let (Some(Operand::GroupOperation(g)), Ok(v)) = (inst.operands.get(1), id_at(2))
                else {
                    return refuse("a missing operand");
                };
                let lane = self.lane(code);
                let vl = self.vl(code, lane);
                let one = code.em.u32(1);
                let m = match g {
                    GroupOperation::Reduce => self.full_virtual(code),
                    GroupOperation::InclusiveScan | GroupOperation::ExclusiveScan => {
                        let count = if *g == GroupOperation::InclusiveScan {
                            code.op(Op::IAdd, Ty::U32, &[vl, one])
                        } else {
                            vl
                        };
                        let zero = code.em.u32(0);
                        let mut words = vec![zero; 4];
                        for (w, slot) in words.iter_mut().enumerate().take(self.words() as usize) {
                            *slot = self.below(code, count, w as u32)?;
                        }
                        code.op(Op::CompositeConstruct, Ty::UVEC4, &words)
                    }
                    _ => {
                        return refuse(
                            "a ballot bit count with a clustered or partitioned operation",
                        )
                    }
                };
                let masked = code.op(Op::BitwiseAnd, Ty::UVEC4, &[v, m]);
                let scope = code.em.subgroup_scope();
                Ok(Some(code.emit(
                    op,
                    rtype,
                    vec![
                        Operand::IdRef(scope),
                        Operand::GroupOperation(GroupOperation::Reduce),
                        Operand::IdRef(masked),
                    ],
                )))
            }
            Op::GroupNonUniformBroadcastFirst | Op::SubgroupFirstInvocationKHR => {
                let k = usize::from(op == Op::GroupNonUniformBroadcastFirst);
                let lane = self.lane(code);
                let first = self.first_lane(code, lane);
                Ok(Some(self.read(code, inst, k, first)?))
            }
            Op::GroupNonUniformBroadcast
            | Op::GroupNonUniformShuffle
            | Op::SubgroupReadInvocationKHR => {
                let k = usize::from(op != Op::SubgroupReadInvocationKHR);
                let index = self.index(code, inst, k + 1)?;
                let lane = self.lane(code);
                let base = self.base(code, lane);
                let from = code.op(Op::IAdd, Ty::U32, &[base, index]);
                Ok(Some(self.read(code, inst, k, from)?))
            }
            // It reads a virtual bit position of a virtual ballot already.
            Op::GroupNonUniformBallotBitExtract => Ok(None),
            // Xor masks below N and relative deltas that stay inside the virtual subgroup read
            // the same lane; the others were undefined at size N.
            Op::GroupNonUniformShuffleXor
            | Op::GroupNonUniformShuffleUp
            | Op::GroupNonUniformShuffleDown => Ok(None),
            Op::GroupNonUniformQuadBroadcast
            | Op::GroupNonUniformQuadSwap
            | Op::GroupNonUniformQuadAllKHR
            | Op::GroupNonUniformQuadAnyKHR => {
                if self.n < 4 {
                    return refuse("quad operations need at least 4 lanes");
                }
                Ok(None)
            }
            Op::GroupNonUniformRotateKHR => {
                if let Some(Operand::IdRef(c)) = inst.operands.get(3) {
                    return match self.constants.get(c) {
                        Some(&c) if c <= self.n => Ok(None),
                        _ => refuse(
                            "a clustered rotate whose cluster size is not a constant of at most N",
                        ),
                    };
                }
                let mut operands = inst.operands.clone();
                operands.push(Operand::IdRef(code.em.u32(self.n)));
                Ok(Some(code.emit(op, rtype, operands)))
            }
            Op::GroupNonUniformPartitionEXT => {
                let x = id_at(0)?;
                let hw = code.emit(op, rtype, vec![Operand::IdRef(x)]);
                let lane = self.lane(code);
                Ok(Some(self.down(code, hw, lane)))
            }
            _ if spv_subgroup_validate::fit::is_arithmetic(op) => self.arithmetic(code, inst),
            _ if spv_subgroup_validate::fit::is_subgroup_op(op) => {
                refuse("an instruction that is not emulated yet (docs/lowering.md lists them)")
            }
            Op::ExtInst if is_amd_ballot(inst, code) => {
                refuse("SPV_AMD_shader_ballot's instructions are not emulated yet")
            }
            _ => Ok(None),
        }
    }

    /// Reductions and scans over the virtual subgroup.
    fn arithmetic(&self, code: &mut Code, inst: &Instruction) -> Result<Option<Id>, LowerError> {
        let op = inst.class.opcode;
        let rtype = inst.result_type.unwrap_or(0);
        let refuse = |why: &str| Err(refuse_inst(self.target, inst, self.n, why));
        let Some(Operand::GroupOperation(g)) = inst.operands.get(1) else {
            return refuse("a missing group operation");
        };
        let (scope, value) = match (inst.operands.first(), inst.operands.get(2)) {
            (Some(s), Some(v @ Operand::IdRef(_))) => (s.clone(), v.clone()),
            _ => return refuse("a missing operand"),
        };
        match g {
            GroupOperation::Reduce => {
                code.em.need(Capability::GroupNonUniformClustered);
                let n = code.em.u32(self.n);
                Ok(Some(code.emit(
                    op,
                    rtype,
                    vec![
                        scope,
                        Operand::GroupOperation(GroupOperation::ClusteredReduce),
                        value,
                        Operand::IdRef(n),
                    ],
                )))
            }
            GroupOperation::InclusiveScan | GroupOperation::ExclusiveScan => {
                let lane = self.lane(code);
                let t = code.em.constant(Ty::BOOL, 1);
                let act = self.ballot(code, t, lane);
                let ballot = self.up(code, act, lane);
                code.em.need(Capability::GroupNonUniformPartitionedEXT);
                code.em.exts.insert("SPV_NV_shader_subgroup_partitioned");
                let g = if *g == GroupOperation::InclusiveScan {
                    GroupOperation::PartitionedInclusiveScanEXT
                } else {
                    GroupOperation::PartitionedExclusiveScanEXT
                };
                Ok(Some(code.emit(
                    op,
                    rtype,
                    vec![
                        scope,
                        Operand::GroupOperation(g),
                        value,
                        Operand::IdRef(ballot),
                    ],
                )))
            }
            GroupOperation::ClusteredReduce => {
                let c = match inst.operands.get(3) {
                    Some(Operand::IdRef(c)) => self.constants.get(c).copied(),
                    _ => None,
                };
                match c {
                    Some(c) if c <= self.n => Ok(None),
                    _ => refuse(
                        "a clustered reduce whose cluster size is not a constant of at most N",
                    ),
                }
            }
            GroupOperation::PartitionedReduceEXT
            | GroupOperation::PartitionedInclusiveScanEXT
            | GroupOperation::PartitionedExclusiveScanEXT => {
                let b = match inst.operands.get(3) {
                    Some(Operand::IdRef(b)) => *b,
                    _ => return refuse("a missing ballot operand"),
                };
                let lane = self.lane(code);
                let hw = self.up(code, b, lane);
                let mut operands = inst.operands.clone();
                operands[3] = Operand::IdRef(hw);
                Ok(Some(code.emit(op, rtype, operands)))
            }
        }
    }
}

/// Whether the built-in `b` observes the subgroup size (its reads are rewritten).
fn observes(b: BuiltIn) -> bool {
    matches!(
        b,
        BuiltIn::SubgroupSize
            | BuiltIn::SubgroupLocalInvocationId
            | BuiltIn::SubgroupId
            | BuiltIn::NumSubgroups
            | BuiltIn::SubgroupEqMask
            | BuiltIn::SubgroupGeMask
            | BuiltIn::SubgroupGtMask
            | BuiltIn::SubgroupLeMask
            | BuiltIn::SubgroupLtMask
    )
}

/// Whether a read of the built-in `b` is refused (no virtual value is defined for it).
fn refused_builtin(b: BuiltIn) -> bool {
    matches!(b, BuiltIn::SubgroupMaxSize | BuiltIn::NumEnqueuedSubgroups)
}

/// Whether `inst` is one of `SPV_AMD_shader_ballot`'s extended instructions.
fn is_amd_ballot(inst: &Instruction, code: &Code) -> bool {
    matches!(inst.operands.first(), Some(Operand::IdRef(set)) if Some(*set) == code.em.amd_ballot)
}
