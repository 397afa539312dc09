//! Which module-scope variables the module can never write through, decided once from its
//! instructions: a parallel run (`parallel.rs`) needs no read marks on a buffer no workgroup
//! writes (no conflict can arise there) and reads it as one slice (`overlay::Pages::frozen`).
//!
//! The analysis follows each variable's pointer through the instructions that only derive a
//! pointer from it (access chains, `OpCopyObject`) and lets it be used only where nothing is
//! written through it (the pointer of a load, an atomic load, `OpArrayLength`, the source of a
//! memory copy). Any other use (a store, an atomic, a call argument, a phi, a select, a
//! returned value, a stored value, a composite, an extended instruction's operand) counts as a
//! write to that variable: wherever the pointer goes from there, it is not followed. A pointer
//! made from anything but a variable, an access chain, a copy, a parameter, a call, a phi, a
//! select or `OpUndef` (a null or other constant pointer, a loaded one, a bitcast or converted
//! one) could point anywhere: then every variable counts as written.

use crate::translate::{IdKind, Program, Src};
use crate::types::Scalar;

/// Per module-scope variable (as `Program::globals`): true where no instruction can write
/// through a pointer into it.
pub fn never_written(p: &Program) -> Vec<bool> {
    use spirv::Op as O;
    let none = vec![false; p.globals.len()];
    let n = p.ids.len();
    // 1 + the variable each pointer id is derived from (0: none).
    let mut root = vec![0u32; n];
    // Ids whose pointer values come from where pointers legitimately come from.
    let mut made = vec![false; n];
    for (k, g) in p.globals.iter().enumerate() {
        if let Some(r) = root.get_mut(g.id as usize) {
            *r = k as u32 + 1;
            made[g.id as usize] = true;
        }
    }
    let derives = |op: Option<O>| {
        matches!(
            op,
            Some(
                O::AccessChain
                    | O::InBoundsAccessChain
                    | O::PtrAccessChain
                    | O::InBoundsPtrAccessChain
                    | O::CopyObject
            )
        )
    };
    for f in &p.funcs {
        for &id in &f.param_ids {
            if let Some(m) = made.get_mut(id as usize) {
                *m = true;
            }
        }
        for inst in &f.insts {
            let legit = derives(inst.decoded)
                || matches!(
                    inst.decoded,
                    Some(O::Variable | O::FunctionCall | O::Select | O::Undef)
                );
            if legit {
                if let Some(m) = made.get_mut(inst.id as usize) {
                    *m = true;
                }
            }
        }
    }
    // Derived pointers, to a fixed point (a function may be listed before the one whose
    // pointer it derives from is followed, and blocks need not be in order).
    loop {
        let mut changed = false;
        for inst in p.funcs.iter().flat_map(|f| &f.insts) {
            if !derives(inst.decoded) {
                continue;
            }
            let from = inst
                .args
                .first()
                .and_then(|&a| root.get(a as usize))
                .copied();
            if let (Some(r @ 1..), Some(to)) = (from, root.get_mut(inst.id as usize)) {
                if *to == 0 {
                    *to = r;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    // The phis' result registers (a phi is known by its register, not its id).
    let mut phi_regs = std::collections::HashSet::new();
    for b in p.funcs.iter().flat_map(|f| &f.blocks) {
        for phi in &b.phis {
            phi_regs.insert(phi.res);
        }
    }
    // Register of each pointer derived from a variable -> 1 + the variable.
    let mut root_of_reg = std::collections::HashMap::new();
    for (id, kind) in p.ids.iter().enumerate() {
        let IdKind::Value(src) = *kind else {
            continue;
        };
        let has_ptr = p
            .types
            .get(p.id_ty[id] as usize)
            .and_then(Option::as_ref)
            .is_some_and(|t| t.layout.iter().any(|&(_, s)| s == Scalar::Ptr));
        match src {
            Src::Reg(r) => {
                if root[id] != 0 {
                    root_of_reg.insert(r, root[id]);
                }
                if has_ptr && !made[id] && !phi_regs.contains(&r) {
                    return none;
                }
            }
            Src::Const(_) if has_ptr => return none,
            _ => {}
        }
    }
    let mut written = vec![false; p.globals.len()];
    for inst in p.funcs.iter().flat_map(|f| &f.insts) {
        for (k, &a) in inst.args.iter().enumerate() {
            let r = root.get(a as usize).copied().unwrap_or(0);
            if r == 0 {
                continue;
            }
            let reads_only = match k {
                0 => {
                    derives(inst.decoded)
                        || matches!(inst.decoded, Some(O::Load | O::AtomicLoad | O::ArrayLength))
                }
                1 => matches!(inst.decoded, Some(O::CopyMemory | O::CopyMemorySized)),
                _ => false,
            };
            if !reads_only {
                written[r as usize - 1] = true;
            }
        }
    }
    for b in p.funcs.iter().flat_map(|f| &f.blocks) {
        for phi in &b.phis {
            for (_, src) in &phi.incoming {
                if let Src::Reg(reg) = src {
                    if let Some(&r) = root_of_reg.get(reg) {
                        written[r as usize - 1] = true;
                    }
                }
            }
        }
    }
    written.iter().map(|w| !w).collect()
}

#[cfg(test)]
mod tests {
    /// A module with two buffers, `%v` (binding 0) and `%r` (binding 1), a function `%put`
    /// that stores its second parameter through its first, and `BODY` as the end of `main`
    /// (`%w` is the workgroup's x, `%val` the word `v[w]`, `%dst` and `%rdst` pointers to
    /// `v[w + 1]` and `r[w]`, `%lt` whether `w < 1`), `GLOBALS` after the constants.
    const MODULE: &str = r#"
               OpCapability Shader
               OpCapability VariablePointers
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %wgid
               OpExecutionMode %main LocalSize 4 1 1
               OpDecorate %wgid BuiltIn WorkgroupId
               OpDecorate %arr ArrayStride 4
               OpMemberDecorate %B 0 Offset 0
               OpDecorate %B Block
               OpDecorate %v DescriptorSet 0
               OpDecorate %v Binding 0
               OpDecorate %r DescriptorSet 0
               OpDecorate %r Binding 1
       %void = OpTypeVoid
       %fnty = OpTypeFunction %void
       %bool = OpTypeBool
       %uint = OpTypeInt 32 0
         %v3 = OpTypeVector %uint 3
        %pin = OpTypePointer Input %v3
       %wgid = OpVariable %pin Input
        %arr = OpTypeRuntimeArray %uint
          %B = OpTypeStruct %arr
         %pB = OpTypePointer StorageBuffer %B
         %pu = OpTypePointer StorageBuffer %uint
          %v = OpVariable %pB StorageBuffer
          %r = OpVariable %pB StorageBuffer
         %c0 = OpConstant %uint 0
         %c1 = OpConstant %uint 1
         %c3 = OpConstant %uint 3
GLOBALS
    %storety = OpTypeFunction %void %pu %uint
        %put = OpFunction %void None %storety
          %p = OpFunctionParameter %pu
          %x = OpFunctionParameter %uint
         %pl = OpLabel
               OpStore %p %x
               OpReturn
               OpFunctionEnd
       %main = OpFunction %void None %fnty
         %ml = OpLabel
         %id = OpLoad %v3 %wgid
          %w = OpCompositeExtract %uint %id 0
        %src = OpAccessChain %pu %v %c0 %w
        %val = OpLoad %uint %src
         %w1 = OpIAdd %uint %w %c1
        %dst = OpAccessChain %pu %v %c0 %w1
       %rdst = OpAccessChain %pu %r %c0 %w
         %lt = OpULessThan %bool %w %c1
BODY
               OpReturn
               OpFunctionEnd
"#;

    /// Per binding of the module with `body`: whether it is never written.
    fn never(body: &str) -> Vec<(u32, bool)> {
        never_with("", body)
    }

    /// [`never`] with `globals` declared after the constants.
    fn never_with(globals: &str, body: &str) -> Vec<(u32, bool)> {
        let text = MODULE.replace("GLOBALS", globals).replace("BODY", body);
        let words = spv_subgroup_tests::tools::assemble(&text, "vulkan1.1")
            .unwrap_or_else(|e| panic!("spirv-as: {e}\n{text}"));
        let m = crate::Module::new(&words).expect("translates");
        let p = &m.program;
        assert_eq!(p.never_written.len(), p.globals.len());
        p.globals
            .iter()
            .zip(&p.never_written)
            .filter_map(|(g, &n)| g.binding.map(|b| (b.1, n)))
            .collect()
    }

    #[test]
    fn a_buffer_only_loaded_from_is_never_written() {
        let body = "%len = OpArrayLength %uint %v 0\n%s = OpIAdd %uint %val %len\nOpStore %rdst %s";
        assert_eq!(never(body), [(0, true), (1, false)]);
    }

    #[test]
    fn a_store_through_a_function_parameter_writes_the_buffer_passed() {
        let body = "%s = OpIAdd %uint %val %c3\n%call = OpFunctionCall %void %put %dst %s";
        assert_eq!(never(body), [(0, false), (1, true)]);
    }

    #[test]
    fn a_store_through_a_copy_or_a_chain_of_chains_writes_the_buffer() {
        let body = "%cp = OpCopyObject %pu %dst\nOpStore %cp %val";
        assert_eq!(never(body), [(0, false), (1, true)]);
        let body = concat!(
            "%row = OpAccessChain %pB %r\n%e = OpAccessChain %pu %row %c0 %c1\n",
            "%cp = OpCopyObject %pu %e\nOpStore %cp %val"
        );
        assert_eq!(never(body), [(0, true), (1, false)]);
    }

    #[test]
    fn a_pointer_through_a_select_or_a_phi_counts_as_written() {
        let body = "%s = OpSelect %pu %lt %dst %rdst\n%y = OpLoad %uint %s\nOpStore %rdst %y";
        assert_eq!(never(body), [(0, false), (1, false)]);
        let body = concat!(
            "OpSelectionMerge %join None\nOpBranchConditional %lt %then %join\n",
            "%then = OpLabel\nOpBranch %join\n%join = OpLabel\n",
            "%ph = OpPhi %pu %src %ml %dst %then\n%y = OpLoad %uint %ph\nOpStore %rdst %y"
        );
        assert_eq!(never(body), [(0, false), (1, false)]);
    }

    #[test]
    fn an_atomic_or_a_memory_copy_into_the_buffer_writes_it() {
        let body = "%old = OpAtomicIAdd %uint %dst %c1 %c0 %c1";
        assert_eq!(never(body), [(0, false), (1, true)]);
        let body = "OpCopyMemory %rdst %src";
        assert_eq!(never(body), [(0, true), (1, false)]);
    }

    #[test]
    fn a_pointer_made_from_no_variable_makes_every_buffer_written() {
        // A null pointer (object 0, the first buffer, in the simulator) stored through: `%v`
        // is only loaded from by name, yet written.
        let null = "%null = OpConstantNull %pu";
        assert_eq!(
            never_with(null, "OpStore %null %val"),
            [(0, false), (1, false)]
        );
        let body = "%bits = OpConvertPtrToU %uint %src\n%q = OpBitcast %pu %bits\nOpStore %q %val";
        assert_eq!(never(body), [(0, false), (1, false)]);
    }
}
