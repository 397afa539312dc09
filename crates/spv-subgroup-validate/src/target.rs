//! Targets: the subgroup features a device has.
//!
//! A [`Target`] answers "may a module use this op here?" for the validator's target-fit rules
//! and "which sequence may I emit?" for the lowering.
//! Targets come from named presets ([`Target::preset`]), from our own JSON description
//! ([`Target::from_json`], documented in `docs/targets.md`), or from the JSON that
//! `vulkaninfo --json` writes ([`Target::from_vulkaninfo_json`]).
//! [`Target::load`] accepts any of the three spellings, which is what `--target` takes.

use serde::{Deserialize, Serialize};

/// The subgroup features of a device, as far as SPIR-V subgroup code is concerned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Target {
    /// Short name (a preset's name, or the device name of a vulkaninfo report).
    pub name: String,
    /// The `--target-env` spirv-val should check modules for this device with, e.g. `vulkan1.1`.
    #[serde(default = "default_env")]
    pub target_env: String,
    /// Highest SPIR-V version the device consumes, as (major, minor).
    pub spirv_version: (u8, u8),
    /// Which groups of subgroup operations the device runs natively.
    pub ops: SubgroupOps,
    /// Whether subgroup operations accept 8-, 16- and 64-bit operands
    /// (`shaderSubgroupExtendedTypes`; 64-bit also needs the Int64/Float64 capability).
    #[serde(default)]
    pub extended_types: bool,
    /// Smallest subgroup size the device may run with.
    #[serde(default = "one")]
    pub min_subgroup_size: u32,
    /// Largest subgroup size the device may run with (at most 128).
    #[serde(default = "max_size")]
    pub max_subgroup_size: u32,
    /// Restrictions of consumers that accept only part of core SPIR-V (naga's front end).
    #[serde(default)]
    pub restrictions: Restrictions,
}

/// Groups of subgroup operations, one flag per Vulkan `VkSubgroupFeatureFlagBits` or extension.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct SubgroupOps {
    /// `GroupNonUniform` (basic: Elect, the subgroup built-ins).
    pub basic: bool,
    /// `GroupNonUniformVote`: core All/Any/AllEqual.
    pub vote: bool,
    /// `GroupNonUniformArithmetic`: reduce and scans.
    pub arithmetic: bool,
    /// `GroupNonUniformBallot`: Ballot, Broadcast, BroadcastFirst, ballot bit ops, mask built-ins.
    pub ballot: bool,
    /// `GroupNonUniformShuffle`: Shuffle, ShuffleXor.
    pub shuffle: bool,
    /// `GroupNonUniformShuffleRelative`: ShuffleUp, ShuffleDown.
    pub shuffle_relative: bool,
    /// `GroupNonUniformClustered`: clustered reduce.
    pub clustered: bool,
    /// `GroupNonUniformQuad`: quad broadcast and swaps.
    pub quad: bool,
    /// `GroupNonUniformPartitionedNV/EXT` (`VK_NV_shader_subgroup_partitioned`).
    pub partitioned: bool,
    /// `SubgroupVoteKHR` (`VK_EXT_shader_subgroup_vote`).
    pub khr_vote: bool,
    /// `SubgroupBallotKHR` (`VK_EXT_shader_subgroup_ballot`).
    pub khr_ballot: bool,
    /// `GroupNonUniformRotateKHR`: `OpGroupNonUniformRotateKHR` without a `ClusterSize`
    /// (`VK_KHR_shader_subgroup_rotate`'s `shaderSubgroupRotate`, `ROTATE_BIT` in Vulkan 1.4).
    pub rotate: bool,
    /// `OpGroupNonUniformRotateKHR` with a `ClusterSize` (`shaderSubgroupRotateClustered`,
    /// `ROTATE_CLUSTERED_BIT`).
    pub rotate_clustered: bool,
    /// `QuadControlKHR`: `OpGroupNonUniformQuadAllKHR/AnyKHR` (`VK_KHR_shader_quad_control`).
    pub quad_control: bool,
    /// `Groups`: `OpGroupAll/Any/Broadcast`, `OpGroupIAdd`..`OpGroupSMax` and the AMD
    /// non-uniform group ops (`VK_AMD_shader_ballot`, the only way Vulkan exposes `Groups`).
    pub groups: bool,
}

/// What a consumer rejects although core SPIR-V allows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Restrictions {
    /// No `OpGroupNonUniformBallotBitExtract/BitCount/FindLSB/FindMSB`, no `OpGroupNonUniformInverseBallot`.
    pub no_ballot_bit_ops: bool,
    /// No `OpGroupNonUniformElect`.
    pub no_elect: bool,
    /// No shuffles or broadcasts of bool values.
    pub no_bool_shuffle: bool,
    /// No `SubgroupEqMask`..`SubgroupLtMask` built-ins (compute them from the lane id).
    pub no_mask_builtins: bool,
    /// No `OpGroupNonUniformAllEqual` (All and Any only).
    pub no_all_equal: bool,
    /// Inclusive and exclusive scans of `IAdd`/`FAdd`/`IMul`/`FMul` only (reduces of every op).
    pub scans_add_mul_only: bool,
    /// Bitwise group operations on 32-bit or wider values only.
    pub bitwise_32_bit_only: bool,
    /// No `OpBitcast` between types of different component counts (naga's IR keeps a bitcast's
    /// vector size): the lowering moves 64-bit values as 64-bit integers (`Int64`) and halves as
    /// 16-bit integers (`Int16`) instead of as 32-bit 2-vectors. (naga 30 does read 16-bit float
    /// constants, `Literal::F16`: `fixtures/lower/naga/half_constant.spvasm`.)
    pub no_resizing_bitcast: bool,
    /// No `OpGroupNonUniformLogicalAnd/Or/Xor` (naga's validator takes bool operands only in
    /// `All` and `Any`): the lowering computes them from ballots.
    pub no_logical_ops: bool,
    /// The consumer is naga 30: entry points of the vertex, fragment, compute, task and mesh
    /// stages only, and `SubgroupId`/`SubgroupLocalInvocationId` only where the workgroup is
    /// one-dimensional (naga's validator); `lower`'s verification also runs naga's front end,
    /// validator and WGSL writer on the output.
    pub naga_module: bool,
}

