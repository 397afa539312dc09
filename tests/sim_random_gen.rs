//! A generator of random GLSL compute shaders for `sim_random.rs`: vote, partition and
//! partitioned ops at random depths of divergent control flow (nested `if`s on lane data, loops
//! with per-lane trip counts and `break`/`continue`, early `return`, calls, ballots made outside a
//! branch and used inside it).
//!
//! Every program is well defined at every subgroup size: shifts are masked, loops are bounded,
//! inputs are read at the invocation's own index, and a ballot is only used where every active lane
//! is a lane that was active when it was made (a scope it was made in, or one nested in it), so it
//! stays a valid partition of the active lanes (the bits of lanes now inactive are ignored by the
//! spec). Each invocation appends what it computes to its own row of the output (`emit`), so the
//! output says what every lane saw, in order.

/// Output words per invocation (`emit` stops writing past them but keeps counting).
pub const SLOTS: u32 = 48;

/// A seeded generator of random bits (splitmix64).
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x0005_1a7e_d0c5)
    }
    /// 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// True with probability `p` percent.
    pub fn chance(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
    /// One of `xs`.
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

/// The uint variables of every function body (`main` reads them from the input, functions from
/// their parameters).
const VARS: [&str; 4] = ["va", "vb", "vc", "vd"];

/// The partitioned operations (GLSL names) on `uint`.
const PART_OPS: [&str; 7] = ["Add", "Mul", "Min", "Max", "And", "Or", "Xor"];

/// What a statement may do where it is generated.
#[derive(Clone)]
struct Ctx {
    /// Nesting depth of control flow.
    depth: u32,
    /// Inside a loop (so `break`/`continue` are allowed).
    in_loop: bool,
    /// Ballot variables in scope.
    ballots: Vec<String>,
    /// In `main` (returns nothing) or a function (returns a uint).
    in_main: bool,
    /// Functions callable from here (index below the current one, so no recursion).
    callable: u32,
}

/// A random program's source and its shape.
pub struct Program {
    /// GLSL text.
    pub glsl: String,
    /// Counts of what it contains: (votes, partitions, partitioned ops, loops, ifs, calls).
    pub counts: Counts,
}

/// How many of each construct a program has.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counts {
    /// Vote ops (core and KHR).
    pub votes: u32,
    /// Partition ops.
    pub partitions: u32,
    /// Partitioned arithmetic ops.
    pub partitioned: u32,
    /// Loops.
    pub loops: u32,
    /// `if`s.
    pub ifs: u32,
    /// Function calls.
    pub calls: u32,
}

struct Gen {
    rng: Rng,
    names: u32,
    counts: Counts,
}

