//! Partition rules (SG02xx): `OpGroupNonUniformPartitionNV/EXT`, its capability, extension and
//! SPIR-V version (shared with the partitioned group operations).

use spirv::Capability;

use crate::module::Cx;
use crate::rules::common::{describe, opname, require_capability};
use crate::rules::Rule;
use crate::sink::Sink;

/// Checks `%r = OpGroupNonUniformPartitionNV %type %value`.
pub(crate) fn check(cx: &Cx<'_>, i: usize, out: &mut Sink) {
    let m = &cx.m;
    out.count_partition(i);
    let name = opname(m.opcode(i));
    require_capability(cx, i, &format!("`Op{name}`"), out);
    if let Some(t) = m.word(i, 1) {
        // The extensions fix the shape, not the signedness: "'Result Type' must be a 4 component
        // vector of 32 bit integer types." (GLSL's `uvec4` is what glslang emits, but a signed
        // vector is valid SPIR-V, as SPIRV-Tools accepts it.)
        if m.type_known(t) && !m.is_ballot_type(t, false) {
            out.emit(
                cx,
                Rule::PartitionResultType,
                i,
                format!("`Op{name}`: Result Type must be a vector of four 32-bit integers (e.g. `v4uint`), found {}", describe(cx, t)),
                vec!["\"'Result Type' must be a 4 component vector of 32 bit integer types.\" (SPV_NV/EXT_shader_subgroup_partitioned)".into()],
            );
        }
    }
    if let Some(v) = m.word(i, 3) {
        if let Some(vt) = m.type_of(v) {
            if m.type_known(vt) && m.scalar_or_vector(vt).is_none() {
                out.emit(
                    cx,
                    Rule::PartitionValueType,
                    i,
                    format!("`Op{name}`: Value %{v} must be a scalar or vector of integer, floating-point or Boolean type, found {}", describe(cx, vt)),
                    vec!["\"'Value' must be a scalar or vector type.\" (SPV_NV/EXT_shader_subgroup_partitioned)".into()],
                );
            }
        }
    }
}

/// SG0203: partitioned ops need SPIR-V 1.3.
pub(crate) fn check_module(cx: &Cx<'_>, out: &mut Sink) {
    let m = &cx.m;
    if m.version_pair() >= (1, 3) {
        return;
    }
    let cap = m
        .caps
        .iter()
        .find(|c| c.0 == Capability::GroupNonUniformPartitionedEXT as u32)
        .map(|c| c.1);
    let at = cap.or(out.partition_insts.map(|p| p.0));
    if let Some(at) = at {
        let (maj, min) = m.version_pair();
        let count = out.partition_insts.map_or(0, |p| p.1);
        out.emit(
            cx,
            Rule::PartitionSpirvVersion,
            at,
            format!("partitioned operations need SPIR-V 1.3 or later, but the module is SPIR-V {maj}.{min}"),
            vec![format!("{count} partition instruction(s) in the module; raise the version word of the header to 1.3 (0x00010300)")],
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::{check, shader, Expect, PART};

    #[test]
    fn capability_is_required() {
        let body = "%p = OpGroupNonUniformPartitionNV %v4uint %uint_1";
        check(
            &shader("OpExtension \"SPV_NV_shader_subgroup_partitioned\"", body),
            "spv1.3",
            Expect::Has("SG0201"),
        );
        check(&shader(PART, body), "spv1.3", Expect::Clean);
    }

    #[test]
    fn result_must_be_a_vector_of_four_32_bit_integers() {
        for bad in ["%v2uint", "%uint", "%v4float", "%bool"] {
            let body = format!("%p = OpGroupNonUniformPartitionNV {bad} %uint_1");
            check(&shader(PART, &body), "spv1.3", Expect::Has("SG0204"));
        }
        // Signedness is not fixed by the extensions (SPIRV-Tools accepts a signed vector too).
        for good in ["%v4uint", "%v4int"] {
            let body = format!("%p = OpGroupNonUniformPartitionNV {good} %uint_1");
            check(&shader(PART, &body), "spv1.3", Expect::Lacks(&["SG0204"]));
        }
    }

    #[test]
    fn value_kinds() {
        for good in ["%uint_1", "%int_3", "%float_1", "%true", "%ballot_c"] {
            let body = format!("%p = OpGroupNonUniformPartitionNV %v4uint {good}");
            check(&shader(PART, &body), "spv1.3", Expect::Clean);
        }
        let src = shader(PART, "%p = OpGroupNonUniformPartitionNV %v4uint %a").replace(
            "%main = OpFunction",
            "%a = OpConstantComposite %arr %uint_1 %uint_1\n%main = OpFunction",
        );
        check(&src, "spv1.3", Expect::Has("SG0205"));
    }

    #[test]
    fn needs_spirv_1_3() {
        let body = "%p = OpGroupNonUniformPartitionNV %v4uint %uint_1";
        check(&shader(PART, body), "spv1.0", Expect::Has("SG0203"));
        check(&shader(PART, body), "spv1.2", Expect::Has("SG0203"));
        check(&shader(PART, body), "spv1.3", Expect::Lacks(&["SG0203"]));
    }
}