fn default_env() -> String {
    "vulkan1.1".to_owned()
}
fn one() -> u32 {
    1
}
fn max_size() -> u32 {
    128
}

/// Why a target description could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// The name is no preset and no readable file.
    #[error("unknown target `{name}` (presets: {presets}); pass a preset name or a JSON file")]
    Unknown {
        /// The name given.
        name: String,
        /// The preset names, comma separated.
        presets: String,
    },
    /// The JSON did not parse as either format.
    #[error("target description is not valid: {0}")]
    Invalid(String),
    /// The file exists (or the path is not simply missing) but could not be read as a target
    /// description: permission denied, a directory, not UTF-8, larger than any description.
    #[error("cannot read target file `{path}`: {reason}")]
    Unreadable {
        /// The path given, its control characters escaped.
        path: String,
        /// What went wrong, e.g. `Permission denied (os error 13)`.
        reason: String,
    },
}

/// The largest target file [`Target::load`] reads: a `vulkaninfo --json` report is about
/// 100 KiB, so anything larger (an endless `/dev/zero`) is no target description.
pub const MAX_TARGET_FILE_BYTES: u64 = 16 << 20;

/// The environments a target's `target_env` may name: what `spirv-val --target-env` accepts,
/// since `lower --verify` and users pass it on to spirv-val. `vulkan1.4` is new in SPIRV-Tools
/// 2024.4 (Debian 12's 2023.1 lacks it; it consumes the same SPIR-V 1.6 as `vulkan1.3`).
pub const TARGET_ENVS: &[&str] = &[
    "vulkan1.0",
    "vulkan1.1",
    "vulkan1.1spv1.4",
    "vulkan1.2",
    "vulkan1.3",
    "vulkan1.4",
    "spv1.0",
    "spv1.1",
    "spv1.2",
    "spv1.3",
    "spv1.4",
    "spv1.5",
    "spv1.6",
    "universal1.0",
    "universal1.1",
    "universal1.2",
    "universal1.3",
    "universal1.4",
    "universal1.5",
    "universal1.6",
    "opencl1.2embedded",
    "opencl1.2",
    "opencl2.0embedded",
    "opencl2.0",
    "opencl2.1embedded",
    "opencl2.1",
    "opencl2.2embedded",
    "opencl2.2",
    "opengl4.0",
    "opengl4.1",
    "opengl4.2",
    "opengl4.3",
    "opengl4.5",
];

/// Vulkan 1.1 core subgroup features without any extension: the default target.
const VULKAN11_OPS: SubgroupOps = SubgroupOps {
    basic: true,
    vote: true,
    arithmetic: true,
    ballot: true,
    shuffle: true,
    shuffle_relative: true,
    clustered: true,
    quad: true,
    partitioned: false,
    khr_vote: false,
    khr_ballot: false,
    rotate: false,
    rotate_clustered: false,
    quad_control: false,
    groups: false,
};

/// The preset names, in the order `spv-subgroup targets` lists them.
pub const PRESETS: &[(&str, &str)] = &[
    (
        "vulkan1.1",
        "Vulkan 1.1 core subgroup features (basic, vote, arithmetic, ballot, shuffle, shuffle relative, clustered, quad); no KHR vote, no partitioned ops; consumes SPIR-V up to 1.3",
    ),
    (
        "vulkan1.2",
        "Vulkan 1.2: the vulkan1.1 features plus subgroup extended types (required by Vulkan 1.2); consumes SPIR-V up to 1.5",
    ),
    (
        "vulkan1.3",
        "Vulkan 1.3: the vulkan1.2 features (subgroup size control is required, the operations are unchanged); consumes SPIR-V up to 1.6",
    ),
    (
        "vulkan1.4",
        "Vulkan 1.4: the vulkan1.3 features plus subgroup rotate, clustered rotate included (required by Vulkan 1.4); consumes SPIR-V up to 1.6",
    ),
    (
        "lavapipe",
        "Mesa's lavapipe (22.3): core subgroups without clustered, KHR vote and ballot, extended types, subgroup size 4-16, no partitioned ops",
    ),
    (
        "nvidia",
        "An NVIDIA GPU (driver 580): every core subgroup feature, partitioned ops, KHR vote and ballot, subgroup size 32",
    ),
    (
        "khr-ballot",
        "A SPIR-V 1.0 (Vulkan 1.0) device with only SPV_KHR_shader_ballot: no core subgroup ops at all",
    ),
    (
        "naga",
        "What naga's SPIR-V front end accepts: core vote, arithmetic, ballot, shuffles; no clustered or quad ops, no ballot bit ops, no Elect, no bool shuffles, no mask built-ins",
    ),
];

/// `text` without a leading UTF-8 byte order mark (editors on Windows write one).
fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// A vulkaninfo number that must fit 32 bits (`None` when absent): a larger value or one that
/// is no number is refused, never truncated or ignored.
fn vulkaninfo_u32(v: &serde_json::Value, what: &str) -> Result<Option<u32>, TargetError> {
    match v {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::Number(n) => match n.as_u64().map(u32::try_from) {
            Some(Ok(x)) => Ok(Some(x)),
            _ => Err(TargetError::Invalid(format!(
                "`{what}` is {n}, which is no 32-bit unsigned number"
            ))),
        },
        other => Err(TargetError::Invalid(format!(
            "`{what}` must be a number, got {other}"
        ))),
    }
}

