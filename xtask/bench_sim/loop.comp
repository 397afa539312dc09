#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
// The issue-25 kernel: a 64-iteration loop of integer and float arithmetic and subgroupAdd,
// one result per invocation.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer In { uint inp[]; };
layout(std430, binding = 1) buffer Out { uint outp[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint x = inp[i];
    float f = float(x & 1023u);
    for (uint k = 0u; k < 64u; k++) {
        x = x * 1664525u + 1013904223u;
        f = f * 0.5 + float(x >> 24);
        x += subgroupAdd(x >> 8);
    }
    outp[i] = x ^ floatBitsToUint(f);
}
