//! The rule table, the single source of truth for every rule: code, name, [`Severity`],
//! [`Kind`], one-line doc, the specification sentence it enforces, the Vulkan VUID and the
//! `explain` text ([`Rule`]). The rules' checks live in [`crate::rules`], the reference
//! generated from the table in [`crate::rule_docs`].

use serde::{Deserialize, Serialize};

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The module breaks a rule of a specification ("must"): consumers may reject or miscompile it.
    Error,
    /// The module is legal but very likely wrong or wasteful.
    Warning,
    /// Extra information.
    Note,
}

impl Severity {
    /// The lowercase name, as printed (`error`, `warning`, `note`).
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the specification makes of a module a rule flags: the audit outcome of each rule
/// (issue 13). Only `Invalid` and `Unsupported` rules are errors; undefined behaviour at run time
/// and advice are warnings, so a valid module never fails validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Kind {
    /// The specification (or a Vulkan VUID for the environment) says "must" about the module.
    Invalid,
    /// The module is valid; executing the instruction is undefined behaviour.
    Undefined,
    /// The module is valid and defined, but very likely not what was meant.
    Advice,
    /// Valid SPIR-V that the chosen target's consumer rejects (only with `--target`).
    Unsupported,
}

impl Kind {
    /// The name as docs/rules.md prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Invalid => "invalid",
            Kind::Undefined => "undefined behaviour",
            Kind::Advice => "advice",
            Kind::Unsupported => "unsupported by the target",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Declares every rule once: code, variant, kebab-case name, default severity, kind (what the
/// specification says about such a module: [`Kind`]), one-line doc, the specification sentence the
/// rule enforces (quoted verbatim from the SPIR-V, extension or Vulkan text; never a paraphrase), the
/// Vulkan VUID where Vulkan names one (empty otherwise), and the long `explain` text.
macro_rules! declare_rules {
    ($( $code:literal $variant:ident $name:literal $sev:ident $kind:ident
        doc: $doc:literal
        spec: $spec:literal
        vuid: $vuid:literal
        explain: $explain:literal; )*) => {
        /// A validator rule. Generated from the table below; rules are added in minor versions,
        /// so the enum is `#[non_exhaustive]` (match on [`Rule::code`] or keep a wildcard arm).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum Rule {
            $(
                #[doc = $doc]
                $variant,
            )*
        }

        impl Rule {
            /// Every rule, in code order.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant),*];

            /// The stable code, e.g. `SG0101`.
            pub fn code(self) -> &'static str {
                match self { $(Rule::$variant => $code,)* }
            }

            /// The kebab-case name, e.g. `vote-missing-capability`.
            pub fn name(self) -> &'static str {
                match self { $(Rule::$variant => $name,)* }
            }

            /// The default severity.
            pub fn severity(self) -> Severity {
                match self { $(Rule::$variant => Severity::$sev,)* }
            }

            /// What the specification makes of a module the rule flags.
            pub fn kind(self) -> Kind {
                match self { $(Rule::$variant => Kind::$kind,)* }
            }

            /// One line saying what the rule checks.
            pub fn doc(self) -> &'static str {
                match self { $(Rule::$variant => $doc,)* }
            }

            /// The specification sentence the rule enforces (empty for advice and consumer limits).
            pub fn spec(self) -> &'static str {
                match self { $(Rule::$variant => $spec,)* }
            }

            /// The Vulkan valid-usage ID of the rule, if Vulkan names one.
            pub fn vuid(self) -> Option<&'static str> {
                match self { $(Rule::$variant => Some($vuid).filter(|v| !v.is_empty()),)* }
            }

            /// The long explanation (`spv-subgroup explain CODE`), citing the specification.
            pub fn explain(self) -> &'static str {
                match self { $(Rule::$variant => $explain,)* }
            }
        }
    };
}

