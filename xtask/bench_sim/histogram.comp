#version 450
// A 256-bin histogram of bytes: shared-memory atomics per workgroup, then one global atomicAdd
// per non-empty bin.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer In { uint inp[]; };
layout(std430, binding = 1) buffer Out { uint bins[256]; };
shared uint local_bins[256];
void main() {
    uint l = gl_LocalInvocationIndex;
    local_bins[l] = 0u;
    barrier();
    uint w = inp[gl_GlobalInvocationID.x];
    for (uint k = 0u; k < 4u; k++) { atomicAdd(local_bins[(w >> (8u * k)) & 255u], 1u); }
    barrier();
    uint c = local_bins[l];
    if (c != 0u) { atomicAdd(bins[l], c); }
}