/// `VkPhysicalDeviceProperties.apiVersion`: the packed number vulkaninfo writes, or a
/// `"1.3"`/`"1.3.250"` string as Vulkan profiles write versions; absent means Vulkan 1.0.
fn vulkaninfo_api_version(v: &serde_json::Value) -> Result<u32, TargetError> {
    if let serde_json::Value::String(s) = v {
        let parts: Vec<Option<u32>> = s.split('.').map(|p| p.parse().ok()).collect();
        return match parts[..] {
            [Some(major), Some(minor)] | [Some(major), Some(minor), Some(_)]
                if major <= 0x7f && minor <= 0x3ff =>
            {
                Ok(major << 22 | minor << 12)
            }
            _ => Err(TargetError::Invalid(format!(
                "`apiVersion` {v} is neither a number nor a version like \"1.3.250\""
            ))),
        };
    }
    Ok(vulkaninfo_u32(v, "apiVersion")?.unwrap_or(0))
}

impl Default for Target {
    fn default() -> Self {
        Target::preset("vulkan1.1").expect("the default preset exists")
    }
}

/// The Vulkan environments with a preset, lowest first, and the newest SPIR-V version each
/// consumes (the Vulkan spec's "Versions" appendix: 1.1 takes SPIR-V 1.0 to 1.3, 1.2 takes 1.5,
/// 1.3 and 1.4 take 1.6).
const VULKAN_VERSIONS: &[(&str, (u8, u8))] = &[
    ("vulkan1.1", (1, 3)),
    ("vulkan1.2", (1, 5)),
    ("vulkan1.3", (1, 6)),
    ("vulkan1.4", (1, 6)),
];

/// The newest SPIR-V version an environment (as `--target-env` names it) consumes, or `None`
/// for a name that is no environment and for the OpenCL environments.
pub fn env_spirv_version(env: &str) -> Option<(u8, u8)> {
    if let Some(v) = env.strip_prefix("spv") {
        let (maj, min) = v.split_once('.')?;
        return Some((maj.parse().ok()?, min.parse().ok()?));
    }
    if let Some(v) = env.strip_prefix("universal") {
        let (maj, min) = v.split_once('.')?;
        return Some((maj.parse().ok()?, min.parse().ok()?));
    }
    Some(match env {
        "vulkan1.0" | "opengl4.0" | "opengl4.1" | "opengl4.2" | "opengl4.3" | "opengl4.5" => (1, 0),
        "vulkan1.1" => (1, 3),
        "vulkan1.1spv1.4" => (1, 4),
        "vulkan1.2" => (1, 5),
        "vulkan1.3" | "vulkan1.4" => (1, 6),
        // OpenCL environments are for kernels, which nothing here lowers.
        _ => return None,
    })
}

impl Target {
    /// A named preset, or `None` if there is no preset of that name ([`PRESETS`] lists them).
    ///
    /// ```
    /// use spv_subgroup_validate::target::{Target, PRESETS};
    ///
    /// let lavapipe = Target::preset("lavapipe").unwrap();
    /// assert!(lavapipe.ops.khr_vote && !lavapipe.ops.partitioned);
    /// assert_eq!((lavapipe.min_subgroup_size, lavapipe.max_subgroup_size), (4, 16));
    /// // Every listed preset exists; an unknown name is `None`.
    /// assert!(PRESETS.iter().all(|(name, _)| Target::preset(name).is_some()));
    /// assert!(Target::preset("no-such-gpu").is_none());
    /// ```
    pub fn preset(name: &str) -> Option<Target> {
        let base = Target {
            name: name.to_owned(),
            target_env: default_env(),
            spirv_version: (1, 3),
            ops: VULKAN11_OPS,
            extended_types: false,
            min_subgroup_size: 1,
            max_subgroup_size: 128,
            restrictions: Restrictions::default(),
        };
        // Vulkan 1.2 requires `shaderSubgroupExtendedTypes`, 1.4 `shaderSubgroupRotate` and
        // `shaderSubgroupRotateClustered` (the Vulkan spec, "Feature Requirements"); 1.3 adds
        // `subgroupSizeControl` and `computeFullSubgroups`, which change no operation.
        let vulkan12 = Target {
            target_env: "vulkan1.2".to_owned(),
            spirv_version: (1, 5),
            extended_types: true,
            ..base.clone()
        };
        Some(match name {
            "vulkan1.1" => base,
            "vulkan1.2" => vulkan12,
            "vulkan1.3" => Target {
                target_env: "vulkan1.3".to_owned(),
                spirv_version: (1, 6),
                ..vulkan12
            },
            "vulkan1.4" => Target {
                target_env: "vulkan1.4".to_owned(),
                spirv_version: (1, 6),
                ops: SubgroupOps {
                    rotate: true,
                    rotate_clustered: true,
                    ..VULKAN11_OPS
                },
                ..vulkan12
            },
            "lavapipe" => Target {
                spirv_version: (1, 6),
                target_env: "vulkan1.3".to_owned(),
                ops: SubgroupOps {
                    clustered: false,
                    khr_vote: true,
                    khr_ballot: true,
                    ..VULKAN11_OPS
                },
                extended_types: true,
                min_subgroup_size: 4,
                max_subgroup_size: 16,
                ..base
            },
            "nvidia" => Target {
                spirv_version: (1, 6),
                target_env: "vulkan1.3".to_owned(),
                // Driver 580 is a Vulkan 1.4 driver: `shaderSubgroupRotate(Clustered)` are
                // core and required there, and it exposes `VK_KHR_shader_quad_control`.
                ops: SubgroupOps {
                    partitioned: true,
                    khr_vote: true,
                    khr_ballot: true,
                    rotate: true,
                    rotate_clustered: true,
                    quad_control: true,
                    ..VULKAN11_OPS
                },
                extended_types: true,
                min_subgroup_size: 32,
                max_subgroup_size: 32,
                ..base
            },
            "khr-ballot" => Target {
                spirv_version: (1, 0),
                target_env: "vulkan1.0".to_owned(),
                ops: SubgroupOps {
                    khr_ballot: true,
                    ..SubgroupOps::default()
                },
                max_subgroup_size: 64,
                ..base
            },
            "naga" => Target {
                // naga 30's front end refuses the `GroupNonUniformQuad` and
                // `GroupNonUniformClustered` capabilities (its SUPPORTED_CAPABILITIES list),
                // though its IR has quad ops.
                ops: SubgroupOps {
                    clustered: false,
                    quad: false,
                    ..VULKAN11_OPS
                },
                restrictions: Restrictions {
                    no_ballot_bit_ops: true,
                    no_elect: true,
                    no_bool_shuffle: true,
                    no_mask_builtins: true,
                    no_all_equal: true,
                    scans_add_mul_only: true,
                    bitwise_32_bit_only: true,
                    no_resizing_bitcast: true,
                    no_logical_ops: true,
                    naga_module: true,
                },
                ..base
            },
            _ => return None,
        })
    }

