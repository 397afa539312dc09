//! What the layer does with a module's words: decide whether it uses an emulated extension,
//! lower it for the device's real target (`lower_and_verify`, the CLI's and the C interface's
//! verified lowering), and keep the result in a cache by content (in memory, and on disk with
//! `SPV_SUBGROUP_LAYER_CACHE`, `disk_cache.rs`). No `unsafe` here: the Vulkan side hands in
//! words and takes words back. The cache belongs to the device: its entries are made under the
//! device's allocation route (`host_memory.rs`), whatever route the command that lowers them
//! runs under.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use spv_subgroup_lower::{lower_and_verify, LowerOptions};
use spv_subgroup_validate::target::{Restrictions, SubgroupOps, Target};

use crate::disk_cache::{self, DiskCache};
use crate::host_memory::{with_route, Route};
use crate::settings::Settings;

/// `VkSubgroupFeatureFlagBits`, as `supportedOperations` holds them.
pub mod bits {
    /// `VK_SUBGROUP_FEATURE_BASIC_BIT`.
    pub const BASIC: u32 = 0x1;
    /// `VK_SUBGROUP_FEATURE_VOTE_BIT`.
    pub const VOTE: u32 = 0x2;
    /// `VK_SUBGROUP_FEATURE_ARITHMETIC_BIT`.
    pub const ARITHMETIC: u32 = 0x4;
    /// `VK_SUBGROUP_FEATURE_BALLOT_BIT`.
    pub const BALLOT: u32 = 0x8;
    /// `VK_SUBGROUP_FEATURE_SHUFFLE_BIT`.
    pub const SHUFFLE: u32 = 0x10;
    /// `VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT`.
    pub const SHUFFLE_RELATIVE: u32 = 0x20;
    /// `VK_SUBGROUP_FEATURE_CLUSTERED_BIT`.
    pub const CLUSTERED: u32 = 0x40;
    /// `VK_SUBGROUP_FEATURE_QUAD_BIT`.
    pub const QUAD: u32 = 0x80;
    /// `VK_SUBGROUP_FEATURE_PARTITIONED_BIT_NV` (= `_EXT`).
    pub const PARTITIONED: u32 = 0x100;
    /// `VK_SUBGROUP_FEATURE_ROTATE_BIT` (Vulkan 1.4, `_KHR` before).
    pub const ROTATE: u32 = 0x200;
    /// `VK_SUBGROUP_FEATURE_ROTATE_CLUSTERED_BIT`.
    pub const ROTATE_CLUSTERED: u32 = 0x400;
}

/// SPIR-V `OpCapability`.
const OP_CAPABILITY: u32 = 17;
/// `GroupNonUniformPartitionedNV`, which `SPV_EXT_shader_subgroup_partitioned` names
/// `GroupNonUniformPartitionedEXT` (the same number).
const CAP_PARTITIONED: u32 = 5297;
/// `SubgroupVoteKHR`.
const CAP_VOTE_KHR: u32 = 4431;
/// Every capability a module needs to read a subgroup built-in or run a subgroup instruction:
/// `Groups`, `SubgroupDispatch`, `GroupNonUniform` to `GroupNonUniformQuad`,
/// `SubgroupBallotKHR`, `SubgroupVoteKHR`, `QuadControlKHR`, `GroupNonUniformPartitionedNV`,
/// `GroupNonUniformRotateKHR`. A module with none of them cannot observe the subgroup size.
const SUBGROUP_CAPABILITIES: [u32; 15] = [
    18, 58, 61, 62, 63, 64, 65, 66, 67, 68, 4423, 4431, 5087, 5297, 6026,
];

/// Which extensions the layer provides on one device (where the driver lacks them, or all with
/// `SPV_SUBGROUP_LAYER_FORCE=1`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Emulation {
    /// `VK_NV_shader_subgroup_partitioned` and `VK_EXT_shader_subgroup_partitioned`.
    pub partitioned: bool,
    /// `VK_EXT_shader_subgroup_vote`.
    pub vote: bool,
    /// `SPV_SUBGROUP_LAYER_SUBGROUP_SIZE`, where this device accepts it: the size the device
    /// reports and every module is emulated at.
    pub subgroup_size: Option<u32>,
}

impl Emulation {
    /// Whether the layer provides anything on this device.
    pub fn any(self) -> bool {
        self.partitioned || self.vote || self.subgroup_size.is_some()
    }
}

/// What the driver itself reports for one physical device (`vkGetPhysicalDeviceProperties2` and
/// `vkEnumerateDeviceExtensionProperties` below the layer).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceFacts {
    /// `VkPhysicalDeviceProperties::deviceName`.
    pub name: String,
    /// `VkPhysicalDeviceProperties::apiVersion`.
    pub api_version: u32,
    /// `VkPhysicalDeviceSubgroupProperties::supportedOperations`.
    pub supported_operations: u32,
    /// `VkPhysicalDeviceSubgroupProperties::subgroupSize`.
    pub subgroup_size: u32,
    /// `minSubgroupSize`/`maxSubgroupSize` (`subgroupSize` for both without size control).
    pub min_subgroup_size: u32,
    /// See `min_subgroup_size`.
    pub max_subgroup_size: u32,
    /// `shaderSubgroupExtendedTypes`.
    pub extended_types: bool,
    /// The driver has `VK_NV_shader_subgroup_partitioned` or the EXT one.
    pub has_partitioned: bool,
    /// The driver has `VK_EXT_shader_subgroup_vote`.
    pub has_vote: bool,
    /// The driver has `VK_EXT_shader_subgroup_ballot`.
    pub has_ballot: bool,
    /// `requiredSubgroupSizeStages` (`VkShaderStageFlags`; 0 without size control).
    pub required_size_stages: u32,
}

