#version 450
// The KHR votes (OpSubgroupAnyKHR/AllKHR/AllEqualKHR, through GL_ARB_shader_group_vote) in a
// fragment shader, at the top and behind a branch on the pixel, with a record per pixel for the
// host model (tests/lower_fragment_exec.rs): marker, lane id, ballot(true), and an id of the
// subgroup (the first active lane's coordinates); and a map from lane to coordinates.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_ARB_shader_group_vote : require
layout(std430, set = 0, binding = 0) buffer Records { uint data[]; };
// Per pixel, the coordinates of every lane of its subgroup (helpers included): the model's map.
layout(std430, set = 0, binding = 1) buffer Lanes { uint lanes[]; };
layout(location = 0) out vec4 color;

const uint STRIDE = 13u;
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
    data[base + 4u] = uint(anyInvocationARB(x % 5u == 0u));
    data[base + 5u] = uint(allInvocationsARB(y % 7u != 3u));
    data[base + 6u] = uint(allInvocationsEqualARB(((x >> 1) & 1u) == 0u));
    data[base + 7u] = uint(allInvocationsEqualARB((x + y) % 4u == 0u));
    if ((x + 2u * y) % 3u != 0u) {
        data[base + 8u] = 1u;
        data[base + 9u] = subgroupBallot(true).x;
        data[base + 10u] = uint(anyInvocationARB((y & 1u) == 1u));
        data[base + 11u] = uint(allInvocationsARB(x % 3u != 0u));
        data[base + 12u] = uint(allInvocationsEqualARB((x & 2u) == 0u));
    }
    color = vec4(1.0);
}