/// Generates the program of `seed`.
pub fn generate(seed: u64) -> Program {
    let mut g = Gen {
        rng: Rng::new(seed),
        names: 0,
        counts: Counts::default(),
    };
    let nfuncs = g.rng.below(3) as u32;
    let mut s = String::from(
        "#version 450\n\
         #extension GL_KHR_shader_subgroup_basic : require\n\
         #extension GL_KHR_shader_subgroup_vote : require\n\
         #extension GL_KHR_shader_subgroup_ballot : require\n\
         #extension GL_NV_shader_subgroup_partitioned : require\n\
         #extension GL_ARB_shader_group_vote : require\n\
         layout(local_size_x_id = 0) in;\n\
         layout(std430, set = 0, binding = 0) readonly buffer In { uint inp[]; };\n\
         layout(std430, set = 0, binding = 1) buffer Out { uint outp[]; };\n",
    );
    s.push_str(&format!(
        "const uint SLOTS = {SLOTS}u;\nuint n_out = 0u;\nuint gid = 0u;\n\
         void emit(uint v) {{ if (n_out < SLOTS) {{ outp[gid * SLOTS + n_out] = v; }} n_out++; }}\n"
    ));
    for f in 0..nfuncs {
        let ctx = Ctx {
            depth: 1,
            in_loop: false,
            ballots: vec!["bp".into()],
            in_main: false,
            callable: f,
        };
        s.push_str(&format!(
            "uint f{f}(uint va, uint vb, uvec4 bp) {{\n  uint vc = va ^ vb;\n  uint vd = vb + 1u;\n"
        ));
        s.push_str(&g.block(&ctx, 2));
        s.push_str("  return va ^ (vb << 1u) ^ vc ^ vd;\n}\n");
    }
    let ctx = Ctx {
        depth: 0,
        in_loop: false,
        ballots: vec!["b0".into()],
        in_main: true,
        callable: nfuncs,
    };
    s.push_str(
        "void main() {\n  gid = gl_GlobalInvocationID.x;\n  uint va = inp[gid];\n  \
         uint vb = va * 2654435761u + gl_SubgroupInvocationID;\n  uint vc = gid;\n  \
         uint vd = va >> 7u;\n  uvec4 b0 = subgroupPartitionNV(va & 3u);\n",
    );
    g.counts.partitions += 1;
    s.push_str(&g.block(&ctx, 1));
    s.push_str("  emit(va); emit(vb); emit(vc); emit(vd);\n}\n");
    Program {
        glsl: s,
        counts: g.counts,
    }
}

impl Gen {
    fn fresh(&mut self, prefix: &str) -> String {
        self.names += 1;
        format!("{prefix}{}", self.names)
    }

