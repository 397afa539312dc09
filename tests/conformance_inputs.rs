//! Input buffers of the conformance cases: control words, keys and values per slot, one key
//! pattern per workgroup (shared by the lavapipe harness and the simulator's).

use super::model::{self, Rng};
use super::shaders::{Case, Family};

/// Generates the input buffer of one dispatch of `groups` workgroups of `local` invocations.
pub fn gen_inputs(case: &Case, local: u32, seed: u64, groups: u32) -> Vec<u32> {
    let n = (groups * local) as usize;
    let l = &case.layout;
    let stride = case.in_stride();
    let mut inp = vec![0u32; n * stride];
    let mut rng = Rng::derive(&[seed, 0xc7]);
    for gid in 0..n {
        for c in 0..case.ctrl_words {
            inp[gid * stride + c] = rng.next() as u32;
        }
    }
    for slot in 0..l.slots {
        for w in 0..groups as usize {
            let mut r = Rng::derive(&[seed, w as u64, slot as u64, 0x6b]);
            let pattern = w + slot;
            let keys = l
                .key
                .map(|kt| model::gen_keys(kt, local as usize, pattern, &mut r));
            for i in 0..local as usize {
                let gid = w * local as usize + i;
                let mut words = Vec::new();
                if let (Some(kt), Some(keys)) = (l.key, &keys) {
                    kt.to_words(&keys[i], &mut words);
                }
                if let Some(vt) = l.value {
                    let v = match case.family {
                        Family::Vote | Family::CoreVote => {
                            let p = match pattern % 6 {
                                0 => true,
                                1 => false,
                                2 => r.below(2) == 0,
                                3 => r.below(10) != 0,
                                4 => r.below(10) == 0,
                                _ => gid.is_multiple_of(2),
                            };
                            vec![u64::from(p)]
                        }
                        _ => model::gen_value(vt, &mut r),
                    };
                    vt.to_words(&v, &mut words);
                }
                let base =
                    gid * stride + case.ctrl_words + slot * (l.key_words() + l.value_words());
                inp[base..base + words.len()].copy_from_slice(&words);
            }
        }
    }
    inp
}