    /// The target `lower` uses when none is named: Vulkan 1.1's core subgroup features in the
    /// lowest Vulkan environment that consumes a module of SPIR-V `version` (1.0 to 1.3:
    /// `vulkan1.1`, 1.4 and 1.5: `vulkan1.2`, 1.6: `vulkan1.3`), so that no module is refused
    /// for its version alone. A version past every environment keeps the newest one (and is
    /// then refused for its version, as it should be).
    pub fn default_for_version(version: (u8, u8)) -> Target {
        let (env, spirv_version) = VULKAN_VERSIONS
            .iter()
            .find(|(_, max)| version <= *max)
            .copied()
            .unwrap_or(VULKAN_VERSIONS[VULKAN_VERSIONS.len() - 1]);
        Target {
            target_env: env.to_owned(),
            spirv_version,
            ..Target::default()
        }
    }

    /// [`Target::default_for_version`] of the version in a module's header (word 1); `None` for
    /// words too short to hold one.
    pub fn default_for_module(words: &[u32]) -> Option<Target> {
        let [_, major, minor, _] = words.get(1)?.to_be_bytes();
        Some(Target::default_for_version((major, minor)))
    }

    /// This target in the environment `env` (spirv-opt's `--target-env`): the environment
    /// spirv-val checks with, and the newest SPIR-V version it consumes.
    pub fn with_env(mut self, env: &str) -> Result<Target, TargetError> {
        let version = env_spirv_version(env)
            .filter(|_| TARGET_ENVS.contains(&env))
            .ok_or_else(|| {
                TargetError::Invalid(format!(
                    "unknown environment `{}`; expected one of: {}",
                    env.escape_debug(),
                    TARGET_ENVS
                        .iter()
                        .filter(|e| env_spirv_version(e).is_some())
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
        self.target_env = env.to_owned();
        self.spirv_version = version;
        Ok(self)
    }

    /// A preset name, else a path to a JSON file in our format or in `vulkaninfo --json` format.
    pub fn load(name_or_path: &str) -> Result<Target, TargetError> {
        if let Some(t) = Target::preset(name_or_path) {
            return Ok(t);
        }
        // Reading a file is IO, which the validator otherwise never does; it is here so that every
        // embedder resolves `--target` the same way. Library users who want no IO call `from_json`.
        // Only a path that does not exist is an unknown name; any other failure says what failed.
        let unreadable = |reason: String| TargetError::Unreadable {
            path: crate::escape_controls(name_or_path).into_owned(),
            reason,
        };
        let file = match std::fs::File::open(name_or_path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(TargetError::Unknown {
                    name: crate::escape_controls(name_or_path).into_owned(),
                    presets: PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", "),
                })
            }
            Err(e) => return Err(unreadable(e.to_string())),
        };
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(
            &mut std::io::Read::take(file, MAX_TARGET_FILE_BYTES + 1),
            &mut bytes,
        )
        .map_err(|e| unreadable(e.to_string()))?;
        if bytes.len() as u64 > MAX_TARGET_FILE_BYTES {
            return Err(unreadable(format!(
                "it is larger than {} MiB, which no target description is",
                MAX_TARGET_FILE_BYTES >> 20
            )));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            unreadable(format!(
                "it is not UTF-8 text (byte {} is not)",
                e.utf8_error().valid_up_to()
            ))
        })?;
        Target::from_any_json(&text)
    }

    /// Our format if the text has a `spirv_version` key, else the vulkaninfo format.
    /// A leading UTF-8 byte order mark is accepted (and ignored) in both.
    pub fn from_any_json(text: &str) -> Result<Target, TargetError> {
        let text = without_bom(text);
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| TargetError::Invalid(e.to_string()))?;
        if value.get("spirv_version").is_some() {
            Target::from_json(text)
        } else {
            Target::from_vulkaninfo_value(&value)
        }
    }

    /// Our own format: this struct serialized with serde (see `docs/targets.md`).
    pub fn from_json(text: &str) -> Result<Target, TargetError> {
        let t: Target = serde_json::from_str(without_bom(text))
            .map_err(|e| TargetError::Invalid(e.to_string()))?;
        t.check()?;
        Ok(t)
    }

    /// The JSON `vulkaninfo --json` writes (a Vulkan profiles document).
    pub fn from_vulkaninfo_json(text: &str) -> Result<Target, TargetError> {
        let value: serde_json::Value = serde_json::from_str(without_bom(text))
            .map_err(|e| TargetError::Invalid(e.to_string()))?;
        Target::from_vulkaninfo_value(&value)
    }