    fn var(&mut self) -> &'static str {
        VARS[self.rng.below(VARS.len() as u64) as usize]
    }

    /// A uint expression of lane data.
    fn expr(&mut self) -> String {
        let (a, b) = (self.var(), self.var());
        match self.rng.below(8) {
            0 => format!("{a} + {b}"),
            1 => format!("{a} * {}u", self.rng.below(7) + 1),
            2 => format!("{a} ^ ({b} >> {}u)", self.rng.below(31) + 1),
            3 => format!("({a} & {b}) | {}u", self.rng.below(16)),
            4 => format!("{a} - {b}"),
            5 => format!("{a} << ({b} & 31u)"),
            6 => format!("{a} + gl_SubgroupInvocationID"),
            _ => format!("{a} % ({b} | 1u)"),
        }
    }

    /// A bool condition on lane data (divergent).
    fn cond(&mut self) -> String {
        let (a, b) = (self.var(), self.var());
        match self.rng.below(5) {
            0 => format!("({a} & {}u) == {}u", 3, self.rng.below(4)),
            1 => format!("{a} > {b}"),
            2 => format!(
                "(gl_SubgroupInvocationID % {}u) == 0u",
                self.rng.below(4) + 2
            ),
            3 => format!("(({a} >> {}u) & 1u) != 0u", self.rng.below(16)),
            _ => format!("{a} < {}u", self.rng.next() as u32),
        }
    }

    /// A partition key: uint, bool or float (with +0.0/-0.0 and repeated values).
    fn key(&mut self) -> String {
        let a = self.var();
        match self.rng.below(5) {
            0 => format!("{a} & {}u", self.rng.pick(&[1u32, 3, 7, 15])),
            1 => format!("({a} & 1u) != 0u"),
            2 => format!("(({a} & 1u) == 0u) ? 0.0 : -0.0"),
            3 => format!("float({a} & 3u) - 1.5"),
            _ => format!("uvec2({a} & 1u, {a} & 2u)"),
        }
    }

    fn indent(depth: u32) -> String {
        "  ".repeat(depth as usize + 1)
    }

    /// A block of statements at `ctx.depth`.
    fn block(&mut self, ctx: &Ctx, min: u64) -> String {
        let mut ctx = ctx.clone();
        let n = min + self.rng.below(4);
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(&self.stmt(&mut ctx));
        }
        s
    }

    fn stmt(&mut self, ctx: &mut Ctx) -> String {
        let ind = Self::indent(ctx.depth);
        let nest = ctx.depth < 3;
        match self.rng.below(14) {
            0 | 1 => {
                let v = self.var();
                format!("{ind}{v} = {};\n", self.expr())
            }
            2 => {
                self.counts.votes += 1;
                let c = self.cond();
                let (a, b) = (self.var(), self.var());
                let vote = match self.rng.below(6) {
                    0 => format!("subgroupAll({c})"),
                    1 => format!("subgroupAny({c})"),
                    2 => format!("subgroupAllEqual({a} & 3u)"),
                    3 => format!("allInvocationsARB({c})"),
                    4 => format!("anyInvocationARB({c})"),
                    _ => format!("allInvocationsEqualARB(({b} & 1u) != 0u)"),
                };
                format!("{ind}emit(uint({vote}));\n")
            }
            3 => {
                // A ballot made here, usable here and in nested scopes.
                self.counts.partitions += 1;
                let b = self.fresh("bb");
                let key = self.key();
                let s = format!(
                    "{ind}uvec4 {b} = subgroupPartitionNV({key});\n{ind}emit({b}.x); emit({b}.y); emit({b}.z); emit({b}.w);\n"
                );
                ctx.ballots.push(b);
                s
            }
            4..=6 => {
                self.counts.partitioned += 1;
                let ballot = if self.rng.chance(25) {
                    self.counts.partitions += 1;
                    format!("subgroupPartitionNV({})", self.key())
                } else {
                    self.rng.pick(&ctx.ballots).clone()
                };
                let op = self.rng.pick(&PART_OPS);
                let mode = self.rng.pick(&["", "Inclusive", "Exclusive"]);
                let v = self.var();
                let dst = self.var();
                let arg = if *op == "Mul" {
                    format!("({v} & 3u)")
                } else {
                    v.to_owned()
                };
                format!("{ind}{dst} = subgroupPartitioned{mode}{op}NV({arg}, {ballot});\n{ind}emit({dst});\n")
            }
            7 | 8 if nest => {
                self.counts.ifs += 1;
                let c = self.cond();
                let mut inner = ctx.clone();
                inner.depth += 1;
                let then = self.block(&inner, 1);
                let els = if self.rng.chance(50) {
                    format!("{ind}}} else {{\n{}", self.block(&inner, 1))
                } else {
                    String::new()
                };
                format!("{ind}if ({c}) {{\n{then}{els}{ind}}}\n")
            }
            9 if nest => {
                self.counts.loops += 1;
                let i = self.fresh("i");
                let trip = format!("({} & {}u)", self.var(), self.rng.pick(&[1u32, 3, 7]));
                let mut inner = ctx.clone();
                inner.depth += 1;
                inner.in_loop = true;
                let body = self.block(&inner, 1);
                format!("{ind}for (uint {i} = 0u; {i} < {trip}; {i}++) {{\n{body}{ind}}}\n")
            }
            10 if ctx.in_loop => {
                let c = self.cond();
                let what = if self.rng.chance(50) {
                    "break"
                } else {
                    "continue"
                };
                format!("{ind}if ({c}) {{ emit(7u); {what}; }}\n")
            }
            11 if ctx.depth > 0 => {
                let c = self.cond();
                if ctx.in_main {
                    format!("{ind}if ({c}) {{ emit(va); return; }}\n")
                } else {
                    format!("{ind}if ({c}) {{ return va + vc; }}\n")
                }
            }
            12 if ctx.callable > 0 => {
                self.counts.calls += 1;
                let f = self.rng.below(u64::from(ctx.callable));
                let (dst, a, b) = (self.var(), self.var(), self.var());
                let ballot = self.rng.pick(&ctx.ballots).clone();
                format!("{ind}{dst} = f{f}({a}, {b}, {ballot});\n{ind}emit({dst});\n")
            }
            _ => {
                let v = self.var();
                format!("{ind}emit({v});\n")
            }
        }
    }
}
