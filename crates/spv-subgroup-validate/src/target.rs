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
    /// No `OpBitcast` between types of different component counts and no 16-bit float
    /// constants (naga's IR keeps a bitcast's vector size and reads no half constant): the
    /// lowering moves 64-bit values as 64-bit integers (`Int64`) and halves as 16-bit integers
    /// (`Int16`) instead of as 32-bit 2-vectors.
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
}

/// The environments a target's `target_env` may name: what `spirv-val --target-env` (2023.1)
/// accepts, since `lower --verify` and users pass it on to spirv-val.
pub const TARGET_ENVS: &[&str] = &[
    "vulkan1.0",
    "vulkan1.1",
    "vulkan1.1spv1.4",
    "vulkan1.2",
    "vulkan1.3",
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
        "Vulkan 1.1 core subgroup features (basic, vote, arithmetic, ballot, shuffle, shuffle relative, clustered, quad); no KHR vote, no partitioned ops (the default)",
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

impl Default for Target {
    fn default() -> Self {
        Target::preset("vulkan1.1").expect("the default preset exists")
    }
}

impl Target {
    /// A named preset, or `None` if there is no preset of that name.
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
        Some(match name {
            "vulkan1.1" => base,
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

    /// A preset name, else a path to a JSON file in our format or in `vulkaninfo --json` format.
    pub fn load(name_or_path: &str) -> Result<Target, TargetError> {
        if let Some(t) = Target::preset(name_or_path) {
            return Ok(t);
        }
        // Reading a file is IO, which the validator otherwise never does; it is here so that every
        // embedder resolves `--target` the same way. Library users who want no IO call `from_json`.
        match std::fs::read_to_string(name_or_path) {
            Ok(text) => Target::from_any_json(&text),
            Err(_) => Err(TargetError::Unknown {
                name: name_or_path.to_owned(),
                presets: PRESETS.iter().map(|p| p.0).collect::<Vec<_>>().join(", "),
            }),
        }
    }

    /// Our format if the text has a `spirv_version` key, else the vulkaninfo format.
    pub fn from_any_json(text: &str) -> Result<Target, TargetError> {
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
        let t: Target =
            serde_json::from_str(text).map_err(|e| TargetError::Invalid(e.to_string()))?;
        t.check()?;
        Ok(t)
    }

    /// The JSON `vulkaninfo --json` writes (a Vulkan profiles document).
    pub fn from_vulkaninfo_json(text: &str) -> Result<Target, TargetError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| TargetError::Invalid(e.to_string()))?;
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
        let has_op = |bit: &str| {
            op_list
                .iter()
                .any(|v| v.as_str().is_some_and(|s| s.contains(bit)))
        };
        let has_ext = |ext: &str| dev["extensions"].get(ext).is_some();
        let size = subgroup["subgroupSize"].as_u64().unwrap_or(32) as u32;
        let size_control = &props["VkPhysicalDeviceSubgroupSizeControlProperties"];
        let min = size_control["minSubgroupSize"]
            .as_u64()
            .map_or(size, |v| v as u32);
        let max = size_control["maxSubgroupSize"]
            .as_u64()
            .map_or(size, |v| v as u32);
        let api = props
            .pointer("/VkPhysicalDeviceProperties/apiVersion")
            .and_then(|v| v.as_u64())
            .unwrap_or(0) as u32;
        let (major, minor) = (api >> 22 & 0x7f, api >> 12 & 0x3ff);
        let (target_env, spirv_version) = match (major, minor) {
            (1, 0) | (0, _) => ("vulkan1.0", (1, 0)),
            (1, 1) => ("vulkan1.1", (1, 3)),
            (1, 2) => ("vulkan1.2", (1, 5)),
            _ => ("vulkan1.3", (1, 6)),
        };
        let name = props
            .pointer("/VkPhysicalDeviceProperties/deviceName")
            .and_then(|v| v.as_str())
            .unwrap_or("device")
            .to_owned();
        let feature = |structs: &[&str], name: &str| {
            structs.iter().any(|s| {
                dev.pointer(&format!("/features/{s}/{name}"))
                    .and_then(|v| v.as_bool())
                    .unwrap_or(false)
            })
        };
        let rotate_structs = [
            "VkPhysicalDeviceShaderSubgroupRotateFeatures",
            "VkPhysicalDeviceShaderSubgroupRotateFeaturesKHR",
            "VkPhysicalDeviceVulkan14Features",
        ];
        let extended_types = dev
            .pointer("/features/VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures/shaderSubgroupExtendedTypes")
            .or_else(|| dev.pointer("/features/VkPhysicalDeviceVulkan12Features/shaderSubgroupExtendedTypes"))
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        let t = Target {
            name,
            target_env: target_env.to_owned(),
            spirv_version,
            ops: SubgroupOps {
                basic: has_op("BASIC"),
                vote: has_op("VOTE"),
                arithmetic: has_op("ARITHMETIC"),
                ballot: has_op("BALLOT"),
                shuffle: has_op("SHUFFLE_BIT"),
                shuffle_relative: has_op("SHUFFLE_RELATIVE"),
                clustered: has_op("CLUSTERED"),
                quad: has_op("QUAD"),
                partitioned: has_op("PARTITIONED") || has_ext("VK_NV_shader_subgroup_partitioned"),
                khr_vote: has_ext("VK_EXT_shader_subgroup_vote"),
                khr_ballot: has_ext("VK_EXT_shader_subgroup_ballot"),
                rotate: has_op("ROTATE_BIT") || feature(&rotate_structs, "shaderSubgroupRotate"),
                rotate_clustered: has_op("ROTATE_CLUSTERED_BIT")
                    || feature(&rotate_structs, "shaderSubgroupRotateClustered"),
                quad_control: feature(
                    &["VkPhysicalDeviceShaderQuadControlFeaturesKHR"],
                    "shaderQuadControl",
                ),
                groups: has_ext("VK_AMD_shader_ballot"),
            },
            extended_types,
            min_subgroup_size: min.max(1),
            max_subgroup_size: max.max(min).min(128),
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
