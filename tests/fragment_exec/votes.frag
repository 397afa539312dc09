#version 450
// The KHR votes (OpSubgroupAnyKHR/AllKHR/AllEqualKHR, through GL_ARB_shader_group_vote) in a
// fragment shader, at the top and behind a branch on the pixel, with a record per pixel for the
// host model (tests/lower_fragment_exec.rs): marker, lane id, ballot(true), and an id of the
// subgroup (the first active lane's coordinates).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_ARB_shader_group_vote : require
layout(constant_id = 0) const uint WIDTH = 1u;
layout(std430, set = 0, binding = 0) buffer Records { uint data[]; };
layout(location = 0) out vec4 color;

const uint STRIDE = 13u;

void main() {
    uint x = uint(gl_FragCoord.x);
    uint y = uint(gl_FragCoord.y);
    uint base = (y * WIDTH + x) * STRIDE;
    data[base + 0u] = 1u;
    data[base + 1u] = gl_SubgroupInvocationID;
    data[base + 2u] = subgroupBallot(true).x;
    data[base + 3u] = subgroupBroadcastFirst(x | (y << 16));
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
