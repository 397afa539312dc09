//! libFuzzer entry point of the `validate` target: everything it checks is in
//! `spv_subgroup_fuzz::targets::validate` (shared with the corpus replay test).
#![no_main]
// `fuzz_target!` exports the `#[no_mangle]` function libFuzzer calls, which `unsafe_code` counts.
#![allow(unsafe_code)]

libfuzzer_sys::fuzz_target!(|data: &[u8]| spv_subgroup_fuzz::targets::validate(data));
