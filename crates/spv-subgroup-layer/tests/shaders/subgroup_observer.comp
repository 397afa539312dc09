#version 450
// What an application written for one subgroup size reads of it: the size built-ins, a ballot,
// a reduction, a scan and a broadcast. `tests/app.rs` runs it through the layer, natively and
// with `SPV_SUBGROUP_LAYER_SUBGROUP_SIZE`, against its host model (`observer_model`). Same
// bindings as the README example (keys, uvec4 masks, sums, flags).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x = 64) in;

layout(std430, binding = 0) readonly buffer Keys { uint keys[]; };
layout(std430, binding = 1) writeonly buffer Masks { uvec4 masks[]; };
layout(std430, binding = 2) writeonly buffer Sums { uint sums[]; };
layout(std430, binding = 3) writeonly buffer Flags { uint flags[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    uint key = keys[i];
    uvec4 big = subgroupBallot(key > 100u);
    masks[i] = uvec4(big.x, big.y, subgroupAdd(key), subgroupBroadcastFirst(key));
    sums[i] = subgroupInclusiveAdd(key);
    flags[i] = gl_SubgroupSize | (gl_SubgroupInvocationID << 8) | (gl_SubgroupID << 16)
        | (gl_NumSubgroups << 24);
}
