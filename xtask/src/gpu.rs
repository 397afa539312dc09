//! Scaffolding; its owner replaces it.

pub fn run(_: &[String]) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