    fn from_vulkaninfo_value(value: &serde_json::Value) -> Result<Target, TargetError> {
        let dev = value.pointer("/capabilities/device").ok_or_else(|| {
            TargetError::Invalid(
                "no `capabilities.device` object: not a `vulkaninfo --json` report".into(),
            )
        })?;
        let props = &dev["properties"];
        let subgroup = props
            .get("VkPhysicalDeviceSubgroupProperties")
            .or_else(|| props.get("VkPhysicalDeviceVulkan11Properties"))
            .ok_or_else(|| TargetError::Invalid("no subgroup properties in the report".into()))?;
        let op_list = subgroup
            .get("supportedOperations")
            .or_else(|| subgroup.get("subgroupSupportedOperations"))
            .and_then(|v| v.as_array())
            .ok_or_else(|| {
                TargetError::Invalid("no `supportedOperations` in the subgroup properties".into())
            })?;
        // Operations by their exact names (`ROTATE_CLUSTERED_BIT` must not count as `CLUSTERED`);
        // names we do not know (bits of later Vulkan versions) are ignored.
        let mut ops_named = Vec::with_capacity(op_list.len());
        for v in op_list {
            let Some(name) = v.as_str() else {
                return Err(TargetError::Invalid(format!(
                    "`supportedOperations` holds {v}, which is not a `VK_SUBGROUP_FEATURE_*_BIT` name"
                )));
            };
            ops_named.push(name);
        }
        let has_op = |bits: &[&str]| {
            bits.iter().any(|bit| {
                ops_named
                    .iter()
                    .any(|n| n.strip_prefix("VK_SUBGROUP_FEATURE_") == Some(*bit))
            })
        };
        let has_ext = |ext: &str| dev["extensions"].get(ext).is_some();
        let size = vulkaninfo_u32(&subgroup["subgroupSize"], "subgroupSize")?.unwrap_or(32);
        let size_control = &props["VkPhysicalDeviceSubgroupSizeControlProperties"];
        let min =
            vulkaninfo_u32(&size_control["minSubgroupSize"], "minSubgroupSize")?.unwrap_or(size);
        let max =
            vulkaninfo_u32(&size_control["maxSubgroupSize"], "maxSubgroupSize")?.unwrap_or(size);
        for (what, n) in [
            ("subgroupSize", size),
            ("minSubgroupSize", min),
            ("maxSubgroupSize", max),
        ] {
            if !(n.is_power_of_two() && n <= 128) {
                return Err(TargetError::Invalid(format!(
                    "`{what}` is {n}: a subgroup size is a power of two from 1 to 128"
                )));
            }
        }
        if min > max {
            return Err(TargetError::Invalid(format!(
                "`minSubgroupSize` {min} is larger than `maxSubgroupSize` {max}"
            )));
        }
        let api = vulkaninfo_api_version(
            props
                .pointer("/VkPhysicalDeviceProperties/apiVersion")
                .unwrap_or(&serde_json::Value::Null),
        )?;
        let (major, minor) = (api >> 22 & 0x7f, api >> 12 & 0x3ff);
        let (target_env, spirv_version) = match (major, minor) {
            (1, 0) | (0, _) => ("vulkan1.0", (1, 0)),
            (1, 1) => ("vulkan1.1", (1, 3)),
            (1, 2) => ("vulkan1.2", (1, 5)),
            _ => ("vulkan1.3", (1, 6)),
        };
        let name = match props.pointer("/VkPhysicalDeviceProperties/deviceName") {
            None | Some(serde_json::Value::Null) => "device".to_owned(),
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(TargetError::Invalid(format!(
                    "`deviceName` must be a string, got {other}"
                )))
            }
        };
        // A feature is on only when it is `true`; a value that is no boolean is refused
        // rather than read as `false`.
        let flag = |path: &str| -> Result<bool, TargetError> {
            match dev.pointer(path) {
                None | Some(serde_json::Value::Null) => Ok(false),
                Some(serde_json::Value::Bool(b)) => Ok(*b),
                Some(other) => Err(TargetError::Invalid(format!(
                    "`{}` must be true or false, got {other}",
                    path.trim_start_matches('/').replace('/', ".")
                ))),
            }
        };
        let feature = |structs: &[&str], name: &str| -> Result<bool, TargetError> {
            let mut on = false;
            for s in structs {
                on |= flag(&format!("/features/{s}/{name}"))?;
            }
            Ok(on)
        };
        let rotate_structs = [
            "VkPhysicalDeviceShaderSubgroupRotateFeatures",
            "VkPhysicalDeviceShaderSubgroupRotateFeaturesKHR",
            "VkPhysicalDeviceVulkan14Features",
        ];
        let extended_types = feature(
            &[
                "VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures",
                "VkPhysicalDeviceVulkan12Features",
            ],
            "shaderSubgroupExtendedTypes",
        )?;
        let t = Target {
            name,
            target_env: target_env.to_owned(),
            spirv_version,
            ops: SubgroupOps {
                basic: has_op(&["BASIC_BIT"]),
                vote: has_op(&["VOTE_BIT"]),
                arithmetic: has_op(&["ARITHMETIC_BIT"]),
                ballot: has_op(&["BALLOT_BIT"]),
                shuffle: has_op(&["SHUFFLE_BIT"]),
                shuffle_relative: has_op(&["SHUFFLE_RELATIVE_BIT"]),
                clustered: has_op(&["CLUSTERED_BIT"]),
                quad: has_op(&["QUAD_BIT"]),
                partitioned: has_op(&["PARTITIONED_BIT_NV", "PARTITIONED_BIT_EXT"])
                    || has_ext("VK_NV_shader_subgroup_partitioned"),
                khr_vote: has_ext("VK_EXT_shader_subgroup_vote"),
                khr_ballot: has_ext("VK_EXT_shader_subgroup_ballot"),
                rotate: has_op(&["ROTATE_BIT", "ROTATE_BIT_KHR"])
                    || feature(&rotate_structs, "shaderSubgroupRotate")?,
                rotate_clustered: has_op(&["ROTATE_CLUSTERED_BIT", "ROTATE_CLUSTERED_BIT_KHR"])
                    || feature(&rotate_structs, "shaderSubgroupRotateClustered")?,
                quad_control: feature(
                    &["VkPhysicalDeviceShaderQuadControlFeaturesKHR"],
                    "shaderQuadControl",
                )?,
                groups: has_ext("VK_AMD_shader_ballot"),
            },
            extended_types,
            min_subgroup_size: min,
            max_subgroup_size: max,
            restrictions: Restrictions::default(),
        };
        t.check()?;
        Ok(t)
    }

    /// Rejects descriptions no device can have (`docs/targets.md`, "What is checked"): an
    /// environment spirv-val does not know, a SPIR-V version that does not exist, core subgroup
    /// groups without `basic` (each of their capabilities implicitly declares `GroupNonUniform`,
    /// so a device cannot have one without it), a clustered rotate without rotate, and impossible
    /// subgroup sizes.
    fn check(&self) -> Result<(), TargetError> {
        if !TARGET_ENVS.contains(&self.target_env.as_str()) {
            return Err(TargetError::Invalid(format!(
                "unknown `target_env` `{}`; expected one of: {}",
                self.target_env.escape_debug(),
                TARGET_ENVS.join(", ")
            )));
        }
        let (major, minor) = self.spirv_version;
        if major != 1 || minor > 6 {
            return Err(TargetError::Invalid(format!(
                "`spirv_version` [{major}, {minor}] is no SPIR-V version; expected [1, 0] to [1, 6]"
            )));
        }
        let o = &self.ops;
        let core = [
            ("vote", o.vote),
            ("arithmetic", o.arithmetic),
            ("ballot", o.ballot),
            ("shuffle", o.shuffle),
            ("shuffle_relative", o.shuffle_relative),
            ("clustered", o.clustered),
            ("quad", o.quad),
            ("rotate", o.rotate),
            ("rotate_clustered", o.rotate_clustered),
        ];
        let without_basic: Vec<&str> = core
            .iter()
            .filter(|(_, on)| *on && !o.basic)
            .map(|(name, _)| *name)
            .collect();
        if !without_basic.is_empty() {
            return Err(TargetError::Invalid(format!(
                "`ops.basic` is false but `ops.{}` {} true: every core subgroup capability implies \
                 `GroupNonUniform` (basic), so set `basic` to true or the others to false",
                without_basic.join("`, `ops."),
                if without_basic.len() == 1 { "is" } else { "are" }
            )));
        }
        if o.rotate_clustered && !o.rotate {
            return Err(TargetError::Invalid(
                "`ops.rotate_clustered` is true but `ops.rotate` is false: a clustered rotate \
                 is an `OpGroupNonUniformRotateKHR`, which needs `rotate`"
                    .into(),
            ));
        }
        let ok_size = |s: u32| s.is_power_of_two() && (1..=128).contains(&s);
        if !ok_size(self.min_subgroup_size) || !ok_size(self.max_subgroup_size) {
            return Err(TargetError::Invalid(format!(
                "subgroup sizes must be powers of two from 1 to 128, got {}..{}",
                self.min_subgroup_size, self.max_subgroup_size
            )));
        }
        if self.min_subgroup_size > self.max_subgroup_size {
            return Err(TargetError::Invalid(
                "min_subgroup_size is larger than max_subgroup_size".into(),
            ));
        }
        Ok(())
    }

    /// The SPIR-V version word (`0x00MMmm00`) of [`Target::spirv_version`].
    pub fn version_word(&self) -> u32 {
        (u32::from(self.spirv_version.0) << 16) | (u32::from(self.spirv_version.1) << 8)
    }

    /// Whether the device accepts a module declaring this capability, as far as subgroup
    /// capabilities go; capabilities this crate does not track are assumed present.
    pub fn has_capability(&self, cap: spirv::Capability) -> bool {
        use spirv::Capability as C;
        let o = &self.ops;
        match cap {
            C::GroupNonUniform => o.basic,
            C::GroupNonUniformVote => o.vote,
            C::GroupNonUniformArithmetic => o.arithmetic,
            C::GroupNonUniformBallot => o.ballot,
            C::GroupNonUniformShuffle => o.shuffle,
            C::GroupNonUniformShuffleRelative => o.shuffle_relative,
            C::GroupNonUniformClustered => o.clustered,
            C::GroupNonUniformQuad => o.quad,
            C::GroupNonUniformPartitionedEXT => o.partitioned,
            C::SubgroupVoteKHR => o.khr_vote,
            C::SubgroupBallotKHR => o.khr_ballot,
            C::GroupNonUniformRotateKHR => o.rotate,
            C::QuadControlKHR => o.quad_control,
            C::Groups => o.groups,
            // SPV_KHR_uniform_group_instructions: no Vulkan extension or version enables it
            // (it is absent from the Vulkan spec's SPIR-V capability table).
            C::GroupUniformArithmeticKHR => false,
            _ => true,
        }
    }

    /// Whether single-word ballots suffice (every subgroup size the device may run is at most 32).
    pub fn max_lanes(&self) -> u32 {
        self.max_subgroup_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid_and_named() {
        for (name, _) in PRESETS {
            let t = Target::preset(name).unwrap();
            t.check().unwrap();
            assert_eq!(&t.name, name);
        }
        assert!(Target::preset("nope").is_none());
    }

    #[test]
    fn own_format_round_trips() {
        for (name, _) in PRESETS {
            let t = Target::preset(name).unwrap();
            let text = serde_json::to_string(&t).unwrap();
            assert_eq!(Target::from_any_json(&text).unwrap(), t);
        }
    }

    #[test]
    fn lavapipe_vulkaninfo_report_matches_the_preset_features() {
        let text = include_str!("../../../fixtures/targets/lavapipe-vulkaninfo.json");
        let t = Target::from_any_json(text).unwrap();
        let preset = Target::preset("lavapipe").unwrap();
        assert_eq!(t.ops, preset.ops);
        assert!(t.extended_types);
        assert_eq!((t.min_subgroup_size, t.max_subgroup_size), (8, 8));
        assert_eq!(t.target_env, "vulkan1.3");
    }

    fn invalid_message(t: &Target) -> String {
        match Target::from_json(&serde_json::to_string(t).unwrap()) {
            Err(TargetError::Invalid(m)) => m,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn unknown_env_and_nonexistent_versions_are_rejected() {
        let bad_env = Target {
            target_env: "vulkan9.9".into(),
            ..Target::default()
        };
        assert!(invalid_message(&bad_env).contains("unknown `target_env` `vulkan9.9`"));
        for v in [(2, 0), (1, 7), (0, 9), (1, 255)] {
            let t = Target {
                spirv_version: v,
                ..Target::default()
            };
            assert!(
                invalid_message(&t).contains("is no SPIR-V version"),
                "{v:?}"
            );
        }
        for v in [(1, 0), (1, 6)] {
            let t = Target {
                spirv_version: v,
                ..Target::default()
            };
            assert!(Target::from_json(&serde_json::to_string(&t).unwrap()).is_ok());
        }
    }

    #[test]
    fn core_groups_without_basic_are_rejected() {
        let mut t = Target::default();
        t.ops.basic = false;
        let m = invalid_message(&t);
        assert!(
            m.contains("`ops.basic` is false but `ops.vote`, `ops.arithmetic`"),
            "{m}"
        );
        // Only extensions (the khr-ballot preset's shape) need no basic.
        t.ops = SubgroupOps {
            khr_ballot: true,
            khr_vote: true,
            partitioned: true,
            ..SubgroupOps::default()
        };
        assert!(Target::from_json(&serde_json::to_string(&t).unwrap()).is_ok());
    }

    /// The lavapipe report with `edit` applied to its JSON.
    fn lavapipe_report_with(edit: impl FnOnce(&mut serde_json::Value)) -> String {
        let text = include_str!("../../../fixtures/targets/lavapipe-vulkaninfo.json");
        let mut value: serde_json::Value = serde_json::from_str(text).unwrap();
        edit(&mut value);
        serde_json::to_string(&value).unwrap()
    }

    fn device(v: &mut serde_json::Value) -> &mut serde_json::Value {
        v.pointer_mut("/capabilities/device").unwrap()
    }

    fn vulkaninfo_invalid(text: &str) -> String {
        match Target::from_any_json(text) {
            Err(TargetError::Invalid(m)) => m,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn vulkaninfo_operations_are_matched_by_exact_name() {
        // N6: `ROTATE_CLUSTERED_BIT` contains `CLUSTERED`; the device has no clustered ops.
        let text = lavapipe_report_with(|v| {
            device(v)["properties"]["VkPhysicalDeviceSubgroupProperties"]["supportedOperations"] =
                serde_json::json!([
                    "VK_SUBGROUP_FEATURE_BASIC_BIT",
                    "VK_SUBGROUP_FEATURE_ARITHMETIC_BIT",
                    "VK_SUBGROUP_FEATURE_ROTATE_BIT_KHR",
                    "VK_SUBGROUP_FEATURE_ROTATE_CLUSTERED_BIT_KHR",
                    "VK_SUBGROUP_FEATURE_SOMETHING_LATER_BIT",
                ]);
        });
        let t = Target::from_any_json(&text).unwrap();
        assert!(
            !t.ops.clustered,
            "ROTATE_CLUSTERED_BIT is not CLUSTERED_BIT"
        );
        assert!(t.ops.rotate && t.ops.rotate_clustered);
        assert!(t.ops.basic && t.ops.arithmetic);
        assert!(!t.ops.vote && !t.ops.ballot && !t.ops.shuffle && !t.ops.shuffle_relative);
        assert!(!t.ops.quad);
        // `SHUFFLE_RELATIVE_BIT` alone is not `SHUFFLE_BIT`, nor the other way round.
        let text = lavapipe_report_with(|v| {
            device(v)["properties"]["VkPhysicalDeviceSubgroupProperties"]["supportedOperations"] =
                serde_json::json!([
                    "VK_SUBGROUP_FEATURE_BASIC_BIT",
                    "VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT",
                    "VK_SUBGROUP_FEATURE_CLUSTERED_BIT",
                ]);
        });
        let t = Target::from_any_json(&text).unwrap();
        assert!(t.ops.shuffle_relative && !t.ops.shuffle);
        assert!(t.ops.clustered && !t.ops.rotate_clustered);
        // An entry that is no name is refused.
        let text = lavapipe_report_with(|v| {
            device(v)["properties"]["VkPhysicalDeviceSubgroupProperties"]["supportedOperations"] =
                serde_json::json!([1, "VK_SUBGROUP_FEATURE_BASIC_BIT"]);
        });
        assert!(vulkaninfo_invalid(&text).contains("`supportedOperations` holds 1"));
    }

    #[test]
    fn vulkaninfo_values_are_never_truncated_or_ignored() {
        fn sizes(v: &mut serde_json::Value) -> &mut serde_json::Value {
            &mut device(v)["properties"]["VkPhysicalDeviceSubgroupSizeControlProperties"]
        }
        // A size above 2^32 was truncated (2^32 + 32 read as 32).
        let text = lavapipe_report_with(|v| sizes(v)["maxSubgroupSize"] = 4_294_967_328u64.into());
        let m = vulkaninfo_invalid(&text);
        assert!(
            m.contains("`maxSubgroupSize` is 4294967328, which is no 32-bit"),
            "{m}"
        );
        let text = lavapipe_report_with(|v| {
            device(v)["properties"]["VkPhysicalDeviceSubgroupProperties"]["subgroupSize"] =
                (1u64 << 33).into()
        });
        assert!(vulkaninfo_invalid(&text).contains("`subgroupSize` is 8589934592"));
        // min > max was silently widened.
        let text = lavapipe_report_with(|v| {
            sizes(v)["minSubgroupSize"] = 64.into();
            sizes(v)["maxSubgroupSize"] = 32.into();
        });
        let m = vulkaninfo_invalid(&text);
        assert!(
            m.contains("`minSubgroupSize` 64 is larger than `maxSubgroupSize` 32"),
            "{m}"
        );
        // A size above 128 was clamped, 0 raised to 1.
        for (field, n) in [("maxSubgroupSize", 256), ("minSubgroupSize", 0)] {
            let text = lavapipe_report_with(|v| sizes(v)[field] = n.into());
            let m = vulkaninfo_invalid(&text);
            assert!(
                m.contains(&format!("`{field}` is {n}: a subgroup size")),
                "{m}"
            );
        }
        // A size as a string was ignored (the default used).
        let text = lavapipe_report_with(|v| sizes(v)["maxSubgroupSize"] = "8".into());
        assert!(vulkaninfo_invalid(&text).contains("`maxSubgroupSize` must be a number, got \"8\""));
        // `"true"` as a string was read as false.
        let text = lavapipe_report_with(|v| {
            device(v)["features"]["VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures"]
                ["shaderSubgroupExtendedTypes"] = "true".into()
        });
        let m = vulkaninfo_invalid(&text);
        assert!(
            m.contains("`features.VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures.shaderSubgroupExtendedTypes` must be true or false, got \"true\""),
            "{m}"
        );
        // `apiVersion` as a string was ignored (Vulkan 1.0): a version string is read, anything
        // else refused.
        let api = |v: &mut serde_json::Value, to: serde_json::Value| {
            device(v)["properties"]["VkPhysicalDeviceProperties"]["apiVersion"] = to
        };
        let t = Target::from_any_json(&lavapipe_report_with(|v| api(v, "1.2.250".into()))).unwrap();
        assert_eq!(
            (t.target_env.as_str(), t.spirv_version),
            ("vulkan1.2", (1, 5))
        );
        let t = Target::from_any_json(&lavapipe_report_with(|v| api(v, "1.1".into()))).unwrap();
        assert_eq!(
            (t.target_env.as_str(), t.spirv_version),
            ("vulkan1.1", (1, 3))
        );
        for bad in ["latest", "1", "1.x.0", ""] {
            let m = vulkaninfo_invalid(&lavapipe_report_with(|v| api(v, bad.into())));
            assert!(m.contains("`apiVersion`"), "{bad}: {m}");
        }
        let m = vulkaninfo_invalid(&lavapipe_report_with(|v| api(v, (1u64 << 40).into())));
        assert!(m.contains("`apiVersion` is 1099511627776"), "{m}");
        let m = vulkaninfo_invalid(&lavapipe_report_with(|v| {
            device(v)["properties"]["VkPhysicalDeviceProperties"]["deviceName"] = 7.into()
        }));
        assert!(m.contains("`deviceName` must be a string"), "{m}");
    }

    #[test]
    fn a_utf8_byte_order_mark_is_accepted_in_both_formats() {
        let report = include_str!("../../../fixtures/targets/lavapipe-vulkaninfo.json");
        let with_bom = format!("\u{feff}{report}");
        assert_eq!(
            Target::from_any_json(&with_bom).unwrap(),
            Target::from_any_json(report).unwrap()
        );
        assert!(Target::from_vulkaninfo_json(&with_bom).is_ok());
        let own = format!(
            "\u{feff}{}",
            serde_json::to_string(&Target::preset("naga").unwrap()).unwrap()
        );
        assert_eq!(
            Target::from_any_json(&own).unwrap(),
            Target::preset("naga").unwrap()
        );
        assert!(Target::from_json(&own).is_ok());
    }

    #[test]
    fn load_says_what_failed_rather_than_unknown_target() {
        let dir = std::env::temp_dir().join(format!("spvsg-target-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let unreadable = |path: &std::path::Path| match Target::load(path.to_str().unwrap()) {
            Err(TargetError::Unreadable { reason, .. }) => reason,
            other => panic!("{}: expected Unreadable, got {other:?}", path.display()),
        };
        // A directory.
        assert!(
            unreadable(&dir).contains("directory"),
            "{}",
            unreadable(&dir)
        );
        // Not UTF-8.
        let latin1 = dir.join("latin1.json");
        std::fs::write(&latin1, b"{\"name\": \"caf\xe9\"}").unwrap();
        let why = unreadable(&latin1);
        assert!(why.contains("not UTF-8 text (byte 13"), "{why}");
        // Endless: /dev/zero is read up to the limit, not for ever.
        let why = unreadable(std::path::Path::new("/dev/zero"));
        assert!(why.contains("larger than 16 MiB"), "{why}");
        // Only a missing path is an unknown name.
        let missing = dir.join("missing.json");
        let m = Target::load(missing.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(m.starts_with("unknown target"), "{m}");
        // A control character in a name is escaped in the message.
        let m = Target::load("no\u{1b}[2Jpe").unwrap_err().to_string();
        assert!(m.contains("no\\u{1b}[2Jpe"), "{m}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_sizes_are_rejected() {
        let t = Target {
            max_subgroup_size: 256,
            ..Target::default()
        };
        let text = serde_json::to_string(&t).unwrap();
        assert!(matches!(
            Target::from_json(&text),
            Err(TargetError::Invalid(_))
        ));
    }
}