impl DeviceFacts {
    /// What the layer provides on this device.
    pub fn emulation(&self, settings: &Settings) -> Emulation {
        Emulation {
            partitioned: settings.force || !self.has_partitioned,
            vote: settings.force || !self.has_vote,
            subgroup_size: settings
                .subgroup_size
                .filter(|&n| self.can_emulate_size(n).is_ok()),
        }
    }

    /// Whether modules can be emulated at subgroup size `n` on this device: every size the
    /// device runs must be a multiple of `n` (its smallest size is, being a power of two at
    /// least `n`, and so are the larger ones), and the emulation needs core ballots (Vulkan 1.1
    /// and the ballot bit). The error says why not, for the log.
    pub fn can_emulate_size(&self, n: u32) -> Result<(), String> {
        let min = self.min_subgroup_size;
        if !(min.is_power_of_two() && self.max_subgroup_size.is_power_of_two()) {
            return Err(format!(
                "the device `{}` reports subgroup sizes {min} to {} (not powers of two)",
                self.name, self.max_subgroup_size
            ));
        }
        if n > min {
            return Err(format!(
                "the device `{}` runs subgroups of {min} lanes at the least (sizes {min} to {}): \
                 an emulated size must be at most {min}, so that every hardware subgroup holds \
                 whole virtual subgroups",
                self.name, self.max_subgroup_size
            ));
        }
        let version = (
            self.api_version >> 22 & 0x7f,
            self.api_version >> 12 & 0x3ff,
        );
        if version < (1, 1) || self.supported_operations & bits::BALLOT == 0 {
            return Err(format!(
                "the device `{}` lacks core subgroup ballots (Vulkan 1.1, \
                 VK_SUBGROUP_FEATURE_BALLOT_BIT), which the emulation is built on",
                self.name
            ));
        }
        Ok(())
    }

    /// The lowering's target for this device: its real subgroup operations, less what the layer
    /// emulates (so the lowering rewrites exactly that).
    pub fn target(&self, emulation: Emulation) -> Target {
        let (major, minor) = (
            self.api_version >> 22 & 0x7f,
            self.api_version >> 12 & 0x3ff,
        );
        let (env, spirv_version) = match (major, minor) {
            (1, 0) | (0, _) => ("vulkan1.0", (1, 0)),
            (1, 1) => ("vulkan1.1", (1, 3)),
            (1, 2) => ("vulkan1.2", (1, 5)),
            _ => ("vulkan1.3", (1, 6)),
        };
        let has = |bit: u32| self.supported_operations & bit != 0;
        let size_ok = |s: u32| s.is_power_of_two() && s <= 128;
        let (min, max) = if size_ok(self.min_subgroup_size)
            && size_ok(self.max_subgroup_size)
            && self.min_subgroup_size <= self.max_subgroup_size
        {
            (self.min_subgroup_size, self.max_subgroup_size)
        } else {
            (1, 128)
        };
        let basic = has(bits::BASIC);
        // `Target` and `SubgroupOps` grow with the validator (`#[non_exhaustive]`): built from
        // their defaults, every field the device answers for set here.
        let mut ops = SubgroupOps::default();
        ops.basic = basic;
        ops.vote = basic && has(bits::VOTE);
        ops.arithmetic = basic && has(bits::ARITHMETIC);
        ops.ballot = basic && has(bits::BALLOT);
        ops.shuffle = basic && has(bits::SHUFFLE);
        ops.shuffle_relative = basic && has(bits::SHUFFLE_RELATIVE);
        ops.clustered = basic && has(bits::CLUSTERED);
        ops.quad = basic && has(bits::QUAD);
        ops.partitioned =
            !emulation.partitioned && (self.has_partitioned || has(bits::PARTITIONED));
        ops.khr_vote = !emulation.vote && self.has_vote;
        ops.khr_ballot = self.has_ballot;
        ops.rotate = basic && has(bits::ROTATE);
        ops.rotate_clustered = basic && has(bits::ROTATE) && has(bits::ROTATE_CLUSTERED);
        ops.quad_control = false;
        ops.groups = false;
        let mut target = Target::default();
        target.name = self.name.clone();
        target.target_env = env.to_owned();
        target.spirv_version = spirv_version;
        target.ops = ops;
        target.extended_types = self.extended_types;
        target.min_subgroup_size = min;
        target.max_subgroup_size = max;
        target.restrictions = Restrictions::default();
        target
    }

    /// The subgroup size every pipeline of this device runs with, when there is only one.
    pub fn fixed_subgroup_size(&self) -> Option<u32> {
        (self.min_subgroup_size == self.max_subgroup_size && self.subgroup_size.is_power_of_two())
            .then_some(self.subgroup_size)
            .filter(|&s| s == self.min_subgroup_size)
    }
}

/// Whether the module declares a capability of an extension the layer emulates here: only such
/// modules are lowered (others go down untouched, without being parsed).
pub fn uses_emulated(words: &[u32], emulation: Emulation) -> bool {
    let mut at = 5;
    while let Some(&first) = words.get(at) {
        let (count, opcode) = ((first >> 16) as usize, first & 0xffff);
        if opcode != OP_CAPABILITY || count < 2 {
            break;
        }
        match words.get(at + 1) {
            Some(&CAP_PARTITIONED) if emulation.partitioned => return true,
            Some(&CAP_VOTE_KHR) if emulation.vote => return true,
            _ => {}
        }
        at += count;
    }
    false
}

