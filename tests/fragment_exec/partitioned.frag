#version 450
// subgroupPartitionNV and the partitioned reduce/inclusive/exclusive scans of uint, int and
// float in a fragment shader, at the top and behind a branch on the pixel (there also with the
// ballot made before the branch, whose bits of now inactive lanes the lowering must ignore),
// with a record per pixel for the host model (tests/lower_fragment_exec.rs): marker, lane id,
// ballot(true), an id of the subgroup (the first active lane's coordinates), then the results;
// and a map from lane to coordinates.
// Keys and values come from the pixel's coordinates; float values are multiples of 0.5 so that
// every sum is exact in any order.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_NV_shader_subgroup_partitioned : require
layout(std430, set = 0, binding = 0) buffer Records { uint data[]; };
// Per pixel, the coordinates of every lane of its subgroup (helpers included): the model's map.
layout(std430, set = 0, binding = 1) buffer Lanes { uint lanes[]; };
layout(location = 0) out vec4 color;

const uint STRIDE = 24u;
// The row pitch of both buffers, in pixels (the harness draws at most 64 pixels wide).
const uint ROW = 64u;

void main() {
    uint x = uint(gl_FragCoord.x);
    uint y = uint(gl_FragCoord.y);
    uint base = (y * ROW + x) * STRIDE;
    uint me = x | (y << 16);
    data[base + 0u] = 1u;
    data[base + 1u] = gl_SubgroupInvocationID;
    data[base + 2u] = subgroupBallot(true).x;
    data[base + 3u] = subgroupBroadcastFirst(me);
    // A uniform loop: every lane runs every shuffle; only lanes in the ballot are read back.
    for (uint j = 0u; j < min(gl_SubgroupSize, 32u); j++) {
        lanes[(y * ROW + x) * 32u + j] = subgroupShuffle(me, j);
    }

    uint key = ((x * 7u + y * 13u) >> 1) % 3u;
    uint u = x * 31u + y * 17u + 1u;
    int i = int(x) - 2 * int(y);
    float f = float(x) * 0.5 - float(y);
    // +0.0 and -0.0 must share a subset.
    float fkey = x % 3u == 0u ? 0.0 : (x % 3u == 1u ? -0.0 : 1.5);

    uvec4 p = subgroupPartitionNV(key);
    data[base + 4u] = p.x;
    data[base + 5u] = subgroupPartitionedAddNV(u, p);
    data[base + 6u] = subgroupPartitionedInclusiveAddNV(u, p);
    data[base + 7u] = subgroupPartitionedExclusiveAddNV(u, p);
    data[base + 8u] = subgroupPartitionedInclusiveXorNV(u, p);
    data[base + 9u] = uint(subgroupPartitionedMinNV(i, p));
    data[base + 10u] = uint(subgroupPartitionedInclusiveMaxNV(i, p));
    data[base + 11u] = uint(subgroupPartitionedExclusiveAddNV(i, p));
    data[base + 12u] = floatBitsToUint(subgroupPartitionedAddNV(f, p));
    data[base + 13u] = floatBitsToUint(subgroupPartitionedInclusiveAddNV(f, p));
    data[base + 14u] = floatBitsToUint(subgroupPartitionedExclusiveAddNV(f, p));
    data[base + 15u] = floatBitsToUint(subgroupPartitionedExclusiveMaxNV(f, p));
    uvec4 pf = subgroupPartitionNV(fkey);
    data[base + 16u] = pf.x;
    data[base + 17u] = floatBitsToUint(subgroupPartitionedInclusiveAddNV(f, pf));
    if ((x + 2u * y) % 3u != 0u) {
        data[base + 18u] = 1u;
        data[base + 19u] = subgroupBallot(true).x;
        uvec4 pb = subgroupPartitionNV((x >> 1) & 1u);
        data[base + 20u] = pb.x;
        data[base + 21u] = subgroupPartitionedInclusiveAddNV(u, pb);
        data[base + 22u] = uint(subgroupPartitionedAddNV(i, p));
        data[base + 23u] = floatBitsToUint(subgroupPartitionedExclusiveMinNV(f, p));
    }
    color = vec4(1.0);
}
