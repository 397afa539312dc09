#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_basic : require
// A sum reduction: each invocation sums 16 elements, subgroupAdd, one partial per subgroup in
// shared memory, the first subgroup sums the partials, one atomicAdd per workgroup.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer In { uint inp[]; };
layout(std430, binding = 1) buffer Out { uint total; uint partial[]; };
shared uint partials[256];
void main() {
    uint g = gl_GlobalInvocationID.x;
    uint n = gl_NumWorkGroups.x * 256u;
    uint s = 0u;
    for (uint k = 0u; k < 16u; k++) { s += inp[(g + k * n) % uint(inp.length())]; }
    s = subgroupAdd(s);
    if (subgroupElect()) { partials[gl_SubgroupID] = s; }
    barrier();
    if (gl_SubgroupID == 0u) {
        uint t = 0u;
        for (uint k = gl_SubgroupInvocationID; k < gl_NumSubgroups; k += gl_SubgroupSize) { t += partials[k]; }
        t = subgroupAdd(t);
        if (subgroupElect()) { partial[gl_WorkGroupID.x] = t; atomicAdd(total, t); }
    }
}