/// Whether the module declares a capability that lets it read a subgroup built-in or run a
/// subgroup instruction (`SUBGROUP_CAPABILITIES`): only such modules can observe the subgroup
/// size, so only they are emulated.
pub fn uses_subgroups(words: &[u32]) -> bool {
    let mut at = 5;
    while let Some(&first) = words.get(at) {
        let (count, opcode) = ((first >> 16) as usize, first & 0xffff);
        if opcode != OP_CAPABILITY || count < 2 {
            break;
        }
        if words
            .get(at + 1)
            .is_some_and(|c| SUBGROUP_CAPABILITIES.contains(c))
        {
            return true;
        }
        at += count;
    }
    false
}

/// A workgroup's x size as a module gives it: a number, or the default of a specialization
/// constant that a pipeline stage's `VkSpecializationInfo` may replace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalSizeX {
    /// The size the module gives (a specialization constant's default value).
    pub value: u32,
    /// The `SpecId` of the specialization constant holding it, if it is one the application
    /// can set.
    pub spec_id: Option<u32>,
}

impl LocalSizeX {
    /// A size no specialization changes.
    pub fn fixed(value: u32) -> LocalSizeX {
        LocalSizeX {
            value,
            spec_id: None,
        }
    }

    /// The size in a stage whose specialization gives `specialized(id)` for the constant of
    /// `SpecId` `id` (`None`: the stage does not set it, and the default holds).
    pub fn resolve(self, specialized: impl FnOnce(u32) -> Option<u32>) -> u32 {
        self.spec_id.and_then(specialized).unwrap_or(self.value)
    }
}

/// The x size of the workgroup of every compute entry point of the module, when the module
/// fixes it (all entry points alike); what
/// `VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT`'s rule is about. The Vulkan
/// specification, `WorkgroupSize`: "If an object is decorated with the WorkgroupSize decoration,
/// this takes precedence over any LocalSize or LocalSizeId execution mode", and "The variable
/// decorated with WorkgroupSize must be a specialization constant or a constant"
/// (`VUID-WorkgroupSize-WorkgroupSize-04426`). So the size is, in that order:
///
/// - the first constituent of the `OpConstantComposite` or `OpSpecConstantComposite` decorated
///   `BuiltIn WorkgroupSize`;
/// - else the `LocalSize` literal, or the constant a `LocalSizeId` names (what glslang writes
///   for every Vulkan 1.3 compute shader).
///
/// A constant is an `OpConstant`, or an `OpSpecConstant`: its literal is the default, which
/// the stage's `VkSpecializationInfo` replaces where it has an entry for the constant's `SpecId`
/// ("constantID is the ID of the specialization constant in SPIR-V"); one without `SpecId` has
/// no external name and keeps its default. Anything else (`OpSpecConstantOp`, entry points of
/// different sizes) leaves the size unknown: `None`.
pub fn local_size_x(words: &[u32]) -> Option<LocalSizeX> {
    const OP_EXECUTION_MODE: u32 = 16;
    const OP_EXECUTION_MODE_ID: u32 = 331;
    const OP_DECORATE: u32 = 71;
    const OP_CONSTANT: u32 = 43;
    const OP_CONSTANT_COMPOSITE: u32 = 44;
    const OP_SPEC_CONSTANT: u32 = 50;
    const OP_SPEC_CONSTANT_COMPOSITE: u32 = 51;
    const OP_FUNCTION: u32 = 54;
    const LOCAL_SIZE: u32 = 17;
    const LOCAL_SIZE_ID: u32 = 38;
    const DECORATION_SPEC_ID: u32 = 1;
    const DECORATION_BUILT_IN: u32 = 11;
    const BUILT_IN_WORKGROUP_SIZE: u32 = 25;
    /// Where an entry point's x size comes from.
    enum Source {
        Literal(u32),
        Id(u32),
    }
    let mut modes = Vec::new();
    let mut builtin = None;
    let mut constants = HashMap::new();
    let mut spec_constants = HashMap::new();
    let mut spec_ids = HashMap::new();
    let mut composites = HashMap::new();
    let mut at = 5;
    while let Some(&first) = words.get(at) {
        let (count, opcode) = ((first >> 16) as usize, first & 0xffff);
        if count == 0 || opcode == OP_FUNCTION {
            break;
        }
        let operands = words.get(at + 1..at + count)?;
        match (opcode, operands) {
            (OP_EXECUTION_MODE, [_, LOCAL_SIZE, x, ..]) => modes.push(Source::Literal(*x)),
            (OP_EXECUTION_MODE_ID, [_, LOCAL_SIZE_ID, x, ..]) => modes.push(Source::Id(*x)),
            (OP_DECORATE, [target, DECORATION_BUILT_IN, BUILT_IN_WORKGROUP_SIZE]) => {
                builtin = Some(*target);
            }
            (OP_DECORATE, [target, DECORATION_SPEC_ID, spec_id]) => {
                spec_ids.insert(*target, *spec_id);
            }
            // One value word: a 32-bit scalar (the sizes' type).
            (OP_CONSTANT, [_, id, value]) => {
                constants.insert(*id, *value);
            }
            (OP_SPEC_CONSTANT, [_, id, value]) => {
                spec_constants.insert(*id, *value);
            }
            (OP_CONSTANT_COMPOSITE | OP_SPEC_CONSTANT_COMPOSITE, [_, id, x, ..]) => {
                composites.insert(*id, *x);
            }
            _ => {}
        }
        at += count;
    }
    let constant = |id: u32| match (constants.get(&id), spec_constants.get(&id)) {
        (Some(&value), _) => Some(LocalSizeX::fixed(value)),
        (None, Some(&value)) => Some(LocalSizeX {
            value,
            spec_id: spec_ids.get(&id).copied(),
        }),
        (None, None) => None,
    };
    if let Some(id) = builtin {
        return constant(*composites.get(&id)?);
    }
    let mut sizes = modes.iter().map(|mode| match mode {
        Source::Literal(x) => Some(LocalSizeX::fixed(*x)),
        Source::Id(id) => constant(*id),
    });
    let x = sizes.next()??;
    sizes.all(|other| other == Some(x)).then_some(x)
}

