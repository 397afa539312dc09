#version 450
// Triangles from gl_VertexIndex alone (no vertex buffers), in clip space.
// Vertices 0 to 2 cover the whole viewport; vertices 3 to 5 cover part of it, with an edge that
// crosses the image at a slant, so quads along it are partly covered (helper invocations).
const vec2 POSITIONS[6] = vec2[6](
    vec2(-1.0, -1.0), vec2(3.0, -1.0), vec2(-1.0, 3.0),
    vec2(-1.0, -1.0), vec2(1.9, -1.0), vec2(-1.0, 1.2));

void main() {
    gl_Position = vec4(POSITIONS[gl_VertexIndex], 0.0, 1.0);
}
