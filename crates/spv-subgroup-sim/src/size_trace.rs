//! Which instructions make a dispatch's results depend on the subgroup size: loads of the
//! built-ins that reveal it (`SubgroupSize`, `SubgroupLocalInvocationId`, `SubgroupId`,
//! `NumSubgroups`, the `Subgroup*Mask`s, directly or through an access chain) and every subgroup
//! instruction (which lanes share a subgroup decides its result). Marked once per dispatch when
//! [`crate::Dispatch::trace_size`] is set; the executor counts each marked instruction it runs.

use crate::translate::Program;

/// Per function, per instruction: what it reads that depends on the subgroup size, if anything.
pub type Marks = Vec<Vec<Option<String>>>;

/// The built-ins whose values depend on the subgroup size, by `spirv::BuiltIn` number.
fn size_builtin(b: u32) -> Option<&'static str> {
    use spirv::BuiltIn as B;
    Some(match B::from_u32(b)? {
        B::SubgroupSize => "SubgroupSize",
        B::SubgroupLocalInvocationId => "SubgroupLocalInvocationId",
        B::SubgroupId => "SubgroupId",
        B::NumSubgroups => "NumSubgroups",
        B::SubgroupEqMask => "SubgroupEqMask",
        B::SubgroupGeMask => "SubgroupGeMask",
        B::SubgroupGtMask => "SubgroupGtMask",
        B::SubgroupLeMask => "SubgroupLeMask",
        B::SubgroupLtMask => "SubgroupLtMask",
        _ => return None,
    })
}

/// Marks the size-revealing instructions of every function of `p`.
pub fn marks(p: &Program) -> Marks {
    use spirv::Op as O;
    // Pointer ids into a size-revealing built-in: the variables, then (to a fixed point, as a
    // chain may be defined in a function laid out after its use's function) access chains and
    // copies of them.
    let mut reveals: std::collections::BTreeMap<u32, &'static str> = p
        .globals
        .iter()
        .filter_map(|g| Some((g.id, size_builtin(g.builtin?)?)))
        .collect();
    loop {
        let before = reveals.len();
        for f in &p.funcs {
            for inst in &f.insts {
                let derived = matches!(
                    inst.decoded,
                    Some(O::AccessChain | O::InBoundsAccessChain | O::CopyObject)
                );
                if derived && inst.id != 0 && !reveals.contains_key(&inst.id) {
                    if let Some(name) = inst.args.first().and_then(|b| reveals.get(b)).copied() {
                        reveals.insert(inst.id, name);
                    }
                }
            }
        }
        if reveals.len() == before {
            break;
        }
    }
    p.funcs
        .iter()
        .map(|f| {
            f.insts
                .iter()
                .map(|inst| match inst.decoded {
                    Some(O::Load) => inst
                        .args
                        .first()
                        .and_then(|ptr| reveals.get(ptr))
                        .map(|b| format!("reads BuiltIn {b}")),
                    Some(op) if crate::opclass::is_group(op) => Some(format!(
                        "subgroup operation {}",
                        crate::error::op_name(inst.op)
                    )),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn masks_and_the_size_are_size_builtins_and_others_are_not() {
        use spirv::BuiltIn as B;
        for b in [
            B::SubgroupSize,
            B::SubgroupLtMask,
            B::SubgroupLocalInvocationId,
        ] {
            assert!(super::size_builtin(b as u32).is_some(), "{b:?}");
        }
        for b in [B::LocalInvocationId, B::GlobalInvocationId, B::WorkgroupId] {
            assert!(super::size_builtin(b as u32).is_none(), "{b:?}");
        }
    }
}
