//! Shared helpers of the workspace test harnesses: finding and running the external SPIR-V tools
//! (`spirv-as`, `spirv-val`, `glslangValidator`) and failing with an install hint when one is missing.

pub mod example;
pub mod hlsl;
pub mod lavapipe;
pub mod naga;
pub mod tools;