declare_rules! {
    "SG0001" UndefinedId "undefined-id" Error Invalid
        doc: "An operand names an id that no instruction defines."
        spec: "Each <id> must appear exactly once as the Result <id> of an instruction."
        vuid: ""
        explain: "SPIR-V 2.16.1, Universal Validation Rules, SSA: \"Each <id> must appear exactly once as the Result <id> \
of an instruction.\" An operand naming an id that no instruction defines breaks it (the id appears zero \
times as a Result <id>); forward references are allowed only where the spec permits them, never to an \
id that is not defined at all. The validator cannot judge an instruction whose operands do not resolve; \
the rules that need the missing definition are skipped for it.";
    "SG0002" NotAType "result-type-not-a-type" Error Invalid
        doc: "A Result Type operand names an id that is not a type."
        spec: "Each opcode specifies its own requirements for number and type of operands, and these must be followed."
        vuid: ""
        explain: "SPIR-V 2.2.1 (Instructions): an instruction holds \"an optional <id> of the instruction's type\", the Result \
Type, and 2.16.1 (Universal Validation Rules, Data rules): \"Each opcode specifies its own requirements for number and type of operands, \
and these must be followed.\" Every \
subgroup instruction's Result Type rule (\"Result Type must be a Boolean type.\" and the like) names a type, \
so the operand must be the id of a type declaration (an OpType* instruction). Rules that compare types skip \
an instruction whose result type does not resolve.";

    "SG0003" OperandNotAValue "operand-not-a-value" Error Invalid
        doc: "An operand of a subgroup instruction names a type, label or function where a value is required."
        spec: "Each opcode specifies its own requirements for number and type of operands, and these must be followed."
        vuid: ""
        explain: "The operands of the vote, partition, non-uniform, barrier and atomic instructions are values: \
the Execution and Memory scopes, Value, Predicate, Id/Delta/Mask, the ballot, ClusterSize, the memory \
semantics, pointers and atomic values must each name an instruction with a Result Type (a constant, a \
computation, a load...). SPIR-V 2.16.1 (Data rules): \"Each opcode specifies its own requirements for number and type of operands, \
and these must be followed.\" Each of these operands is specified by its type (\"Predicate must be a Boolean type.\", \
\"Execution is the scope defining the scope restricted tangle affected by this command.\"), and only an \
object has a type: \"Object: An instantiation of a non-void type, either as the Result <id> of an operation, \
or created through OpVariable.\" (2.2.1). An OpType*, OpLabel, OpFunction, OpString or OpExtInstImport id \
is not one. spirv-val reports these as \"Operand N cannot be a type\" (or a label, a function); the other \
rules skip such an operand, so it is reported once, here.";

    "SG0004" NotABlockLabel "not-a-block-label" Error Invalid
        doc: "A branch target, merge block or OpPhi parent is not the label of a block of the same function."
        spec: "Target Label must be the Result <id> of an OpLabel instruction in the current function."
        vuid: ""
        explain: "SPIR-V, Control-Flow Instructions, OpBranch: \"Target Label must be the Result <id> of an OpLabel instruction in the \
current function.\" OpBranchConditional says the same of its True and False Labels (\"must be an OpLabel in the \
current function\"), and every other operand that names a block does too: OpSwitch's Default and Targets, the \
Merge Block of OpSelectionMerge, the Merge Block and Continue Target of OpLoopMerge, and each Parent of OpPhi (a \
predecessor of the phi's block, so a block of its function). A block is reached only through its label, and \
only within its function: control never passes between functions but by OpFunctionCall. spirv-val reports it as \
\"Block %N is referenced but not defined in function\" or \"... must be the ID of an OpLabel\". A tool that copies \
a function and misses a label (a switch case, a phi parent) writes exactly this; our own lowering's verification \
runs this rule on every output.";

    "SG0005" IdBoundTooLarge "id-bound-too-large" Error Invalid
        doc: "The header's id bound is above SPIR-V's universal limit of 4,194,303."
        spec: "Validators inform when these limits (or explicitly parameterized limits) are crossed."
        vuid: ""
        explain: "SPIR-V 2.17, Universal Limits: \"These quantities are minimum limits for all implementations and \
validators. Implementations are allowed to support larger quantities.\" The table's Result <id> bound is 4,194,303 \
(0x3FFFFF), and \"Validators inform when these limits (or explicitly parameterized limits) are crossed.\" A module \
whose header (word 3) claims a larger bound is past what every consumer must take: spirv-val rejects it by \
default (\"The id bound is larger than the max id bound\"), and a driver may refuse it. `spv-subgroup lower` \
refuses such an input too rather than write an output past the limit. Most such bounds come from a tool that \
numbers ids sparsely; renumbering them densely (`spirv-opt --compact-ids`) brings the bound down.";

    "SG0101" VoteMissingCapability "vote-missing-capability" Error Invalid
        doc: "OpSubgroupAllKHR/AnyKHR/AllEqualKHR used without `OpCapability SubgroupVoteKHR`."
        spec: "The SubgroupVoteKHR capability must be declared in any module where these instructions are used."
        vuid: ""
        explain: "SPV_KHR_subgroup_vote, section 2.21 Subgroup Vote: \"The SubgroupVoteKHR capability \
must be declared in any module where these instructions are used.\" Add `OpCapability SubgroupVoteKHR` \
(and `OpExtension \"SPV_KHR_subgroup_vote\"`), or lower the ops to core vote with `spv-subgroup lower`.";
    "SG0102" VoteMissingExtension "vote-missing-extension" Error Invalid
        doc: "`SubgroupVoteKHR` declared without `OpExtension \"SPV_KHR_subgroup_vote\"`."
        spec: "To use this extension within a SPIR-V module, the following OpExtension must be present in the module"
        vuid: ""
        explain: "SPV_KHR_subgroup_vote, Extension Name: \"To use this extension within a SPIR-V module, \
the following OpExtension must be present in the module: OpExtension \"SPV_KHR_subgroup_vote\"\", and \
Validation Rules: \"An OpExtension must be added to the SPIR-V for validation layers to check legal use \
of this extension\". The capability SubgroupVoteKHR (4431) is enabled only by that extension.";
    "SG0103" VoteResultType "vote-result-type" Error Invalid
        doc: "The result type of a KHR vote op is not a Boolean scalar."
        spec: "Result Type must be a Boolean type."
        vuid: ""
        explain: "SPV_KHR_subgroup_vote, OpSubgroupAllKHR/AnyKHR/AllEqualKHR: \"Result Type must be a \
Boolean type.\" A Boolean type is OpTypeBool; a vector of bool is not accepted (the ops vote one \
predicate per invocation). spirv-val 2023.1 does not check this.";
    "SG0104" VotePredicateType "vote-predicate-type" Error Invalid
        doc: "The predicate of a KHR vote op is not a Boolean scalar."
        spec: "Predicate must be a Boolean type."
        vuid: ""
        explain: "SPV_KHR_subgroup_vote: \"Predicate must be a Boolean type.\" This holds for \
OpSubgroupAllEqualKHR too, unlike the core OpGroupNonUniformAllEqual, whose Value may be any scalar or \
vector. To compare integers or floats across the subgroup use OpGroupNonUniformAllEqual. spirv-val 2023.1 \
does not check this.";

    "SG0201" PartitionMissingCapability "partition-missing-capability" Error Invalid
        doc: "A partition op or a partitioned group operation used without `GroupNonUniformPartitionedNV/EXT`."
        spec: "If an instruction, enumerant, or other feature specifies multiple enabling capabilities, only one such capability needs to be declared to use the feature."
        vuid: ""
        explain: "OpGroupNonUniformPartitionNV/EXT (5296) and the group operations PartitionedReduceNV (6), \
PartitionedInclusiveScanNV (7) and PartitionedExclusiveScanNV (8) list one enabling capability, \
GroupNonUniformPartitionedNV/EXT (5297) (SPV_NV_shader_subgroup_partitioned and \
SPV_EXT_shader_subgroup_partitioned: \"Capability: GroupNonUniformPartitionedNV\" in the instruction's \
table and the capability column of the Group Operation rows). SPIR-V 2.1, Language Capabilities: \
\"Capabilities used by a particular SPIR-V module are declared early in that module with the OpCapability \
instruction.\" and \"If an instruction, enumerant, or other feature specifies multiple enabling capabilities, \
only one such capability needs to be declared to use the feature.\" Declare `OpCapability GroupNonUniformPartitionedNV` with its \
extension, or rewrite the ops for a target without them with `spv-subgroup lower`.";
    "SG0202" PartitionMissingExtension "partition-missing-extension" Error Invalid
        doc: "`GroupNonUniformPartitionedNV/EXT` declared without the NV or EXT partitioned extension."
        spec: "To use this extension within a SPIR-V module, the following OpExtension must be present in the module"
        vuid: ""
        explain: "The capability GroupNonUniformPartitionedNV/EXT (5297) is enabled by \
`OpExtension \"SPV_NV_shader_subgroup_partitioned\"` or `OpExtension \"SPV_EXT_shader_subgroup_partitioned\"` \
(either spelling is accepted). SPV_NV_shader_subgroup_partitioned, Extension Name: \"To use this extension \
within a SPIR-V module, the following OpExtension must be present in the module\"; SPV_EXT_shader_subgroup_partitioned \
accepts either string. \
spirv-val 2023.1 predates the EXT spelling and accepts only the NV string.";
    "SG0203" PartitionSpirvVersion "partition-spirv-version" Error Invalid
        doc: "Partitioned ops in a module whose SPIR-V version is below 1.3."
        spec: "This extension requires SPIR-V 1.3."
        vuid: ""
        explain: "The partition op and the partitioned group operations extend the non-uniform group \
instructions of SPIR-V 1.3 (SPV_NV_shader_subgroup_partitioned, Dependencies: \"This extension requires SPIR-V 1.3.\"); the partitioned \
reduce and scans are OpGroupNonUniform* arithmetic instructions, which exist only from SPIR-V 1.3. \
Raise the module version to 1.3 (Vulkan 1.1). spirv-val 2023.1 does not check this for the partition op.";
    "SG0204" PartitionResultType "partition-result-type" Error Invalid
        doc: "The result type of the partition op is not a 4-component vector of 32-bit integers."
        spec: "'Result Type' must be a 4 component vector of 32 bit integer types."
        vuid: ""
        explain: "OpGroupNonUniformPartitionNV/EXT returns a ballot: \"'Result Type' must be a 4 component vector of 32 bit \
integer types.\" (SPV_NV_shader_subgroup_partitioned and SPV_EXT_shader_subgroup_partitioned, the \
instruction's description). The extensions fix the shape and the width, not the signedness: GLSL's \
`uvec4 subgroupPartitionNV(T value)` compiles to an unsigned vector, but a signed one is valid too (and \
SPIRV-Tools accepts it). spirv-val 2023.1 does not check this.";
    "SG0205" PartitionValueType "partition-value-type" Error Invalid
        doc: "The value of the partition op is not a scalar or vector of integer, float or Boolean type."
        spec: "'Value' must be a scalar or vector type."
        vuid: ""
        explain: "SPV_NV_shader_subgroup_partitioned and SPV_EXT_shader_subgroup_partitioned, \
OpGroupNonUniformPartitionNV/EXT: \"'Value' must be a scalar or vector type.\" A scalar is an integer, \
floating-point or Boolean type (GLSL: `subgroupPartitionNV(T value)` for genType, genIType, genUType, \
genBType, genDType). Structs, arrays, pointers and matrices cannot be partition keys. spirv-val 2023.1 \
does not check this.";

    "SG0301" PartitionedBallotMissing "partitioned-ballot-missing" Error Invalid
        doc: "A partitioned reduce/scan has no ballot operand."
        spec: "If Operation is PartitionedReduceNV, PartitionedInclusiveScanNV, or PartitionedExclusiveScanNV, ballot must be specified."
        vuid: ""
        explain: "SPV_NV_shader_subgroup_partitioned, the modified non-uniform arithmetic instructions: \"If Operation is \
PartitionedReduceNV, PartitionedInclusiveScanNV, or PartitionedExclusiveScanNV, ballot must be specified.\" \
(SPV_EXT_shader_subgroup_partitioned says the same of the EXT names). The ballot is the optional last \
operand, in the slot that holds ClusterSize otherwise (GL_NV_shader_subgroup_partitioned, Mapping to \
SPIR-V: \"When using GroupOperationPartitioned*, the <ballot> parameter is the last operand\"). Without it \
the operation has no partition to work on.";
    "SG0302" PartitionedBallotType "partitioned-ballot-type" Error Invalid
        doc: "The ballot of a partitioned reduce/scan is not a 4-component vector of 32-bit integers."
        spec: "ballot must be a 4 component vector of 32 bit integer types."
        vuid: ""
        explain: "SPV_EXT_shader_subgroup_partitioned, the modified non-uniform arithmetic instructions: \
\"ballot specifies the partition of invocations to use when computing a partitioned operation. ballot must \
be a 4 component vector of 32 bit integer types.\" (the NV extension leaves the sentence out; its GLSL \
functions take a `uvec4 ballot`, the shape OpGroupNonUniformPartitionNV returns). Signedness is not fixed. \
spirv-val 2023.1 checks neither the component count nor the bit width.";
    "SG0303" PartitionedScope "partitioned-scope" Error Invalid
        doc: "The execution scope of a partitioned reduce/scan is not the constant Subgroup."
        spec: "It must be Subgroup."
        vuid: ""
        explain: "The partitioned operations work on \"the active invocations in the subgroup\" \
(GL_NV_shader_subgroup_partitioned), and the SPIR-V 1.6 unified spec says of the Execution operand of the \
non-uniform arithmetic instructions: \"Execution is a Scope that identifies the group of invocations affected \
by this command. It must be Subgroup.\" The operand must be a constant holding Subgroup (3). spirv-val 2023.1 \
follows the older wording (\"Workgroup or Subgroup\") outside a Vulkan environment; a partition ballot is a \
subgroup ballot, so we follow the current one.";
    "SG0304" PartitionedValueType "partitioned-value-type" Error Invalid
        doc: "The value of a partitioned reduce/scan does not have the result's type."
        spec: "The type of Value must be the same as Result Type"
        vuid: ""
        explain: "For the non-uniform arithmetic instructions \"The type of Value must be the same as \
Result Type\" (SPIR-V 3.56.24); partitioned group operations do not change that.";
    "SG0305" PartitionedResultType "partitioned-result-type" Error Invalid
        doc: "The result type of a partitioned reduce/scan does not fit the opcode (int, float or bool)."
        spec: "Result Type must be a scalar or vector of integer type"
        vuid: ""
        explain: "Each non-uniform arithmetic instruction fixes its component type: IAdd/IMul/SMin/UMin/\
SMax/UMax/BitwiseAnd/Or/Xor \"Result Type must be a scalar or vector of integer type\", FAdd/FMul/FMin/FMax \
of floating-point type, LogicalAnd/Or/Xor of Boolean type (SPIR-V 3.56.24; GLSL \
`subgroupPartitioned<op>NV` overloads genType/genIType/genUType/genBType/genDType). UMin and UMax narrow \
it further: \"Result Type must be a scalar or vector of integer type, whose Signedness operand is 0\"; \
a partitioned group operation does not lift that (spirv-val 2023.1 skips these checks for partitioned \
operations).";
    "SG0306" PartitionedOpNotArithmetic "partitioned-op-not-arithmetic" Error Invalid
        doc: "A partitioned group operation (6/7/8) on an instruction other than the 16 arithmetic ops."
        spec: "The Partitioned Group Operations can only be used with the OpGroupNonUniformIAdd, OpGroupNonUniformFAdd, OpGroupNonUniformIMul, OpGroupNonUniformFMul, OpGroupNonUniformFMin, OpGroupNonUniformSMin, OpGroupNonUniformUMin, OpGroupNonUniformFMax, OpGroupNonUniformSMax, OpGroupNonUniformUMax, OpGroupNonUniformBitwiseAnd, OpGroupNonUniformBitwiseOr, OpGroupNonUniformBitwiseXor, OpGroupNonUniformLogicalAnd, OpGroupNonUniformLogicalOr, and OpGroupNonUniformLogicalXor instructions."
        vuid: ""
        explain: "SPV_EXT_shader_subgroup_partitioned, Validation Rules: \"The Partitioned Group Operations can only be used with the OpGroupNonUniformIAdd, OpGroupNonUniformFAdd, OpGroupNonUniformIMul, OpGroupNonUniformFMul, OpGroupNonUniformFMin, \
OpGroupNonUniformSMin, OpGroupNonUniformUMin, OpGroupNonUniformFMax, OpGroupNonUniformSMax, OpGroupNonUniformUMax, OpGroupNonUniformBitwiseAnd, OpGroupNonUniformBitwiseOr, \
OpGroupNonUniformBitwiseXor, OpGroupNonUniformLogicalAnd, OpGroupNonUniformLogicalOr, and OpGroupNonUniformLogicalXor instructions.\" (it holds for the NV \
spelling, which the EXT extension accepts as the same extension; GL_NV_shader_subgroup_partitioned maps only \
subgroupPartitioned{,Inclusive,Exclusive}<op>NV to these group operations). OpGroupNonUniformBallotBitCount \
and the old OpGroup* instructions (Groups capability) take Reduce, InclusiveScan or ExclusiveScan only. \
spirv-val 2023.1 does not check this for every opcode.";

    "SG0401" BallotProvenance "ballot-provenance" Warning Undefined
        doc: "The ballot of a partitioned op does not provably come from a partition op."
        spec: "If the <ballot> parameter to any partitioned subgroup operation is not a valid partition, then the result is undefined."
        vuid: ""
        explain: "GL_NV_shader_subgroup_partitioned: \"The <ballot> parameter to these functions must form \
a valid partition of the active invocations in the subgroup\" and \"If the <ballot> parameter to any \
partitioned subgroup operation is not a valid partition, then the result is undefined.\" A ballot \
computed by OpGroupNonUniformPartitionNV/EXT is valid by construction; this rule follows the ballot back \
through OpLoad/OpStore of the same Function or Private variable (a variable shared between \
invocations, such as Workgroup memory, may hold another invocation's ballot), OpCopyMemory, \
OpCopyObject, OpCopyLogical, OpPhi, OpSelect, function parameters (every call site) and a composite \
rebuilt unchanged from a partition result, and warns when any path ends elsewhere (a constant, \
arithmetic, a core ballot, a partial write through an access chain...). Such a ballot may be valid (the \
spec's own even/odd example is), but nothing proves it: check that each invocation's bit is set and \
that members of a subset hold equal ballots.";

    "SG0501" UnusedCapability "unused-capability" Warning Advice
        doc: "`SubgroupVoteKHR` or `GroupNonUniformPartitionedNV/EXT` declared but no instruction uses it."
        spec: ""
        vuid: ""
        explain: "A declared capability tells the consumer the module needs that device feature; a \
device without it rejects the module (Vulkan: a module must not declare a capability the device does \
not enable). Declaring SubgroupVoteKHR or GroupNonUniformPartitionedNV/EXT without any vote or \
partitioned instruction only narrows the devices the module runs on. Remove the OpCapability.";
    "SG0502" UnusedExtension "unused-extension" Warning Advice
        doc: "A vote or partitioned extension declared but its capability is not."
        spec: ""
        vuid: ""
        explain: "`OpExtension \"SPV_KHR_subgroup_vote\"` or `\"SPV_NV/EXT_shader_subgroup_partitioned\"` \
without the capability it enables does nothing but make the module unusable on consumers that do not \
know the extension. Remove the OpExtension, or declare the capability if the ops are meant to be used.";
    "SG0503" ExtensionNearMiss "extension-near-miss" Warning Advice
        doc: "An unknown extension string that is a near miss of a vote or partitioned extension."
        spec: ""
        vuid: ""
        explain: "Extension strings are compared exactly (SPIR-V 3.2.3: the name of the extension). An \
unknown string within a small edit distance of `SPV_KHR_subgroup_vote`, \
`SPV_NV_shader_subgroup_partitioned` or `SPV_EXT_shader_subgroup_partitioned` is almost certainly a typo, \
and the capability it was meant to enable is then not enabled.";

    "SG0504" MissingCapability "missing-capability" Error Invalid
        doc: "A type width or subgroup instruction used without a capability that enables it (Int16, SubgroupBallotKHR...)."
        spec: "If an instruction, enumerant, or other feature specifies multiple enabling capabilities, only one such capability needs to be declared to use the feature."
        vuid: ""
        explain: "SPIR-V 2.1, Language Capabilities: \"If an instruction, enumerant, or other feature specifies multiple \
enabling capabilities, only one such capability needs to be declared to use the feature.\" One of them must be declared: \
this rule checks what no other rule does. Scalar widths: a 64-bit integer or float type needs `Int64` or `Float64`; an \
8- or 16-bit type needs `Int8`, `Int16` or `Float16`, or one of the storage capabilities of SPV_KHR_8bit_storage and \
SPV_KHR_16bit_storage, which allow far less. SPV_KHR_16bit_storage describes each of them: \"A type that is or contains \
such a 16-bit type can be used only as an operand of an OpTypePointer instruction.\" and \"Other uses of 16-bit types \
are not enabled by this capability.\"; its Validation Rules allow loads, stores, OpCopyObject and \"16-bit scalars or \
16-bit vectors can be used as operands to a width-only conversion instruction to a 32-bit type (OpFConvert, OpSConvert, \
or OpUConvert), and can be produced as results of a width-only conversion instruction from a 32-bit type.\", and end \
\"Any other instructions not explicitly listed by the capabilities or allowed by the validations rules cannot operate \
on variables with 16-bit scalar, 16-bit vector, or 16-bit composite types.\" SPV_KHR_8bit_storage says the same of \
8-bit types (\"Other uses of 8-bit types are not enabled by this capability.\"). So an OpBitcast, arithmetic, a select \
or a subgroup operation on such a value needs `Int8`, `Int16` or `Float16` (spirv-val: \"8- or 16-bit types can only \
be used with width-only conversions\", \"Invalid use of 8- or 16-bit result\"). The AMD extensions \
SPV_AMD_gpu_shader_int16 and SPV_AMD_gpu_shader_half_float enable the 16-bit types too. Subgroup instructions: \
OpSubgroupBallotKHR, OpSubgroupFirstInvocationKHR and OpSubgroupReadInvocationKHR need `SubgroupBallotKHR`; \
OpGroupNonUniformRotateKHR `GroupNonUniformRotateKHR`; the quad votes `QuadControlKHR`; OpGroupAll/Any/Broadcast, \
OpGroupIAdd..OpGroupSMax and AMD's Op*NonUniformAMD `Groups`; OpGroupIMulKHR and the other uniform group instructions \
`GroupUniformArithmeticKHR` (the KHR votes are SG0101's, the partitioned operations SG0201's, the core non-uniform \
operations SG0601's). A lowering that computes with a type the input declared for storage only must declare the \
capability itself; our lowering's verification runs this rule on every output.";

    "SG0601" CoreMissingCapability "core-missing-capability" Error Invalid
        doc: "A core OpGroupNonUniform* instruction used without its capability."
        spec: "If an instruction, enumerant, or other feature specifies multiple enabling capabilities, only one such capability needs to be declared to use the feature."
        vuid: ""
        explain: "Each non-uniform instruction of SPIR-V 1.3 lists its enabling capabilities (SPIR-V 3.3.24), and SPIR-V \
2.1, Language Capabilities, says \"If an instruction, enumerant, or other feature specifies multiple enabling capabilities, \
only one such capability needs to be declared to use the feature.\" Elect needs GroupNonUniform; All/Any/AllEqual \
GroupNonUniformVote; Broadcast/BroadcastFirst/Ballot/InverseBallot/BallotBitExtract/BallotBitCount/\
BallotFindLSB/BallotFindMSB GroupNonUniformBallot; Shuffle/ShuffleXor GroupNonUniformShuffle; \
ShuffleUp/ShuffleDown GroupNonUniformShuffleRelative; arithmetic with Reduce/InclusiveScan/ExclusiveScan \
GroupNonUniformArithmetic, with ClusteredReduce GroupNonUniformClustered; QuadBroadcast/QuadSwap \
GroupNonUniformQuad.";
    "SG0602" CoreScope "core-scope" Error Invalid
        doc: "The execution scope of a core non-uniform instruction is not the constant Subgroup."
        spec: "It must be Subgroup."
        vuid: "VUID-StandaloneSpirv-None-04642"
        explain: "SPIR-V 3.3.24 (unified specification 1.6 revision 6), every non-uniform instruction checked here: \
\"Execution is the scope defining the scope restricted tangle affected by this command. It must be \
Subgroup.\" (the quad instructions: \"Execution is a Scope, but has no effect on the behavior of this \
instruction. It must be Subgroup.\"). The sentence has no version or environment qualifier, so Workgroup \
is reported everywhere, as SPIRV-Tools does since 2023 (earlier spec revisions said \"Workgroup or \
Subgroup\", and spirv-val 2023.1 still accepts Workgroup outside Vulkan). The Vulkan environment states it \
too: \"Scope for group operations must be limited to Subgroup\" (VUID-StandaloneSpirv-None-04642). The \
scope must be an OpConstant of 32-bit integer type (as spirv-val requires of every Scope <id> in a Shader \
module).";
    "SG0603" CoreOperandType "core-operand-type" Error Invalid
        doc: "A core non-uniform instruction's result or operand type does not match the spec."
        spec: "The type of Value must be the same as Result Type"
        vuid: ""
        explain: "SPIR-V 3.56.24 fixes the types of the non-uniform instructions, e.g. Elect/All/Any/\
AllEqual: \"Result Type must be a Boolean type\"; Ballot: result \"a vector of four components of integer \
type scalar, whose Width operand is 32 and whose Signedness operand is 0\", Predicate Boolean; \
Broadcast/BroadcastFirst/Shuffle*: \"The type of Value must be the same as Result Type\", Id/Delta/Mask \
\"must be a scalar of integer type, whose Signedness operand is 0\"; BallotBitCount/FindLSB/FindMSB: \
\"Result Type must be a scalar of integer type, whose Signedness operand is 0\", Value a vector of four \
32-bit integer components; arithmetic: Value has the Result Type, of the opcode's component kind, and for \
UMin/UMax \"a scalar or vector of integer type, whose Signedness operand is 0\". \
Broadcast and QuadBroadcast: \"Before version 1.5, Id must come from a constant instruction.\" QuadSwap: \
Direction must come from a constant instruction. Id, Index and Direction are unsigned integer scalars, \
like Delta and Mask.";
    "SG0604" CoreSpirvVersion "core-spirv-version" Error Invalid
        doc: "Core non-uniform instructions in a module whose SPIR-V version is below 1.3."
        spec: "Missing before version 1.3"
        vuid: ""
        explain: "The OpGroupNonUniform* instructions and their capabilities were added in SPIR-V 1.3 \
(SPIR-V 3.56.24: \"Missing before version 1.3\"). Raise the module version, or lower to a \
`khr-ballot`-style target.";
    "SG0605" CoreGroupOperation "core-group-operation" Error Invalid
        doc: "A group operation that does not fit the instruction (ClusterSize missing, misplaced or not a constant)."
        spec: "If Operation is ClusteredReduce, ClusterSize must be present."
        vuid: ""
        explain: "SPIR-V 3.56.24, the non-uniform arithmetic instructions: \"If Operation is ClusteredReduce, \
ClusterSize must be present.\" and \"ClusterSize must be a scalar of integer type, whose Signedness operand \
is 0. ClusterSize must come from a constant instruction.\" The optional ClusterSize operand is the size of \
the cluster that ClusteredReduce works on; it belongs with ClusteredReduce and no other group operation. \
Its value is not checked here: a ClusterSize of 0 or one that is not a power of 2 is undefined behaviour, \
not an invalid module (SG0606). spirv-val 2023.1 does not check that ClusterSize is present.";
    "SG0606" ClusterSizeUndefined "cluster-size-undefined" Warning Undefined
        doc: "A constant ClusterSize of 0 or one that is not a power of 2 (undefined behaviour)."
        spec: "Behavior is undefined unless ClusterSize is at least 1 and a power of 2."
        vuid: ""
        explain: "SPIR-V 3.56.24, the non-uniform arithmetic instructions: \"Behavior is undefined unless \
ClusterSize is at least 1 and a power of 2.\" The module is valid (spirv-val accepts it, and SPIRV-Tools' own \
tests use ClusterSize 0), but executing the instruction has no defined result. Use a power of 2 \
(1, 2, 4, ... up to the subgroup size).";
    "SG0607" ClusterSizeAboveSubgroup "cluster-size-above-subgroup" Warning Undefined
        doc: "A constant ClusterSize larger than the target's maximum subgroup size (only with `--target`)."
        spec: "If ClusterSize is greater than the size of the group, executing this instruction results in undefined behavior."
        vuid: ""
        explain: "SPIR-V 3.56.24, the non-uniform arithmetic instructions: \"If ClusterSize is greater than \
the size of the group, executing this instruction results in undefined behavior.\" With `--target`, the \
target's maxSubgroupSize (docs/targets.md) bounds the size of every subgroup the device runs, so a larger \
constant ClusterSize is undefined behaviour on every subgroup of that device. Without a target the \
subgroup size is unknown and nothing is reported.";
    "SG0608" BallotBitCountGroupOperation "ballot-bit-count-group-operation" Error Invalid
        doc: "In a Vulkan environment, OpGroupNonUniformBallotBitCount with a group operation other than Reduce/scans."
        spec: "If OpGroupNonUniformBallotBitCount is used, the group operation must be limited to Reduce, InclusiveScan, or ExclusiveScan"
        vuid: "VUID-StandaloneSpirv-OpGroupNonUniformBallotBitCount-04685"
        explain: "The Vulkan spec's standalone SPIR-V rules: \"If OpGroupNonUniformBallotBitCount is used, the group \
operation must be limited to Reduce, InclusiveScan, or ExclusiveScan\" \
(VUID-StandaloneSpirv-OpGroupNonUniformBallotBitCount-04685). Outside Vulkan the core spec has no such \
sentence, so another group operation is not reported there. Partitioned group operations on it are \
reported by SG0306.";
    "SG0609" SubgroupMemoryScope "subgroup-memory-scope" Error Invalid
        doc: "In Vulkan, a Subgroup memory scope without SubgroupVoteKHR, GroupNonUniform or SubgroupBallotKHR."
        spec: "If none of the SubgroupVoteKHR, GroupNonUniform, or SubgroupBallotKHR capabilities are declared, Scope for memory must not be Subgroup"
        vuid: "VUID-StandaloneSpirv-SubgroupVoteKHR-07951"
        explain: "Vulkan spec, standalone SPIR-V validation, VUID-StandaloneSpirv-SubgroupVoteKHR-07951: \
\"If none of the SubgroupVoteKHR, GroupNonUniform, or SubgroupBallotKHR capabilities are declared, Scope \
for memory must not be Subgroup\". This concerns the Memory scope of OpControlBarrier and OpMemoryBarrier \
and of the atomic instructions in a Vulkan environment (any Vulkan version: with SPIR-V 1.0 only the KHR \
capabilities can provide it). Declare one of the three capabilities, or use a wider scope.";

    "SG0610" RayBuiltinVolatile "ray-builtin-volatile" Error Invalid
        doc: "In Vulkan, a subgroup built-in read in a ray-tracing stage without volatile semantics."
        spec: "If the VulkanMemoryModel capability is not declared, the Volatile decoration must be used on any variable declaration that includes one of the SMIDNV, WarpIDNV, SubgroupSize, SubgroupLocalInvocationId, SubgroupEqMask, SubgroupGeMask, SubgroupGtMask, SubgroupLeMask, or SubgroupLtMask BuiltIn decorations when used in the ray generation, closest hit, miss, intersection, or callable shaders"
        vuid: "VUID-StandaloneSpirv-VulkanMemoryModel-04678"
        explain: "Vulkan spec, standalone SPIR-V validation, VUID-StandaloneSpirv-VulkanMemoryModel-04678: \
\"If the VulkanMemoryModel capability is not declared, the Volatile decoration must be used on any variable \
declaration that includes one of the SMIDNV, WarpIDNV, SubgroupSize, SubgroupLocalInvocationId, \
SubgroupEqMask, SubgroupGeMask, SubgroupGtMask, SubgroupLeMask, or SubgroupLtMask BuiltIn decorations when \
used in the ray generation, closest hit, miss, intersection, or callable shaders\"; and 04679: if it is \
declared, \"the OpLoad instruction must use the Volatile memory semantics when it accesses into any variable\" \
of those. A ray-tracing stage may resume on other invocations (after a trace or a callable), so a read \
cached across that point would be stale. A variable counts as used by a stage when the entry point's \
interface lists it (ray tracing needs SPIR-V 1.4, where the interface lists every global a stage uses); a \
load counts when a ray entry point reaches its function. glslang decorates its own such built-ins; \
spirv-val 2023.1 checks neither rule.";

    "SG0611" KhrBallotOperandType "khr-ballot-operand-type" Error Invalid
        doc: "A KHR ballot's Predicate is not a Boolean, or a KHR read's Value is not of its Result Type."
        spec: "Predicate must be a Boolean type."
        vuid: ""
        explain: "SPV_KHR_shader_ballot, OpSubgroupBallotKHR: \"Predicate must be a Boolean type.\"; \
OpSubgroupFirstInvocationKHR and OpSubgroupReadInvocationKHR: \"The type of Value must be the same as Result \
Type.\" A ballot of an integer counts nothing meaningful, and a read of another type has no defined result. \
spirv-val 2023.1 checks neither. `spv-subgroup lower` refuses such an input (exit 1) rather than rewrite it into \
a core instruction that breaks the same rule in another form.";

    "SG0701" TargetMissingFeature "target-missing-feature" Error Invalid
        doc: "An instruction or capability the chosen target does not support."
        spec: "If pCode is a pointer to SPIR-V code, and pCode declares any of the capabilities listed in the SPIR-V Environment appendix, one of the corresponding requirements must be satisfied"
        vuid: "VUID-VkShaderModuleCreateInfo-pCode-08740"
        explain: "Vulkan, vkCreateShaderModule: \"If pCode is a pointer to SPIR-V code, and pCode declares any of the \
capabilities listed in the SPIR-V Environment appendix, one of the corresponding requirements must be \
satisfied\" (VUID-VkShaderModuleCreateInfo-pCode-08740); the appendix lists, per capability, the feature or \
extension that must be enabled for it. The target (`--target`) lists the subgroup features of the device \
(docs/targets.md); every instruction and capability beyond them is reported. Vote and partitioned \
operations (and their group operations) can be rewritten with `spv-subgroup lower --target ...` into \
operations the target has.";
    "SG0702" TargetSpirvVersion "target-spirv-version" Error Invalid
        doc: "The module's SPIR-V version is above the highest the target or `--target-env` consumes."
        spec: "A Vulkan 1.1 implementation must support the 1.0, 1.1, 1.2, and 1.3 versions of SPIR-V and the 1.0 version of the SPIR-V Extended Instructions for GLSL."
        vuid: ""
        explain: "The Vulkan spec, SPIR-V environment, Versions and Formats, says which SPIR-V versions an \
implementation of each Vulkan version must accept: \"A Vulkan 1.1 implementation must support the 1.0, 1.1, \
1.2, and 1.3 versions of SPIR-V and the 1.0 version of the SPIR-V Extended Instructions for GLSL.\" (1.0: \
SPIR-V 1.0; 1.2: up to 1.5; 1.3: up to 1.6). No sentence speaks of the module itself: the rule is that \
sentence read from the other side, since a device need not accept a module of a later version, and \
spirv-val's --target-env applies the same limit. The same limit is checked for an explicit `--target-env`, \
with or without a target. `spv-subgroup lower` rewrites the ops that forced the version up where it can; \
otherwise recompile for the older environment.";
    "SG0703" TargetExtendedTypes "target-extended-types" Error Invalid
        doc: "A subgroup operation on 8-, 16- or 64-bit values on a target without extended types."
        spec: "shaderSubgroupExtendedTypes must be enabled for group operations to use 8-bit integer, 16-bit integer, 64-bit integer, 16-bit floating-point, and vectors of these types"
        vuid: "VUID-RuntimeSpirv-None-06275"
        explain: "Vulkan, runtime SPIR-V validation: \"shaderSubgroupExtendedTypes must be enabled for group operations to \
use 8-bit integer, 16-bit integer, 64-bit integer, 16-bit floating-point, and vectors of these types\" \
(VUID-RuntimeSpirv-None-06275). A target without extended types reports every subgroup operation on such \
values. Convert the value to 32 bits around the operation, or let `spv-subgroup lower` split it.";
    "SG0704" TargetRestriction "target-restriction" Error Unsupported
        doc: "A construct the target's consumer rejects although core SPIR-V allows it (e.g. naga)."
        spec: ""
        vuid: ""
        explain: "Some consumers accept only part of core SPIR-V: naga's SPIR-V front end has no ballot bit \
operations (BallotBitExtract/BitCount/FindLSB/FindMSB/InverseBallot), no OpGroupNonUniformElect, no \
OpGroupNonUniformAllEqual, no shuffles or broadcasts of bool values, no SubgroupEq/Ge/Gt/Le/LtMask \
built-ins, inclusive and exclusive scans of Add and Mul only, bitwise group operations on 32-bit \
values only, and no LogicalAnd/Or/Xor (its validator takes bool operands only in All and Any); \
its WGSL writer cannot write out OpIsNan and OpIsInf. `spv-subgroup lower` rewrites all of these. What the input brings that naga refuses and no \
lowering rewrites is reported too: an entry point of a stage naga's front end does not read \
(geometry, tessellation, ray tracing), SubgroupId or SubgroupLocalInvocationId in an entry point \
whose LocalSize has more than one dimension or a stage where naga's validator does not give it \
(SubgroupSize in a vertex shader), and what naga 30 refuses before it reads any code: a capability, \
extension, extended instruction set or execution mode outside its lists (LocalSizeId, \
StorageImageWriteWithoutFormat, DrawParameters, NonSemantic.DebugPrintf, ...), any other instruction \
outside a function (OpSpecConstantOp, OpLine, OpDecorateString, ...), and a composite constant of \
specialization constants that has no SpecId itself (glslang's gl_WorkGroupSize under local_size_x_id; \
naga's validator: \"Initializer must be a const-expression\"). An OpBitcast that changes the component \
count is left to naga (it takes some). `spv-subgroup lower --target naga` refuses such an input, and also runs \
naga's front end, validator and WGSL writer on its output, reporting naga's refusal under this \
rule. The target's `restrictions` (docs/targets.md) list them.";
}

impl Rule {
    /// The rule with this code (`SG0101`) or kebab-case name, if any.
    pub fn from_code(code: &str) -> Option<Rule> {
        Rule::ALL
            .iter()
            .copied()
            .find(|r| r.code().eq_ignore_ascii_case(code) || r.name() == code)
    }

    /// The family this rule belongs to, from its code range.
    pub fn family(self) -> &'static str {
        match &self.code()[2..4] {
            "00" => "module",
            "01" => "vote",
            "02" => "partition",
            "03" => "partitioned arithmetic",
            "04" => "provenance",
            "05" => "capabilities and extensions",
            "06" => "core subgroup operations",
            _ => "target fit",
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

impl serde::Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}