/// What a stage's `VkPipelineShaderStageRequiredSubgroupSizeCreateInfo` becomes below the layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequiredSize {
    /// Passed down as it is.
    Keep,
    /// Its `requiredSubgroupSize` replaced by this (the driver's smallest size, a multiple of the
    /// emulated one).
    Replace(u32),
    /// Left out (the driver cannot require a size for the stage; it picks one of its sizes,
    /// every one a multiple of the emulated size).
    Remove,
}

/// What became of one module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to lower: the original words go down.
    Unchanged,
    /// The lowered words go down.
    Lowered(Arc<[u32]>),
    /// The lowering refused the module (the message says why); the original words go down.
    Refused(String),
}

/// One device's lowering: its target, its settings and its cache.
#[derive(Debug)]
pub struct Lowerer {
    target: Target,
    emulation: Emulation,
    fixed_size: Option<u32>,
    /// The driver's smallest and largest subgroup sizes and `requiredSubgroupSizeStages`.
    min_size: u32,
    max_size: u32,
    required_size_stages: u32,
    settings: Settings,
    /// The target's fingerprint, part of every cache key.
    target_key: String,
    cache: Mutex<HashMap<u128, Arc<[u32]>>>,
    /// `SPV_SUBGROUP_LAYER_CACHE`'s folder, opened and checked on first use (`disk_cache.rs`).
    disk: DiskCache,
    /// Where the cache's memory comes from: the device's allocation callbacks, if any.
    owner: Option<Route>,
}

impl Lowerer {
    /// The lowering of one device.
    pub fn new(facts: &DeviceFacts, settings: Settings) -> Lowerer {
        let emulation = facts.emulation(&settings);
        let target = facts.target(emulation);
        Lowerer {
            target_key: format!(
                "{}|{target:?}|emulated size {:?}",
                env!("CARGO_PKG_VERSION"),
                emulation.subgroup_size
            ),
            target,
            emulation,
            fixed_size: facts.fixed_subgroup_size(),
            min_size: facts.min_subgroup_size,
            max_size: facts.max_subgroup_size,
            required_size_stages: facts.required_size_stages,
            settings,
            cache: Mutex::new(HashMap::new()),
            disk: DiskCache::default(),
            owner: None,
        }
    }

    /// This lowering with its cache's memory from `owner` (the device's callbacks).
    pub fn with_owner(mut self, owner: Option<Route>) -> Lowerer {
        self.owner = owner;
        self
    }

    /// What the layer emulates on this device.
    pub fn emulation(&self) -> Emulation {
        self.emulation
    }

    /// The settings of the instance this device belongs to.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The target modules are lowered for.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// What becomes of a required subgroup size of `required` for a stage of `stage`
    /// (`VkShaderStageFlagBits`). The application sees a device of one size, the emulated size
    /// N (`minSubgroupSize == maxSubgroupSize == N`), so N is the one size it may require: that
    /// is mapped to the driver's smallest size where the driver can require a size for the stage
    /// (a known hardware size gives the shorter code), else left out. Any other size, and every
    /// size without emulation, goes down as it is.
    pub fn required_size(&self, stage: u32, required: u32) -> RequiredSize {
        match self.emulation.subgroup_size {
            Some(n) if n == required && n != self.min_size => {
                if self.required_size_stages & stage != 0 {
                    RequiredSize::Replace(self.min_size)
                } else {
                    RequiredSize::Remove
                }
            }
            _ => RequiredSize::Keep,
        }
    }

    /// Whether a stage whose workgroup's x size is `local_x` must go down without
    /// `VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT`, running at the hardware
    /// size `hardware` (its required size as it goes down; `None`: any of the driver's). With an
    /// emulated size N the application may ask for full subgroups with an x that is a multiple
    /// of N but not of the hardware's size, which breaks the driver's rule for the flag
    /// (`VUID-VkPipelineShaderStageCreateInfo-pNext-02757`, `-flags-02758`: x a multiple of the
    /// required size, else of `maxSubgroupSize`); without the flag the driver fills the
    /// workgroup's subgroups in order, every virtual subgroup of N lanes full as asked.
    pub fn drops_full_subgroups(&self, local_x: Option<u32>, hardware: Option<u32>) -> bool {
        let (Some(_), Some(x)) = (self.emulation.subgroup_size, local_x) else {
            return false;
        };
        let h = hardware.unwrap_or(self.max_size).max(1);
        !x.is_multiple_of(h)
    }

    /// Lowers `words` for this device, for pipelines of the hardware subgroup size
    /// `required_size` (a `VkPipelineShaderStageRequiredSubgroupSizeCreateInfo`, as it goes to
    /// the driver) or, without one, the device's fixed size if it has one, else any size. With
    /// an emulated size every module that can observe the size is emulated at it.
    pub fn lower(&self, words: &[u32], required_size: Option<u32>) -> Outcome {
        let emulate = self.emulation.subgroup_size;
        let observes_size = emulate.is_some() && uses_subgroups(words);
        if !observes_size && !uses_emulated(words, self.emulation) {
            return Outcome::Unchanged;
        }
        let start = std::time::Instant::now();
        let size = required_size.or(self.fixed_size);
        let key = self.key(words, size);
        let name = format!("{key:032x}");
        if let Some(hit) = self.cache_lookup(key, words, size) {
            self.settings.info(&format!(
                "module {name}: lowered (cached, {:.3} ms)",
                start.elapsed().as_secs_f64() * 1e3
            ));
            return Outcome::Lowered(hit);
        }
        self.dump(&name, "original", words);
        let opts = LowerOptions::new(self.target.clone())
            .with_subgroup_size(size)
            .with_emulated_subgroup_size(emulate);
        match lower_and_verify(words, &opts, None) {
            Ok((out, report)) if report.changed => {
                let rewrites: Vec<String> = report
                    .rewrites
                    .iter()
                    .map(|(what, n)| format!("{n} {what}"))
                    .collect();
                self.settings.info(&format!(
                    "module {name}: lowered for `{}` at subgroup size {}{} in {:.3} ms: {}",
                    self.target.name,
                    size.map_or("any".to_owned(), |s| s.to_string()),
                    emulate.map_or(String::new(), |n| format!(", emulating {n}")),
                    start.elapsed().as_secs_f64() * 1e3,
                    rewrites.join(", ")
                ));
                self.dump(&name, "lowered", &out);
                let out: Arc<[u32]> = with_route(self.owner, || out.as_slice().into());
                self.cache_store(key, words, size, &out);
                Outcome::Lowered(out)
            }
            Ok(_) => Outcome::Unchanged,
            Err(e) => Outcome::Refused(format!(
                "module {name} goes to the driver unchanged: the lowering for `{}` refused it: {e}",
                self.target.name
            )),
        }
    }

