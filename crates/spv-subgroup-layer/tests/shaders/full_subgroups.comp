#version 450
// A workgroup of 8 invocations, run by `tests/app.rs` with
// VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT and a required subgroup size: valid
// at sizes 4 and 8 (8 is a multiple), and at 4 and 8 emulated on 16 lanes, where the layer must
// take the flag off (8 is no multiple of 16). Host model: `full_subgroups_model`. Same bindings
// as the README example.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require

layout(local_size_x = 8) in;

layout(std430, binding = 0) readonly buffer Keys { uint keys[]; };
layout(std430, binding = 1) writeonly buffer Masks { uvec4 masks[]; };
layout(std430, binding = 2) writeonly buffer Sums { uint sums[]; };
layout(std430, binding = 3) writeonly buffer Flags { uint flags[]; };

void main() {
    uint i = gl_LocalInvocationIndex;
    uvec4 all_lanes = subgroupBallot(true);
    masks[i] = all_lanes;
    sums[i] = subgroupBallotBitCount(all_lanes);
    flags[i] = gl_SubgroupSize | (gl_SubgroupInvocationID << 8) | (gl_SubgroupID << 16)
        | (gl_NumSubgroups << 24);
}