    /// A 128-bit content key of the module, the target and the subgroup size.
    fn key(&self, words: &[u32], size: Option<u32>) -> u128 {
        let half = |salt: u8| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            salt.hash(&mut h);
            self.target_key.hash(&mut h);
            size.hash(&mut h);
            words.hash(&mut h);
            h.finish()
        };
        (u128::from(half(1)) << 64) | u128::from(half(2))
    }

    fn cache_lookup(&self, key: u128, words: &[u32], size: Option<u32>) -> Option<Arc<[u32]>> {
        if let Some(hit) = self.lock_cache().get(&key) {
            return Some(hit.clone());
        }
        let folder = self.disk.folder(&self.settings)?;
        let found = match folder.lookup(&self.target_key, size, words) {
            Ok(found) => found?,
            Err(why) => {
                self.disk_error(&format!(
                    "{why}; a miss: the module is lowered again and the entry replaced"
                ));
                return None;
            }
        };
        let words: Arc<[u32]> = with_route(self.owner, || found.as_slice().into());
        with_route(self.owner, || self.lock_cache().insert(key, words.clone()));
        Some(words)
    }

    fn cache_store(&self, key: u128, original: &[u32], size: Option<u32>, words: &Arc<[u32]>) {
        with_route(self.owner, || self.lock_cache().insert(key, words.clone()));
        if let Some(folder) = self.disk.folder(&self.settings) {
            if let Err(e) = folder.store(&self.target_key, size, original, words) {
                self.disk_error(&e);
            }
        }
    }

    fn disk_error(&self, message: &str) {
        if let Some(dir) = &self.settings.cache_dir {
            self.settings
                .error(&format!("the disk cache {}: {message}", dir.display()));
        }
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, HashMap<u128, Arc<[u32]>>> {
        // A panic while the lock was held leaves a map that is still whole (each change is
        // one insert), so a poisoned lock is taken as it is.
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn dump(&self, name: &str, what: &str, words: &[u32]) {
        if let Some(dir) = &self.settings.dump_dir {
            if let Err(e) = disk_cache::dump(dir, &format!("{name}.{what}.spv"), words) {
                self.settings.error(&format!(
                    "cannot write {name}.{what}.spv in {}: {e}",
                    dir.display()
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lavapipe_like() -> DeviceFacts {
        DeviceFacts {
            name: "llvmpipe".into(),
            api_version: (1 << 22) | (3 << 12),
            supported_operations: 0xbf,
            subgroup_size: 8,
            min_subgroup_size: 8,
            max_subgroup_size: 8,
            extended_types: true,
            has_partitioned: false,
            has_vote: true,
            has_ballot: true,
            required_size_stages: 0x20,
        }
    }

    #[test]
    fn the_target_is_the_device_less_what_is_emulated() {
        let facts = lavapipe_like();
        let default = Settings::from_vars(|_| None);
        let e = facts.emulation(&default);
        assert_eq!(
            e,
            Emulation {
                partitioned: true,
                vote: false,
                subgroup_size: None,
            }
        );
        let t = facts.target(e);
        assert!(t.ops.basic && t.ops.vote && t.ops.ballot && t.ops.quad);
        assert!(!t.ops.clustered && !t.ops.partitioned);
        assert!(t.ops.khr_vote && t.ops.khr_ballot);
        assert_eq!(t.target_env, "vulkan1.3");
        assert_eq!((t.min_subgroup_size, t.max_subgroup_size), (8, 8));
        assert_eq!(facts.fixed_subgroup_size(), Some(8));
        let forced = Settings {
            force: true,
            ..default
        };
        let t = facts.target(facts.emulation(&forced));
        assert!(!t.ops.khr_vote && !t.ops.partitioned);
    }

    #[test]
    fn a_device_of_varying_subgroup_size_gets_the_general_code() {
        let varying = DeviceFacts {
            subgroup_size: 32,
            min_subgroup_size: 8,
            max_subgroup_size: 64,
            ..lavapipe_like()
        };
        assert_eq!(varying.fixed_subgroup_size(), None);
        let t = varying.target(Emulation::default());
        assert_eq!((t.min_subgroup_size, t.max_subgroup_size), (8, 64));
        // Sizes no device can have are not trusted: any size.
        let broken = DeviceFacts {
            min_subgroup_size: 3,
            ..varying
        };
        let t = broken.target(Emulation::default());
        assert_eq!((t.min_subgroup_size, t.max_subgroup_size), (1, 128));
    }

    #[test]
    fn only_modules_declaring_an_emulated_capability_are_lowered() {
        let header = [0x0723_0203, 0x0001_0300, 0, 10, 0];
        let cap = |c: u32| [(2 << 16) | OP_CAPABILITY, c];
        let module = |caps: &[u32]| {
            let mut w = header.to_vec();
            for &c in caps {
                w.extend(cap(c));
            }
            // OpMemoryModel Logical GLSL450 ends the capabilities.
            w.extend([(3 << 16) | 14, 0, 1]);
            w
        };
        let both = Emulation {
            partitioned: true,
            vote: true,
            subgroup_size: None,
        };
        assert!(uses_emulated(&module(&[1, CAP_PARTITIONED]), both));
        assert!(uses_emulated(&module(&[1, CAP_VOTE_KHR]), both));
        assert!(!uses_emulated(&module(&[1, 61]), both));
        let vote_only = Emulation {
            partitioned: false,
            vote: true,
            subgroup_size: None,
        };
        assert!(!uses_emulated(&module(&[1, CAP_PARTITIONED]), vote_only));
        // Truncated and empty inputs are simply not ours to lower.
        assert!(!uses_emulated(&[0x0723_0203], both));
        assert!(!uses_emulated(&module(&[1, CAP_PARTITIONED])[..6], both));
    }

    #[test]
    fn an_emulated_size_must_fit_in_the_smallest_hardware_subgroup() {
        let lavapipe = lavapipe_like();
        let with = |n: u32| Settings {
            subgroup_size: Some(n),
            ..Settings::from_vars(|_| None)
        };
        for n in [1, 2, 4, 8] {
            assert_eq!(lavapipe.can_emulate_size(n), Ok(()));
            assert_eq!(lavapipe.emulation(&with(n)).subgroup_size, Some(n));
        }
        let too_big = lavapipe
            .can_emulate_size(16)
            .expect_err("16 lanes on an 8-lane device");
        assert!(too_big.contains("at most 8"), "{too_big}");
        assert_eq!(lavapipe.emulation(&with(16)).subgroup_size, None);
        // A device of sizes 16 to 64 takes 16 and below (each of its sizes is a multiple).
        let varying = DeviceFacts {
            min_subgroup_size: 16,
            max_subgroup_size: 64,
            subgroup_size: 32,
            ..lavapipe_like()
        };
        assert_eq!(varying.can_emulate_size(16), Ok(()));
        assert!(varying.can_emulate_size(32).is_err());
        let odd = DeviceFacts {
            min_subgroup_size: 24,
            ..varying.clone()
        };
        assert!(odd.can_emulate_size(8).is_err());
        let no_ballot = DeviceFacts {
            supported_operations: bits::BASIC | bits::VOTE,
            ..lavapipe_like()
        };
        assert!(no_ballot
            .can_emulate_size(4)
            .unwrap_err()
            .contains("ballot"));
    }

    #[test]
    fn a_required_size_of_the_emulated_size_becomes_the_drivers_smallest() {
        let compute = 0x20;
        let varying = DeviceFacts {
            min_subgroup_size: 16,
            max_subgroup_size: 64,
            subgroup_size: 32,
            required_size_stages: compute,
            ..lavapipe_like()
        };
        let settings = |n: Option<u32>| Settings {
            subgroup_size: n,
            ..Settings::from_vars(|_| None)
        };
        let lowerer = Lowerer::new(&varying, settings(Some(8)));
        assert_eq!(lowerer.required_size(compute, 8), RequiredSize::Replace(16));
        // A stage the driver cannot require a size for: the struct is left out.
        assert_eq!(lowerer.required_size(0x10, 8), RequiredSize::Remove);
        // Another size is invalid for the device the application sees: passed on.
        assert_eq!(lowerer.required_size(compute, 32), RequiredSize::Keep);
        // The driver's own smallest size needs no mapping, nor does anything without emulation.
        let at_min = Lowerer::new(&varying, settings(Some(16)));
        assert_eq!(at_min.required_size(compute, 16), RequiredSize::Keep);
        let native = Lowerer::new(&varying, settings(None));
        assert_eq!(native.required_size(compute, 16), RequiredSize::Keep);
    }

    #[test]
    fn every_subgroup_capability_marks_a_module_that_observes_the_size() {
        let header = [0x0723_0203, 0x0001_0300, 0, 10, 0];
        let module = |caps: &[u32]| {
            let mut w = header.to_vec();
            for &c in caps {
                w.extend([(2 << 16) | OP_CAPABILITY, c]);
            }
            w.extend([(3 << 16) | 14, 0, 1]);
            w
        };
        for cap in SUBGROUP_CAPABILITIES {
            assert!(uses_subgroups(&module(&[1, cap])), "{cap}");
        }
        // Shader, Float64, Int64: no subgroup in sight.
        assert!(!uses_subgroups(&module(&[1, 10, 11])));
        assert!(!uses_subgroups(&[0x0723_0203]));
    }
}

#[cfg(test)]
mod lowering_tests {
    use super::*;
    use spv_subgroup_tests::tools;

    fn example() -> Vec<u32> {
        let path = tools::workspace_root().join("fixtures/examples/partitioned_vote.comp");
        tools::compile_glsl(&path, "vulkan1.1").expect("glslang compiles the example")
    }

    fn facts(ops: u32) -> DeviceFacts {
        DeviceFacts {
            name: "test device".into(),
            api_version: (1 << 22) | (1 << 12),
            supported_operations: ops,
            subgroup_size: 16,
            min_subgroup_size: 16,
            max_subgroup_size: 16,
            ..DeviceFacts::default()
        }
    }

    fn no_settings() -> Settings {
        Settings::from_vars(|_| None)
    }

    #[test]
    fn the_workgroup_x_size_is_read_where_literals_fix_it() {
        let shader = tools::workspace_root()
            .join("crates/spv-subgroup-layer/tests/shaders/full_subgroups.comp");
        let words = tools::compile_glsl(&shader, "vulkan1.1").expect("glslang compiles it");
        assert_eq!(local_size_x(&words), Some(LocalSizeX::fixed(8)));
        assert_eq!(local_size_x(&example()), Some(LocalSizeX::fixed(64)));
        // For Vulkan 1.3 glslang writes `LocalSizeId` naming plain constants.
        let v13 = tools::compile_glsl(&shader, "vulkan1.3").expect("glslang compiles it");
        assert!(tools::disassemble(&v13).contains("OpExecutionModeId"));
        assert_eq!(local_size_x(&v13), Some(LocalSizeX::fixed(8)));
        // glslang's constant WorkgroupSize built-in holds the same 8; a specialization constant
        // composite of plain constants holds it too.
        let text = tools::disassemble(&words);
        assert!(text.contains("BuiltIn WorkgroupSize"), "{text}");
        let specialized = text.replace("OpConstantComposite", "OpSpecConstantComposite");
        let specialized = tools::assemble(&specialized, "vulkan1.1").expect("spirv-as");
        assert_eq!(local_size_x(&specialized), Some(LocalSizeX::fixed(8)));
        // Emulating 4 on 16 lanes: x = 8 breaks the flag's rule at 16, x = 64 does not.
        let facts = DeviceFacts {
            subgroup_size: 16,
            min_subgroup_size: 16,
            max_subgroup_size: 16,
            ..facts(0xbf)
        };
        let settings = Settings {
            subgroup_size: Some(4),
            ..no_settings()
        };
        let lowerer = Lowerer::new(&facts, settings);
        assert!(lowerer.drops_full_subgroups(Some(8), Some(16)));
        assert!(lowerer.drops_full_subgroups(Some(8), None));
        assert!(!lowerer.drops_full_subgroups(Some(64), Some(16)));
        assert!(!lowerer.drops_full_subgroups(None, Some(16)));
        let native = Lowerer::new(&facts, no_settings());
        assert!(!native.drops_full_subgroups(Some(8), Some(16)));
    }

    /// A compute module with `modes` after its entry point, `decorations`, and `constants`
    /// after the types `%uint`, `%v3uint` and `%uint_1`.
    fn sized_module(modes: &str, decorations: &str, constants: &str) -> Vec<u32> {
        let text = format!(
            "OpCapability Shader\nOpMemoryModel Logical GLSL450\n\
             OpEntryPoint GLCompute %main \"main\"\nOpEntryPoint GLCompute %other \"other\"\n\
             {modes}\n{decorations}\n%void = OpTypeVoid\n%fn = OpTypeFunction %void\n\
             %uint = OpTypeInt 32 0\n%v3uint = OpTypeVector %uint 3\n%uint_1 = OpConstant %uint 1\n\
             {constants}\n%main = OpFunction %void None %fn\n%l = OpLabel\nOpReturn\nOpFunctionEnd\n\
             %other = OpFunction %void None %fn\n%l2 = OpLabel\nOpReturn\nOpFunctionEnd\n"
        );
        tools::assemble(&text, "vulkan1.3").expect("spirv-as")
    }

    #[test]
    fn the_workgroup_x_size_is_read_in_every_form_a_module_gives_it() {
        let both = |mode: &str| {
            format!(
                "OpExecutionMode{mode}\nOpExecutionMode{}",
                mode.replace("%main", "%other")
            )
        };
        let both_id = |mode: &str| {
            format!(
                "OpExecutionModeId{mode}\nOpExecutionModeId{}",
                mode.replace("%main", "%other")
            )
        };
        let spec = |default: u32, id: u32| LocalSizeX {
            value: default,
            spec_id: Some(id),
        };
        // LocalSize literals.
        let m = sized_module(&both(" %main LocalSize 16 1 1"), "", "");
        assert_eq!(local_size_x(&m), Some(LocalSizeX::fixed(16)));
        // LocalSizeId: a constant, a specialization constant with and without SpecId.
        let m = sized_module(
            &both_id(" %main LocalSizeId %x %uint_1 %uint_1"),
            "",
            "%x = OpConstant %uint 12",
        );
        assert_eq!(local_size_x(&m), Some(LocalSizeX::fixed(12)));
        let m = sized_module(
            &both_id(" %main LocalSizeId %x %uint_1 %uint_1"),
            "OpDecorate %x SpecId 7",
            "%x = OpSpecConstant %uint 12",
        );
        assert_eq!(local_size_x(&m), Some(spec(12, 7)));
        let m = sized_module(
            &both_id(" %main LocalSizeId %x %uint_1 %uint_1"),
            "",
            "%x = OpSpecConstant %uint 12",
        );
        assert_eq!(
            local_size_x(&m),
            Some(LocalSizeX::fixed(12)),
            "no SpecId: no external name"
        );
        // A computed specialization constant is not evaluated: unknown.
        let m = sized_module(
            &both_id(" %main LocalSizeId %x %uint_1 %uint_1"),
            "",
            "%x = OpSpecConstantOp %uint IAdd %uint_1 %uint_1",
        );
        assert_eq!(local_size_x(&m), None);
        // Entry points of different sizes: unknown; a literal and a constant of one size agree.
        let m = sized_module(
            "OpExecutionMode %main LocalSize 16 1 1\nOpExecutionMode %other LocalSize 32 1 1",
            "",
            "",
        );
        assert_eq!(local_size_x(&m), None);
        let m = sized_module(
            "OpExecutionMode %main LocalSize 12 1 1\nOpExecutionModeId %other LocalSizeId %x %uint_1 %uint_1",
            "",
            "%x = OpConstant %uint 12",
        );
        assert_eq!(local_size_x(&m), Some(LocalSizeX::fixed(12)));
        // The WorkgroupSize built-in takes precedence over the execution modes: a constant
        // composite, a specialization constant composite of a specialization constant.
        let builtin = "OpDecorate %wgs BuiltIn WorkgroupSize";
        let m = sized_module(
            &both(" %main LocalSize 16 1 1"),
            builtin,
            "%x = OpConstant %uint 24\n%wgs = OpConstantComposite %v3uint %x %uint_1 %uint_1",
        );
        assert_eq!(local_size_x(&m), Some(LocalSizeX::fixed(24)));
        let m = sized_module(
            &both_id(" %main LocalSizeId %uint_1 %uint_1 %uint_1"),
            &format!("{builtin}\nOpDecorate %x SpecId 0"),
            "%x = OpSpecConstant %uint 24\n%wgs = OpSpecConstantComposite %v3uint %x %uint_1 %uint_1",
        );
        assert_eq!(local_size_x(&m), Some(spec(24, 0)));
        // A built-in whose x is computed is unknown, whatever the modes say.
        let m = sized_module(
            &both(" %main LocalSize 16 1 1"),
            builtin,
            "%x = OpSpecConstantOp %uint IAdd %uint_1 %uint_1\n\
             %wgs = OpSpecConstantComposite %v3uint %x %uint_1 %uint_1",
        );
        assert_eq!(local_size_x(&m), None);
        // No size at all, and a truncated module.
        assert_eq!(local_size_x(&sized_module("", "", "")), None);
        let m = sized_module(&both(" %main LocalSize 16 1 1"), "", "");
        assert_eq!(local_size_x(&m[..m.len() - 3]), Some(LocalSizeX::fixed(16)));
        assert_eq!(local_size_x(&m[..8]), None);
        // A stage's specialization replaces a SpecId's default, and only that.
        assert_eq!(spec(12, 7).resolve(|id| (id == 7).then_some(4)), 4);
        assert_eq!(spec(12, 7).resolve(|_| None), 12);
        assert_eq!(LocalSizeX::fixed(12).resolve(|_| Some(4)), 12);
    }

    #[test]
    fn a_module_the_lowering_refuses_is_reported_with_the_instruction_and_what_is_missing() {
        // Basic operations only: the partition needs a ballot.
        let out = Lowerer::new(&facts(bits::BASIC), no_settings()).lower(&example(), None);
        let Outcome::Refused(message) = out else {
            panic!("expected a refusal, got {out:?}");
        };
        assert!(
            message.contains("goes to the driver unchanged"),
            "{message}"
        );
        assert!(message.contains("OpGroupNonUniformPartition"), "{message}");
        assert!(message.contains("ballot"), "{message}");
    }

    #[test]
    fn lowered_modules_pass_spirv_val_and_come_from_the_cache_the_second_time() {
        let words = example();
        let lowerer = Lowerer::new(&facts(0xbf), no_settings());
        let Outcome::Lowered(first) = lowerer.lower(&words, None) else {
            panic!("expected a lowering");
        };
        tools::spirv_val(&first, "vulkan1.1").expect("the lowered module is valid");
        let text = tools::disassemble(&first);
        assert!(!text.contains("GroupNonUniformPartitioned"), "{text}");
        assert!(!text.contains("SubgroupVoteKHR"), "{text}");
        let Outcome::Lowered(again) = lowerer.lower(&words, None) else {
            panic!("expected a lowering");
        };
        assert!(
            Arc::ptr_eq(&first, &again),
            "the second lowering is the cached one"
        );
        // Another subgroup size is another entry.
        let Outcome::Lowered(other) = lowerer.lower(&words, Some(4)) else {
            panic!("expected a lowering");
        };
        assert!(!Arc::ptr_eq(&first, &other));
    }

    #[test]
    fn a_driver_with_both_extensions_gets_the_module_untouched_unless_forced() {
        let words = example();
        let native = DeviceFacts {
            has_partitioned: true,
            has_vote: true,
            ..facts(0xbf | bits::PARTITIONED)
        };
        assert_eq!(
            Lowerer::new(&native, no_settings()).lower(&words, None),
            Outcome::Unchanged
        );
        let forced = Settings {
            force: true,
            ..no_settings()
        };
        assert!(matches!(
            Lowerer::new(&native, forced).lower(&words, None),
            Outcome::Lowered(_)
        ));
    }

    #[test]
    fn the_disk_cache_serves_a_new_process_and_the_dump_holds_both_modules() {
        let cache = tempfile::tempdir().expect("a temporary folder");
        let dump = tempfile::tempdir().expect("a temporary folder");
        let settings = Settings {
            cache_dir: Some(cache.path().to_path_buf()),
            dump_dir: Some(dump.path().to_path_buf()),
            ..no_settings()
        };
        let words = example();
        let Outcome::Lowered(first) =
            Lowerer::new(&facts(0xbf), settings.clone()).lower(&words, None)
        else {
            panic!("expected a lowering");
        };
        let files = disk_cache::tests::names;
        let cached = files(cache.path());
        assert_eq!(cached.len(), 2, "{cached:?}");
        assert_eq!(cached[0], disk_cache::KEY_FILE, "{cached:?}");
        let dumped = files(dump.path());
        assert_eq!(dumped.len(), 2, "{dumped:?}");
        assert!(dumped[0].ends_with(".lowered.spv") && dumped[1].ends_with(".original.spv"));
        // A fresh lowerer (an empty memory cache, as in a new process) reads the file and
        // lowers nothing: the dump folder gets no new module.
        std::fs::remove_dir_all(dump.path()).expect("emptying the dump folder");
        let Outcome::Lowered(second) = Lowerer::new(&facts(0xbf), settings).lower(&words, None)
        else {
            panic!("expected a lowering");
        };
        assert_eq!(first, second);
        assert!(!dump.path().exists());
    }
}
